"""AR trials from any phone: a web server beside the Seek node set (`cityseeker ar`, docs/ar.md).

web.py serves the page (static/) and its WebSocket and checks every message with core.ar;
bridge.py is the server's rclpy side (frames to camera_ingest, fixes to graph_localiser, the
need to the Seek action, the guidance back); serve.py is the process; command.py is the
command that checks the configuration, starts the node set with the server, and prints the URL."""
