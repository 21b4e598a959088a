"""`cityseeker run benchmark` end to end: streetview_replay, vlm_decision, supervisor and
evaluator over real DDS on loopback write the same episodes.jsonl and summary.json as the
in-process `cityseeker benchmark` for the same seeds, as separate processes and in one process;
a decision node killed mid-run makes the supervisor hold and report, the runner restarts it,
and the run finishes with every result."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cityseeker_ros.cli import main as cli
from cityseeker_ros.ros import env as ros

REPO = Path(__file__).resolve().parents[2]
# Run settings only: where a run was made and when differ by design.
VOLATILE = ("command", "created")


def in_process(out: Path, *flags: str) -> None:
    assert cli(["benchmark", *flags, "--out", str(out), "--no-progress"]) == 0


def runner_command(out: Path, domain: int, *flags: str) -> list[str]:
    return [sys.executable, "-m", "cityseeker_ros.cli", "run", "benchmark", *flags, "--out", str(out),
            "--domain-id", str(domain), "--timeout", "240"]


def run(out: Path, domain: int, *flags: str) -> subprocess.CompletedProcess:
    result = subprocess.run(runner_command(out, domain, *flags), cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr + logs(out)
    return result


def logs(out: Path) -> str:
    return "".join(f"\n--- {p.name} ---\n{p.read_text()[-3000:]}" for p in sorted((out / "ros").glob("*.log")))


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


def summary(out: Path) -> dict:
    doc = json.loads((out / "summary.json").read_text())
    doc["config"] = {k: v for k, v in doc["config"].items() if k not in VOLATILE and k != "memory"}
    return doc


def test_multi_process_run_matches_the_in_process_benchmark(monaco_dir, ros_domain, tmp_path):
    flags = ("--data", str(monaco_dir), "--policy", "random", "--seeds", "2", "--limit", "6")
    in_process(tmp_path / "cli", *flags)
    result = run(tmp_path / "ros", ros_domain, *flags)
    assert "4 processes" in result.stdout
    assert records(tmp_path / "ros") == records(tmp_path / "cli")
    assert summary(tmp_path / "ros") == summary(tmp_path / "cli")
    assert summary(tmp_path / "ros")["overall"]["episodes"] == 6


def test_supervised_rounds_in_one_process_match_the_in_process_benchmark(monaco_dir, ros_domain, tmp_path):
    """Oracle B2 backtracks (retraced hops taken by the supervisor itself), R3 history in the
    decision node's prompt context, two rounds with the memory: all through the topics."""
    flags = ("--data", str(monaco_dir), "--policy", "random", "--seeds", "1", "--limit", "4",
             "--strategy", "oracle:B2", "--strategy", "R3", "--rounds", "2")
    in_process(tmp_path / "cli", *flags)
    result = run(tmp_path / "ros", ros_domain, *flags, "--single-process")
    assert "one process" in result.stdout
    got, expected = records(tmp_path / "ros"), records(tmp_path / "cli")
    assert got == expected
    assert any(e["kind"] == "backtrack" for r in got for e in r["supervisor"]["events"])
    assert all(len(r["rounds"]) == 1 for r in got)
    assert summary(tmp_path / "ros") == summary(tmp_path / "cli")


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def kill_mid_run(out: Path, domain: int, node: str, *flags: str) -> tuple[subprocess.Popen, str]:
    """Start the runner, SIGKILL its `node` once two results are written, let the run finish."""
    runner = subprocess.Popen(runner_command(out, domain, *flags), cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ((out / "episodes.jsonl").is_file() and (out / "episodes.jsonl").read_text().count("\n") >= 2):
            assert time.monotonic() < deadline and runner.poll() is None, logs(out)
            time.sleep(0.05)
        found = [p for p in children(runner.pid) if f"cityseeker_ros.nodes.{node}" in command_line(p)]
        assert len(found) == 1
        os.kill(found[0], 9)  # our grandchild: started by the runner we started
        stdout, _ = runner.communicate(timeout=240)
    finally:
        if runner.poll() is None:
            ros.stop(runner)
    assert runner.returncode == 0, stdout + logs(out)
    assert f"{node} exited with code -9: restarting it" in stdout
    return runner, stdout


def test_killing_the_decision_node_mid_run_holds_reports_and_loses_nothing(hk6, ros_domain, tmp_path):
    """`forward` is deterministic, so the records after a restart must equal an undisturbed run."""
    flags = ("--data", str(hk6), "--policy", "forward", "--limit", "8")
    in_process(tmp_path / "cli", *flags)
    out = tmp_path / "ros"
    kill_mid_run(out, ros_domain, "vlm_decision", *flags, "--decision-timeout", "1")
    supervisor_log = (out / "ros" / "supervisor.log").read_text()
    assert "within 1 s: holding" in supervisor_log and "resumed: a decision came after" in supervisor_log
    got = records(out)
    held = [r for r in got if "holds" in r]
    assert len(held) == 1 and held[0]["holds"][0]["held_s"] >= 1.0
    assert [{k: v for k, v in r.items() if k != "holds"} for r in got] == records(tmp_path / "cli")
    assert summary(out) == summary(tmp_path / "cli")


def test_killing_the_evaluator_mid_run_loses_no_result(hk6, ros_domain, tmp_path):
    """Outcomes are latched with a deep history: the restarted evaluator receives every one,
    skips those already in episodes.jsonl and writes the rest, each once."""
    flags = ("--data", str(hk6), "--policy", "forward", "--limit", "8")
    in_process(tmp_path / "cli", *flags)
    out = tmp_path / "ros"
    kill_mid_run(out, ros_domain, "evaluator", *flags)
    assert records(out) == records(tmp_path / "cli")
    assert summary(out) == summary(tmp_path / "cli")
