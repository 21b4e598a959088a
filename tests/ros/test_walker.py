"""The walker node (nodes/walker.py): `cityseeker run camera --walker sim` walks the tasks with
no hardware (the simulated walker publishes the fixes and follows the supervisor's goals) and
scores like the in-process benchmark; a bad start parameter stops the node with one line."""
from __future__ import annotations

import subprocess
import sys

from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros.runner import CONFIG_ERROR_EXIT
from tests.ros.test_live import COMPARED
from tests.ros.test_runner import REPO, in_process, logs, records


def test_run_camera_with_the_simulated_walker_scores_like_the_benchmark(monaco_dir, ros_domain, tmp_path):
    flags = ("--data", str(monaco_dir), "--policy", "random", "--limit", "2", "--max-steps", "5")
    in_process(tmp_path / "cli", *flags)
    out = tmp_path / "ros"
    result = subprocess.run([sys.executable, "-m", "cityseeker_ros.cli", "run", "camera", *flags, "--source", "replay",
                             "--source-param", "views=rendered", "--source-param",
                             'view_params={"width": 32, "height": 24}', "--walker", "sim", "--out", str(out),
                             "--domain-id", str(ros_domain), "--timeout", "200"],
                            cwd=REPO, capture_output=True, text=True, timeout=260)
    assert result.returncode == 0, result.stdout + result.stderr + logs(out)
    got, expected = records(out), records(tmp_path / "cli")
    assert [{k: r[k] for k in COMPARED} for r in got] == [{k: r[k] for k in COMPARED} for r in expected]
    assert "walking from" in (out / "ros" / "walker.log").read_text()


def test_a_bad_start_is_named(ros_env, tmp_path, monaco_dir):
    for params, named in ((("-p", "start:=north"), "parameter start: expected \"lat,lon\""),
                          (("-p", f"data:={monaco_dir}", "-p", "start_node:=nowhere"),
                           "parameter start_node: 'nowhere' is not a node")):
        done = subprocess.run(ros.python_module_command("cityseeker_ros.nodes.walker", "--ros-args", *params),
                              env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert done.returncode == CONFIG_ERROR_EXIT and named in done.stdout + done.stderr, done.stderr
