"""What every node does the same way: its console entry point and its diagnostics message."""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.logging import get_logger
from rclpy.node import Node
from std_msgs.msg import Header

from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError
from cityseeker_ros.core.infra.redact import redact_text
from cityseeker_ros.ros import convert
from cityseeker_ros.ros.runner import CONFIG_ERROR_EXIT, EXIT_REASON_ENV


def spin(make_node: Callable[[], Node], name: str, args: Any = None) -> None:
    """init, spin, destroy, shutdown. A node that cannot start for a configuration reason (bad
    parameters or data when made, or later through its `fatal` future: see `spin_nodes`) exits
    with CONFIG_ERROR_EXIT and one line."""
    rclpy.init(args=args)
    node = None
    try:
        node = make_node()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        spin_nodes(executor, [node])
    except CitySeekerError as exc:
        exit_config_error(name, exc)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


def spin_nodes(executor: Executor, nodes: Sequence[Node]) -> None:
    """Spin until shutdown, or until a node reports a configuration error it cannot recover from
    by completing its `fatal` future (an rclpy Future holding the message; the decision node's
    configure does): that is raised as ConfigError. A process stays up only while its nodes can
    work, so a runner or launch file sees the failure as the process's exit."""
    fatal = [(n, n.fatal) for n in nodes if getattr(n, "fatal", None) is not None]
    while executor.context.ok() and not any(f.done() for _, f in fatal):
        executor.spin_once()
    for node, future in fatal:
        if future.done():  # one process, several nodes: say which
            raise ConfigError(f"{node.get_name()}: {future.result()}" if len(nodes) > 1 else str(future.result()))


def exit_config_error(name: str, exc: BaseException) -> None:
    """Log the error as one line, write it where the runner reads it, exit CONFIG_ERROR_EXIT."""
    line = redact_text(" ".join(str(exc).split()))
    get_logger(name).error(line)
    reason = os.environ.get(EXIT_REASON_ENV)
    if reason:
        with contextlib.suppress(OSError):
            Path(reason).write_text(line + "\n", encoding="utf-8")
    sys.exit(CONFIG_ERROR_EXIT)


def publish_diagnostics(node: Node, publisher: Any, what: str, level: str, message: str,
                        values: dict[str, Any]) -> None:
    """One DiagnosticStatus named after the node, stamped now."""
    msg = DiagnosticArray(header=Header(stamp=node.get_clock().now().to_msg()))
    msg.status = [convert.diagnostic_status(f"{node.get_fully_qualified_name()}: {what}", level, message, values)]
    publisher.publish(msg)
