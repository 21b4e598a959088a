"""Browser pages beside a node set: the AR phone page (`cityseeker ar`, docs/ar.md) and the
operator console (docs/operator.md), served by one site (site.py: one token gate, one TLS
context, one process).

web.py serves the phone page (static/) and its WebSocket and checks every message with core.ar;
console_web.py serves the console (static/console.*), its map and views, and its WebSocket, and
checks every command with core.console; bridge.py and console_bridge.py are their rclpy sides
(the phone's frames, fixes and need in, the guidance out; the operator's commands to the
services and topics the CLI uses, the stack's state out); serve.py is the process; command.py is
`cityseeker ar`, and console_process.py adds the console to `cityseeker seek` and `cityseeker
run camera|vehicle` (--console)."""
