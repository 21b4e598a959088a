"""`cityseeker seek` as a new user runs it, over real DDS on loopback: where the simulated walker
starts (--start), the result line in words, and the temporary node-log folder (none left behind
unless the run ended in an error, exit 2, when it is kept and named). Each command runs with its
own TMPDIR, so the /tmp/cityseeker-seek-* folders it leaves can be counted without racing other
tests; the refusals made before anything starts are tested in tests/test_cli.py."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cityseeker_ros.core.datasets import load_dataset
from tests.ros.test_runner import REPO

TINY_VIEWS = ["--source-param", "views=rendered", "--source-param", 'view_params={"width": 32, "height": 24}']
BUDGET_LINE = re.compile(r"^result: budget spent after 3 steps at (n\d+) \((\d+\.\d) m walked\): the need "
                         r"'I am thirsty' was not satisfied within the budget of 3 steps$")


def seek(tmp: Path, domain: int, *argv: str, timeout_s: float = 260, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """`cityseeker seek ARGV` with TMPDIR=tmp."""
    tmp.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "cityseeker_ros", "seek", *argv, "--domain-id", str(domain)],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, "TMPDIR": str(tmp)})


@pytest.mark.parametrize("where", ["node", "position"])
def test_a_seek_starts_where_asked_says_how_it_ended_and_leaves_no_folder(monaco_dir, ros_domain, tmp_path, where):
    """Before, every run left a /tmp/cityseeker-seek-* folder, the walker always started where the
    world's first task starts, the result read 'budget (succeeded) at ...: ... was not satisfied',
    and the vehicle bridge kept its e-stop latch in ./ros/ of the folder the command ran in (after
    one e-stop, every later Seek from there started latched)."""
    node = load_dataset(monaco_dir)[0].graph.nodes["n00042"]
    start = "n00042" if where == "node" else f"{node.lat},{node.lon}"
    tmp, result, cwd = tmp_path / "tmp", tmp_path / "result.json", tmp_path / "cwd"
    cwd.mkdir()
    done = seek(tmp, ros_domain, "I am thirsty", "--world", str(monaco_dir), "--policy", "random", "--max-steps", "3",
                "--start", start, *TINY_VIEWS, "--result", str(result), "--timeout", "200", cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    print(f"\n{done.stdout}")
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ROS_DOMAIN_ID=") and "node logs in a temporary folder" in lines[0]
    assert lines[1].startswith("step 0 (3 left) at n00042: ")
    match = BUDGET_LINE.match(lines[-1])
    assert match, lines[-1]
    record = json.loads(result.read_text())
    assert (record["status"], record["outcome"], record["code"]) == ("succeeded", "budget", "budget")  # kept here
    assert record["path"][0] == "n00042" and record["node"] == match.group(1)
    assert f"{record['distance_m']:.1f}" == match.group(2)
    assert sorted(p.name for p in tmp.glob("cityseeker-seek-*")) == [] and list(cwd.iterdir()) == []


def test_a_seek_that_ends_in_an_error_keeps_its_node_logs_and_names_them(monaco_dir, ros_domain, tmp_path):
    """An error (exit 2: here --timeout passes before the nodes are up) keeps the temporary folder
    so the node logs can be read, and says where it is. The client, stopped before it sent its
    goal, says nothing: before, it printed 'seek: interrupted before a goal was sent' first."""
    tmp = tmp_path / "tmp"
    done = seek(tmp, ros_domain, "I am thirsty", "--world", str(monaco_dir), "--policy", "random", *TINY_VIEWS,
                "--timeout", "2")
    assert done.returncode == 2, done.stdout + done.stderr
    [kept] = list(tmp.glob("cityseeker-seek-*"))
    assert f"seek: node logs kept in {kept / 'ros'}" in done.stderr.splitlines()
    assert "cityseeker: error: the run did not finish within 2 s" in done.stderr
    assert "interrupted" not in done.stderr and "result:" not in done.stdout
    assert {p.name for p in (kept / "ros").glob("*.log")} >= {"vehicle_bridge.log", "supervisor.log", "decision.log"}


def test_a_seek_given_out_keeps_its_node_logs_there_and_makes_no_temporary_folder(monaco_dir, ros_domain, tmp_path):
    tmp, out = tmp_path / "tmp", tmp_path / "run"
    done = seek(tmp, ros_domain, "I am thirsty", "--world", str(monaco_dir), "--policy", "random", "--max-steps", "1",
                *TINY_VIEWS, "--out", str(out), "--timeout", "200")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"node logs in {out / 'ros'}" in done.stdout.splitlines()[0]
    assert (out / "ros" / "supervisor.log").is_file() and sorted(tmp.glob("cityseeker-seek-*")) == []
