"""rosbag2 record, play and evaluation with the `rosbags` library (no rosbag2_py on PyPI).

`storage`, `topics` and `evaluate` import no rclpy: evaluation works on a bag file alone.
`recorder` and `player` are ROS node processes (`python -m cityseeker_ros.bag.recorder|player`).
"""
