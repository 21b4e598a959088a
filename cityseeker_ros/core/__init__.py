"""The pure-Python core. Nothing under this package may import rclpy."""
