"""Node tests reuse the ROS fixtures: a leased ROS_DOMAIN_ID and child processes stopped by PID.
The pytest process never imports rclpy or the generated classes (tests/ros/conftest.py says why)."""
from tests.ros.conftest import (  # noqa: F401
    _ros_installed,
    pytest_runtest_makereport,
    ros_domain,
    ros_env,
    ros_processes,
)
