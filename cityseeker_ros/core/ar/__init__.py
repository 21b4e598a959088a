"""AR trials from a phone's browser, without ROS: the messages between the browser pages and the
server (protocol.py, shared with the operator console's commands), the one-time token (token.py)
and a trial's state: what is counted, dropped and waited for (session.py). The web server
(cityseeker_ros/ar/) moves them to and from ROS."""
