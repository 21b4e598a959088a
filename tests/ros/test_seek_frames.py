"""The frames node in the node set `cityseeker seek` starts (ros/node_sets.seek_nodes), over real
DDS on loopback: during a Seek of the simulated walker on Monaco, map -> odom -> base_link read from
/tf (composed as tests/ros/frames_probe.py composes it) puts the vehicle where its fix says, at every
fix the frames node answered, and on each graph node of the Seek's path, within 0.5 m."""
from __future__ import annotations

import json
import math
import subprocess

import pytest

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.frames.geo_origin import MapFrame
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros import node_sets
from cityseeker_ros.ros.runner import Runner
from tests.ros.test_frames import TF2_MSGS, TOLERANCE_M
from tests.ros.test_runner import REPO
from tests.ros.test_seek_action import seek_run

MAX_STEPS = 3


@pytest.mark.skipif(not TF2_MSGS, reason="tf2_msgs is not installed (pip installs vendor/tf2_msgs; this ROS 2 "
                    "install lacks it)")
def test_the_vehicle_is_where_the_walker_is_in_map_during_a_seek(monaco_dir, ros_env, tmp_path):
    world = load_dataset(monaco_dir)[0]
    frame = MapFrame.of_graph(world.graph)
    run = seek_run(monaco_dir, tmp_path / "run", "forward", 200)  # forward never stops: MAX_STEPS moves
    nodes = node_sets.seek_nodes(run)
    frames = next(n for n in nodes if n.name == node_sets.FRAMES)
    assert frames.params["source"] == "vehicle" and frames.params["vehicle_node"] == f"/{node_sets.BRIDGE}"

    plan, out = tmp_path / "plan.json", tmp_path / "probe_out.json"
    plan.write_text(json.dumps({"need": "I am thirsty", "max_steps": MAX_STEPS, "timeout_s": 90}))
    with Runner(nodes, tmp_path / "run" / "ros", ros_env, monitor=False) as runner:
        runner.start()
        with open(tmp_path / "probe.log", "w") as log:
            probe = ros.spawn(ros.python_module_command("tests.ros.seek_frames_probe", str(plan), str(out)),
                              ros_env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            runner.watch(lambda: probe.poll() is not None, timeout_s=300)
        finally:
            ros.stop(probe)
    report = json.loads(out.read_text())
    node_logs = "".join(f"\n--- {p.name} ---\n{p.read_text()[-2000:]}" for p in sorted(runner.logs.glob("*.log")))
    assert "error" not in report, report.get("error", "") + (tmp_path / "probe.log").read_text()[-3000:] + node_logs
    assert report["tf"] and {"map", "odom", "base_link"} <= set(report["frames"]), report["frames"]

    def enu(fix: list[float]) -> tuple[float, float]:
        return frame.to_enu(fix[1], fix[2])[:2]

    def node_xy(node_id: str) -> tuple[float, float]:
        node = world.graph.nodes[node_id]
        return frame.to_enu(node.lat, node.lon)[:2]

    result = report["result"]
    path = result["path"]
    assert result["status"] == "succeeded" and result["outcome"] == "budget", result
    assert len(path) == MAX_STEPS + 1 and len(set(path)) >= 2, path  # it moved
    # before the goal and after the result the walker stands on the path's first and last node
    for when, node_id in (("before", path[0]), ("after", path[-1])):
        stood = report[when]
        assert math.dist(enu(stood["fix"]), node_xy(node_id)) < TOLERANCE_M, (when, stood, node_id)
        assert math.dist(stood["tf_xy"], node_xy(node_id)) < TOLERANCE_M, (when, stood, node_id)
    # every fix the frames node answered on /tf: map -> base_link of that stamp is the fix
    in_map = {int(k): v for k, v in report["in_map"].items()}
    matched = [(fix, in_map[fix[0]]) for fix in report["fixes"] if fix[0] in in_map]
    assert len(matched) >= len(path), (len(matched), len(report["fixes"]))
    far = [(fix, xy, math.dist(enu(fix), xy)) for fix, xy in matched if math.dist(enu(fix), xy) >= TOLERANCE_M]
    assert far == [], far[:5]
    # and /tf went through each node of the path (the walker teleports from node to node)
    for node_id in path:
        nearest = min(math.dist(xy, node_xy(node_id)) for _, xy in matched)
        assert nearest < TOLERANCE_M, (node_id, nearest)
    print(f"\nseek frames: {len(matched)} fixes of {len(report['fixes'])} matched on /tf over {len(path)} nodes, "
          f"max error {max(math.dist(enu(f), xy) for f, xy in matched):.3f} m")
