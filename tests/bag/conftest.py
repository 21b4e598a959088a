"""Bag tests reuse the ROS fixtures: a leased ROS_DOMAIN_ID and child processes stopped by PID.
Tests that need no graph (storage, evaluation) do not use them and need no ROS wheels."""
from tests.ros.conftest import pytest_runtest_makereport, ros_domain, ros_env, ros_processes  # noqa: F401
