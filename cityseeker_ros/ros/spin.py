"""How every ROS process of the package starts and stops: rclpy initialised, its nodes spun on one
single-threaded executor, then destroyed and rclpy shut down, however it ends. Ctrl-C and an
external shutdown end it quietly; a configuration error (bad parameters or data) ends it with
one line and CONFIG_ERROR_EXIT, which a runner reads as a refusal to start rather than a crash
to restart. The nodes, the single-process runner and the bag tools all end the same way."""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.logging import get_logger
from rclpy.node import Node

from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError
from cityseeker_ros.core.infra.redact import redact_text
from cityseeker_ros.ros.runner import CONFIG_ERROR_EXIT, EXIT_REASON_ENV


@contextlib.contextmanager
def ros_process(name: str, args: Any = None, *, exit_on_config_error: bool = True) -> Iterator[list[Node]]:
    """rclpy from init to shutdown around the block; the nodes added to the list it gives are
    destroyed, last first, as it ends. `name` names the process in a configuration error's line;
    a command that reports its own errors (the bag tools) passes `exit_on_config_error=False`."""
    rclpy.init(args=args)
    nodes: list[Node] = []
    try:
        yield nodes
    except CitySeekerError as exc:
        if not exit_on_config_error:
            raise
        _exit_config_error(name, exc)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        for node in reversed(nodes):
            node.destroy_node()
        rclpy.try_shutdown()


def spin(make_node: Callable[[], Node], name: str, args: Any = None) -> None:
    """A node's whole process (its console entry point): init, spin, destroy, shutdown."""
    with ros_process(name, args) as nodes:
        nodes.append(make_node())
        spin_nodes(nodes)


def spin_nodes(nodes: Sequence[Node]) -> None:
    """Spin until shutdown, or until a node reports a configuration error it cannot recover from
    by completing its `fatal` future (an rclpy Future holding the message; the decision node's
    configure does): that is raised as ConfigError. A process stays up only while its nodes can
    work, so a runner or launch file sees the failure as the process's exit."""
    executor = SingleThreadedExecutor()
    for node in nodes:
        executor.add_node(node)
    fatal = [(n, n.fatal) for n in nodes if getattr(n, "fatal", None) is not None]
    while executor.context.ok() and not any(f.done() for _, f in fatal):
        executor.spin_once()
    for node, future in fatal:
        if future.done():  # one process, several nodes: say which
            raise ConfigError(f"{node.get_name()}: {future.result()}" if len(nodes) > 1 else str(future.result()))


def _exit_config_error(name: str, exc: BaseException) -> None:
    """Log the error as one line, write it where the runner reads it, exit CONFIG_ERROR_EXIT."""
    line = redact_text(" ".join(str(exc).split()))
    get_logger(name).error(line)
    reason = os.environ.get(EXIT_REASON_ENV)
    if reason:
        with contextlib.suppress(OSError):
            Path(reason).write_text(line + "\n", encoding="utf-8")
    sys.exit(CONFIG_ERROR_EXIT)
