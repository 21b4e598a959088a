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

from rclpy.node import Node

from cityseeker_ros.core.infra.errors import CitySeekerError
from cityseeker_ros.ros.spin import ros_process, spin_nodes


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
    with ros_process("single_process") as nodes:
        for entry in spec:
            nodes.append(node_class(entry["module"])(cli_args=entry["args"], use_global_arguments=False))
        spin_nodes(nodes)  # until shutdown or a node's configuration error


if __name__ == "__main__":
    main()
