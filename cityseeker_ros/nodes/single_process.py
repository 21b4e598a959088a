"""All of a run's nodes in one process on one single-threaded executor:
`python -m cityseeker_ros.nodes.single_process SPEC.json` (written by the runner: name, module and
ROS arguments per node). Useful where processes are expensive (an embedded board) and to show
that no node needs a thread of its own: the decision node decides on its worker thread and
hands back through a guard condition, so callbacks never starve."""
from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from cityseeker_ros.core.infra.errors import CitySeekerError
from cityseeker_ros.nodes.common import exit_config_error, spin_nodes


def node_class(module_name: str) -> type[Node]:
    """The one rclpy node class a node module defines."""
    module = importlib.import_module(module_name)
    classes = [v for v in vars(module).values()
               if isinstance(v, type) and issubclass(v, Node) and v.__module__ == module.__name__]
    if len(classes) != 1:
        raise CitySeekerError(f"{module_name}: expected one node class, found {len(classes)}")
    return classes[0]


def main(argv: Any = None) -> None:
    spec = json.loads(open((argv or sys.argv)[1]).read())
    rclpy.init()
    executor = SingleThreadedExecutor()
    nodes: list[Node] = []
    try:
        for entry in spec:
            node = node_class(entry["module"])(cli_args=entry["args"], use_global_arguments=False)
            nodes.append(node)
            executor.add_node(node)
        spin_nodes(executor, nodes)  # until shutdown or a node's configuration error
    except CitySeekerError as exc:
        exit_config_error("single_process", exc)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        for node in reversed(nodes):
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
