"""ROS 2 glue: the process environment, parameters, the one run configuration, message records
and conversions, QoS, bag storage, and the runner. Only `qos`, `spin` and `decide_client`
import rclpy (tests/ros/test_static.py keeps that list); the nodes in `cityseeker_ros.nodes`
and the bag tools use this package, and the core never imports it."""
