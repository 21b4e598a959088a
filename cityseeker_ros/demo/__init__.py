"""Whole applications built on the core API, runnable without ROS (see examples/)."""
