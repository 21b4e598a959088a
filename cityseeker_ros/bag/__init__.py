"""rosbag2 record, play and evaluation with the `rosbags` library (no rosbag2_py on PyPI).

`evaluate` imports no rclpy: evaluation works on a bag file alone (its storage, topic table and
records live in ros/bag_*.py, which the runner uses too). `recorder` and `player` are ROS node
processes (`python -m cityseeker_ros.bag.recorder|player`).
"""
