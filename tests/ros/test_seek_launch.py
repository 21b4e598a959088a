"""launch/seek.launch.py starts the node set `cityseeker seek` starts (ros/node_sets.seek_nodes,
placed by ros/launcher.plan_seek): the camera run's nodes with the supervisor in mode seek, no
evaluator, and with walker:=sim the simulated walker; evaluated with tests/test_launch.py's fake
of launch."""
from __future__ import annotations

import pytest

from cityseeker_ros.cli import build_parser, seek_run_config
from cityseeker_ros.ros.launcher import SeekPlan, plan_seek
from tests.test_launch import LAUNCH, differences, launched, runner_started
from tests.test_launch import fake_launch as fake_launch  # the fixture: launch and launch_ros faked


@pytest.mark.usefixtures("fake_launch")
def test_seek_launch_starts_the_seek_commands_node_set(monaco_dir, tmp_path):
    d, o = str(monaco_dir), str(tmp_path / "out")
    launch = launched(LAUNCH / "seek.launch.py", {"data": d, "out": o, "policy": "ocr-embed", "source": "replay",
                                                  "walker": "sim", "max_steps": "12"})
    args = build_parser().parse_args(["seek", "I am thirsty", "--world", d, "--out", o, "--policy", "ocr-embed",
                                      "--source", "replay", "--walker", "sim", "--max-steps", "12"])
    plan = plan_seek(seek_run_config(args), args.need, max_steps=args.max_steps)
    assert isinstance(plan, SeekPlan), plan
    runner = runner_started(plan.nodes)
    assert differences(launch, runner) == []
    assert [s.name for s in launch] == ["vehicle_bridge", "graph_localiser", "camera_ingest", "decision", "supervisor",
                                        "frames"]
    frames = dict(next(s for s in launch if s.name == "frames").params)
    assert frames["source"] == "vehicle" and frames["vehicle_node"] == "/vehicle_bridge"
    supervisor = dict(next(s for s in launch if s.name == "supervisor").params)
    assert supervisor["mode"] == "seek"
