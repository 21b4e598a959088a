"""The operator console, without ROS or a web server: what the stack reports (events.py), the
one state record the page draws, built from those events and stale after a second of silence
(state.py), the operator's commands checked and counted (session.py; parsed by core.ar.protocol,
the module the phone page uses too) and the offline map of a world (world_map.py). The server
(cityseeker_ros/ar/console_web.py) moves them to and from the page."""
