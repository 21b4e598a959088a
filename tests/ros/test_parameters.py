"""A node refuses a parameter it does not declare (a typo in a params file or a `-p` that rclpy
would ignore silently) at start-up, with one line listing the ones it knows."""
from __future__ import annotations

import pytest

from cityseeker_ros.ros.parameters import NODES
from cityseeker_ros.ros.runner import CONFIG_ERROR_EXIT


@pytest.mark.parametrize("node, typo", [("graph_localiser", "snap_radius"), ("supervisor", "dtw_threshold")])
def test_a_node_given_an_unknown_parameter_exits_naming_it_and_the_known(ros_processes, node, typo):
    process = ros_processes.node(f"cityseeker_ros.nodes.{node}", "-p", f"{typo}:=30")
    assert process.wait(timeout=60) == CONFIG_ERROR_EXIT
    log = (ros_processes.logs / f"{node}.log").read_text()
    known = ", ".join(s.name for s in NODES[node])
    assert f"{node}: unknown parameter(s) {typo}; known: {known}" in log, log
