"""Launch actions from the node-set description: what launch/*.launch.py return.

A launch file declares its run kind's settings as launch arguments and, once they are known
(an OpaqueFunction), turns them into a RunConfig and `node_sets.nodes(run)` into Node actions:
the node set `cityseeker run KIND` starts, with the same parameters and remappings. `launch`
and `launch_ros` are imported only when called: they exist on a ROS 2 install, not on PyPI.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from cityseeker_ros.ros import node_sets, run_config, secret_params
from cityseeker_ros.ros.env import DDS_ENV, MALLOC_ENV, PACKAGE, ros_env
from cityseeker_ros.ros.runner import NodeSpec


def arguments(kind: str) -> list[Any]:
    """A DeclareLaunchArgument per setting of `kind`; required ones have no default."""
    from launch.actions import DeclareLaunchArgument

    return [DeclareLaunchArgument(name, description=doc) if default is None
            else DeclareLaunchArgument(name, default_value=default, description=doc)
            for name, default, doc in run_config.launch_arguments(kind)]


def node_set(kind: str, context: Any) -> list[NodeSpec]:
    """The node set for the launch arguments in `context` (a LaunchContext). An unknown argument
    or a bad value stops the launch with a line naming it."""
    return node_sets.nodes(run_config.from_launch(kind, dict(context.launch_configurations)))


def process_env(secrets: Mapping[str, Any], base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What a launched process adds to the launch's environment: what `cityseeker run` gives its
    processes (ros_env: Fast DDS with the project's profile, bound to loopback unless the network
    switch is on; the heap settings, the user's values winning) and the node's credentials."""
    env = ros_env(base=base)
    added = {k: env[k] for k in DDS_ENV if k in env}
    added.update({k: v for k, v in MALLOC_ENV.items() if k not in base})
    return {**added, **secret_params.environment(secrets)}


def action(spec: NodeSpec) -> Any:
    """A launch_ros Node for a node, an ExecuteProcess for a tool process (bag player, recorder).
    Parameters hold credentials masked; the real ones go in the process's environment."""
    public, secrets = secret_params.split(spec.params)
    env = process_env(secrets)
    if spec.argv is not None:
        from launch.actions import ExecuteProcess

        return ExecuteProcess(cmd=spec.command(), name=spec.name, output="screen", additional_env=env)
    from launch_ros.actions import Node

    return Node(package=PACKAGE, executable=spec.executable, name=spec.name,
                parameters=[str(spec.defaults_file), {k: _value(v) for k, v in public.items()}],
                remappings=list(spec.remaps), respawn=spec.respawn, output="screen", additional_env=env)


def _value(value: Any) -> Any:
    """Strings stay strings: launch_ros would otherwise read '[]' or '1' as YAML (a list, an int)."""
    if isinstance(value, str):
        from launch_ros.parameter_descriptions import ParameterValue

        return ParameterValue(value, value_type=str)
    return value
