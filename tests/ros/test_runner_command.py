"""A ROS run records the user's command in config.json, as `cityseeker benchmark` does, not the
command line the runner started the evaluator node with."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_ros_run_records_the_users_command(tiny_city, ros_domain, tmp_path):
    out = tmp_path / "out"
    argv = ["run", "benchmark", "--data", str(tiny_city), "--policy", "random", "--max-steps", "2",
            "--view-param", "token=SECRET-0c1d", "--out", str(out), "--single-process",
            "--domain-id", str(ros_domain), "--timeout", "120"]
    result = subprocess.run([sys.executable, "-m", "cityseeker_ros.cli", *argv], cwd=REPO, capture_output=True,
                            text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    config, summary = (json.loads((out / name).read_text()) for name in ("config.json", "summary.json"))
    for doc in (config, summary["config"]):
        command = doc["command"]
        assert command.endswith(" ".join(argv).replace("SECRET-0c1d", "***")), command
        assert "--ros-args" not in command and not command.startswith("evaluator")

    # Run again: a finished run says so and starts nothing (it once started the node set, which
    # was interrupted mid-import, and printed a traceback).
    logs = sorted(p.name for p in (out / "ros").iterdir())
    again = subprocess.run([sys.executable, "-m", "cityseeker_ros.cli", *argv], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.startswith("nothing to run: all 2 tasks are in "), again.stdout
    assert "Traceback" not in again.stderr and "tasks to run" not in again.stdout, again.stderr
    assert sorted(p.name for p in (out / "ros").iterdir()) == logs  # no process was started
    assert json.loads((out / "summary.json").read_text()) == summary
