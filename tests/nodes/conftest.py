"""Node tests reuse the ROS fixtures: a leased ROS_DOMAIN_ID, and nodes built in a child process
(the pytest process never imports rclpy: tests/ros/conftest.py says why)."""
from tests.ros.conftest import (  # noqa: F401
    _ros_installed,
    pytest_runtest_makereport,
    ros_domain,
    ros_env,
)
