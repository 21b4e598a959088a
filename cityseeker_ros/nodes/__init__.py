"""Thin rclpy nodes, one class per file; each wraps one core object and converts messages."""
