"""What every node does the same way: its console entry point and its diagnostics message."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import ExternalShutdownException
from rclpy.logging import get_logger
from rclpy.node import Node
from std_msgs.msg import Header

from cityseeker_ros.core.errors import CitySeekerError
from cityseeker_ros.ros import convert


def spin(make_node: Callable[[], Node], name: str, args: Any = None) -> None:
    """init, spin, destroy, shutdown; bad parameters or data exit with code 2 and one line."""
    rclpy.init(args=args)
    node = None
    try:
        node = make_node()
        rclpy.spin(node)
    except CitySeekerError as exc:
        get_logger(name).error(str(exc))
        sys.exit(2)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


def publish_diagnostics(node: Node, publisher: Any, what: str, level: str, message: str,
                        values: dict[str, Any]) -> None:
    """One DiagnosticStatus named after the node, stamped now."""
    msg = DiagnosticArray(header=Header(stamp=node.get_clock().now().to_msg()))
    msg.status = [convert.diagnostic_status(f"{node.get_fully_qualified_name()}: {what}", level, message, values)]
    publisher.publish(msg)
