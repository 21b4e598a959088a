"""What every node reports the same way: its diagnostics message. (How a node's process starts
and stops is ros/spin.py.)"""
from __future__ import annotations

from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from std_msgs.msg import Header

from cityseeker_ros.ros import convert


def publish_diagnostics(node: Node, publisher: Any, what: str, level: str, message: str,
                        values: dict[str, Any]) -> None:
    """One DiagnosticStatus named after the node, stamped now."""
    msg = DiagnosticArray(header=Header(stamp=node.get_clock().now().to_msg()))
    msg.status = [convert.diagnostic_status(f"{node.get_fully_qualified_name()}: {what}", level, message, values)]
    publisher.publish(msg)
