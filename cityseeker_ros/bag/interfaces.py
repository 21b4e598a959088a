"""Moved to ros/bag_interfaces.py (bags are read in the ROS layer too); `share_dir` stays
importable here only until tests/interfaces/test_types.py imports it from there. Then delete
this module."""
from cityseeker_ros.ros.bag_interfaces import share_dir as share_dir
