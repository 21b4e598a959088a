"""`cityseeker run camera`: a camera and a GNSS receiver on a walking user, over real DDS on
loopback. graph_localiser snaps the fixes, camera_ingest cuts one view per walkable direction
at each node reached (the "replay" frame source renders them: a synthetic camera), the
supervisor in live mode turns each decision into a motion goal and AR guidance, and a walker
process goes where the goals say. The walked paths are those of the in-process benchmark."""
from __future__ import annotations

import json
import subprocess
import sys

from cityseeker_ros.core.datasets import load_dataset
from tests.ros.test_runner import REPO, in_process, logs, records

COMPARED = ("episode_id", "seed", "path", "actions", "end_reason", "steps", "metrics")


def test_a_walked_camera_run_follows_the_guidance_and_scores_like_the_benchmark(monaco_dir, ros_domain, ros_env,
                                                                                tmp_path, ros_processes):
    flags = ("--data", str(monaco_dir), "--policy", "random", "--limit", "2", "--max-steps", "6")
    in_process(tmp_path / "cli", *flags)
    start = load_dataset(monaco_dir)[0].episodes[0]
    world = load_dataset(monaco_dir)[0]
    node = world.graph.nodes[start.start]
    plan, report = tmp_path / "walk.json", tmp_path / "walked.json"
    plan.write_text(json.dumps({"start": [node.lat, node.lon], "timeout_s": 200}))
    walker = ros_processes._start("walker", [sys.executable, "-m", "tests.ros.walker_driver", str(plan), str(report)])
    out = tmp_path / "ros"
    result = subprocess.run([sys.executable, "-m", "cityseeker_ros.cli", "run", "camera", *flags, "--source", "replay",
                             "--source-param", "views=rendered", "--fix-topic", "/test/fix", "--out", str(out),
                             "--domain-id", str(ros_domain), "--timeout", "200"],
                            cwd=REPO, capture_output=True, text=True, timeout=260)
    assert result.returncode == 0, result.stdout + result.stderr + logs(out)
    walker.wait(60)
    walked = json.loads(report.read_text())
    got, expected = records(out), records(tmp_path / "cli")
    assert [{k: r[k] for k in COMPARED} for r in got] == [{k: r[k] for k in COMPARED} for r in expected], (
        json.dumps(walked["commands"])[-3000:] + logs(out))
    moves = [g for g in walked["guidance"] if g["action"] == "move"]
    assert moves and all(g["next_node"] in world.graph.nodes and g["distance_m"] > 0 for g in moves)
    assert all(g["relative_deg"] is None or -180 <= g["relative_deg"] <= 180 for g in moves)
    assert {c["command"]["type"] for c in walked["commands"]} >= {"goal"}
