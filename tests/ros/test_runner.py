"""`cityseeker run benchmark` end to end: streetview_replay, decision, supervisor and
evaluator over real DDS on loopback write the same episodes.jsonl and summary.json as the
in-process `cityseeker benchmark` for the same seeds, as separate processes and in one process;
a decision node killed mid-run makes the supervisor hold and report, the runner restarts it,
and the run finishes with every result. A node that cannot start (its configuration, an
unreachable model server) ends the run at once with its one-line error and nothing left
running; a run that waits says on the terminal what for."""
from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cityseeker_ros.cli import main as cli
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros.launcher import Completion, progress_line
from cityseeker_ros.ros.runner import CONFIG_ERROR_EXIT, EXIT_REASON_ENV, LOG_PREFIX, NodeSpec, RunFailed, Runner

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
    assert "5 processes" in result.stdout  # the frames node beside the four
    # One progress line per task, as each is written, in the order of episodes.jsonl.
    progress = [line for line in result.stdout.splitlines() if line.startswith("episode ")]
    written = records(tmp_path / "ros")
    assert len(written) == 12 and progress == [progress_line(r, i, 12) for i, r in enumerate(written, 1)]
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


def kill_mid_run(out: Path, domain: int, node: str, *flags: str, progress: str = "episodes.jsonl",
                 marker: str = "\n") -> tuple[subprocess.Popen, str]:
    """Start the runner, SIGKILL its `node` once `out/progress` holds two `marker`s, let the run finish.
    The default waits for two written results; the evaluator can receive every result at once after
    the run has ended (it matched late), so a kill that must land mid-run waits on the supervisor."""
    runner = subprocess.Popen(runner_command(out, domain, *flags), cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ((out / progress).is_file() and (out / progress).read_text().count(marker) >= 2):
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
    kill_mid_run(out, ros_domain, "decision", *flags, "--decision-timeout", "1",
                 progress="ros/supervisor.log", marker=" seed 0: ")  # "hongkong6-1 seed 0: ... (2/8)"
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


# -- a run that cannot go on -------------------------------------------------------------------


def free_port() -> int:
    """A loopback port with nothing listening on it (bound, read, released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def started_pids(out: Path) -> list[int]:
    return [entry["pid"] for entry in json.loads((out / "ros" / "processes.json").read_text())]


def alive(pid: int) -> bool:
    """Still running as one of ours (a recycled PID running something else is not)."""
    return "cityseeker_ros" in command_line(pid)


@pytest.mark.parametrize("mode", [(), ("--single-process",)], ids=["processes", "one-process"])
def test_a_decision_node_that_cannot_configure_ends_the_run_with_its_one_line_error(hk6, ros_domain, tmp_path,
                                                                                   mode):
    """An OpenAI-compatible server that is not there: the in-process benchmark says so in one
    line within seconds, and so must the runner, instead of retrying configure in silence."""
    out = tmp_path / "ros"
    flags = ("--data", str(hk6), "--policy", "vlm", "--backend", "openai", "--model", "m", "--backend-param",
             f"base_url=http://127.0.0.1:{free_port()}/v1", "--limit", "2", *mode)
    started = time.time()
    runner = subprocess.Popen(runner_command(out, ros_domain, *flags), cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = runner.communicate(timeout=90)
    finally:
        if runner.poll() is None:
            ros.stop(runner)
    ended = time.time()
    assert runner.returncode == 2, stderr + logs(out)
    lines = [line for line in stderr.strip().splitlines() if not line.startswith("cityseeker: warning:")]
    assert len(lines) == 1 and "decision" in lines[0] and "cannot reach the server" in lines[0], stderr
    failed = min(p.stat().st_mtime for p in (out / "ros").glob("*.reason"))  # the node gave up
    print(f"runner exited {ended - started:.1f} s after starting, {ended - failed:.1f} s after the node failed")
    assert ended - failed < 15 and ended - started < 60  # measured 2-6 s and 16-33 s on 2 busy cores
    asked = "decision node is unconfigured: configure"
    configures = sum(p.read_text().count(asked) for p in (out / "ros").glob("*.log"))
    assert configures == 1  # asked once, never again after a configuration error
    pids = started_pids(out)
    assert len(pids) == (2 if mode else 6)  # the monitor and the node process(es), frames included
    assert not [pid for pid in pids if alive(pid)]


def read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put((time.monotonic(), line.rstrip("\n")))


def test_a_camera_run_with_no_location_source_says_what_it_waits_for(monaco_dir, ros_domain, tmp_path):
    out = tmp_path / "ros"
    command = [sys.executable, "-m", "cityseeker_ros.cli", "run", "camera", "--data", str(monaco_dir), "--policy",
               "random", "--limit", "1", "--source", "replay", "--source-param", "views=rendered", "--fix-topic",
               "/nobody/fix", "--out", str(out), "--domain-id", str(ros_domain), "--timeout", "200"]
    started = time.monotonic()
    runner = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=read_lines, args=(runner.stdout, lines), daemon=True).start()
    seen: list[tuple[float, str]] = []
    try:
        while not any(line.startswith("waiting: /graph_localiser") for _, line in seen):
            assert time.monotonic() - started < 90 and runner.poll() is None, str(seen) + logs(out)
            try:
                seen.append(lines.get(timeout=1.0))
            except queue.Empty:
                continue
        said_at = next(t for t, line in seen if line.startswith("waiting: /graph_localiser"))
        runner.send_signal(signal.SIGINT)  # the user gives up: everything started goes
        runner.wait(60)
    finally:
        if runner.poll() is None:
            ros.stop(runner)
    print(f"said what it waits for {said_at - started:.1f} s after starting")
    assert said_at - started < 60
    assert [line for _, line in seen if "/graph_localiser" in line] == [
        "waiting: /graph_localiser: localiser: no fix received yet"]
    assert runner.returncode == 130
    assert not [pid for pid in started_pids(out) if alive(pid)]


# -- the runner's bookkeeping, with stand-in processes ------------------------------------------

STAND_IN = f"""import os, sys, pathlib
mode = sys.argv[1]
if mode == "config":
    pathlib.Path(os.environ["{EXIT_REASON_ENV}"]).write_text("parameter x must be positive, got -1\\n")
    sys.exit({CONFIG_ERROR_EXIT})
sys.exit(1)
"""


def stand_in_runner(tmp_path: Path, mode: str, respawn: bool = True) -> Runner:
    (tmp_path / "stand_in.py").write_text(STAND_IN)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    node = NodeSpec("stand_in", "stand_in", argv=(mode,), respawn=respawn)
    return Runner([node], tmp_path / "logs", env, log=lambda line: None, monitor=False)


def test_a_configuration_error_is_never_restarted(tmp_path):
    with stand_in_runner(tmp_path, "config") as runner:
        runner.start()
        with pytest.raises(RunFailed) as failed:
            runner.watch(lambda: False, timeout_s=60, poll_s=0.05)
    assert str(failed.value).startswith("stand_in: parameter x must be positive, got -1 (log: ")
    assert "\n" not in str(failed.value) and runner.restarts == {}


def test_a_node_dying_at_every_start_ends_the_run(tmp_path):
    with stand_in_runner(tmp_path, "crash") as runner:
        runner.start()
        with pytest.raises(RunFailed, match="3 times in a row"):
            runner.watch(lambda: False, timeout_s=60, poll_s=0.05)
    assert runner.restarts == {"stand_in": 2} and len(runner.started) == 3


def test_progress_is_reported_once_per_task_as_lines_complete(tmp_path):
    def record(i: int) -> dict:
        return {"episode_id": f"e{i}", "seed": 0, "end_reason": "stopped", "steps": i,
                "metrics": {"tcp50": 100.0 if i % 2 else 0.0}}

    said: list[str] = []
    wanted = [(f"e{i}", 0) for i in range(4)]
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text(json.dumps(record(0)) + "\n")  # written by the run this one resumes
    done = Completion(tmp_path, wanted, log=said.append, quiet=[("e0", 0)])
    line = json.dumps(record(1))
    with open(episodes, "a") as f:
        f.write(line[:10])  # torn: not a task yet
        f.flush()
        assert not done() and said == []
        f.write(line[10:] + "\n" + json.dumps(record(2)) + "\n")
    assert not done()
    assert said == ["episode 2/4 e1 seed 0: stopped after 1 steps: success (within 50 m)",
                    "episode 3/4 e2 seed 0: stopped after 2 steps: not reached"]
    with open(episodes, "a") as f:
        f.write(json.dumps(record(2)) + "\n" + json.dumps(record(3)) + "\n")  # a duplicate is not progress
    (tmp_path / "summary.json").write_text("{}")
    assert done() and len(said) == 3 and said[-1].startswith("episode 4/4 e3")


@pytest.mark.parametrize("end_reason, steps, tcp50, spd, expected", [
    ("budget_exhausted", 35, 100.0, 12.4, "budget spent after 35 steps, 12 m from the target: success (within 50 m)"),
    ("stopped", 14, 0.0, 230.0, "stopped after 14 steps, 230 m from the target: not reached"),
    ("error", 3, 0.0, None, "ended by an error after 3 steps: not reached"),
])
def test_a_progress_line_cannot_be_read_as_its_opposite(end_reason, steps, tcp50, spd, expected):
    """"budget_exhausted after 35 steps, success" read as a contradiction: the line says the ending
    and the result apart, with the distance that makes it a success or not."""
    record = {"episode_id": "e1", "seed": 0, "end_reason": end_reason, "steps": steps,
              "metrics": {"tcp50": tcp50, "spd": spd}}
    assert progress_line(record, 1, 2) == f"episode 1/2 e1 seed 0: {expected}"


def test_a_run_says_what_it_waits_for_until_its_first_episode(tmp_path):
    """The first episode line came 55 s after the demo's run started, with nothing said meanwhile."""
    said: list[str] = []
    completion = Completion(tmp_path, [("e1", 0)], log=said.append, waiting=lambda: "decision: configuring",
                            every_s=0.0)
    assert completion() is False and completion() is False
    assert len(said) == 2 and all(line.startswith("waiting for the first episode (") for line in said)
    assert said[0].endswith("s): decision: configuring")
    record = {"episode_id": "e1", "seed": 0, "end_reason": "stopped", "steps": 1, "metrics": {"tcp50": 100.0}}
    (tmp_path / "episodes.jsonl").write_text(json.dumps(record) + "\n")
    completion()
    completion()
    assert said[2:] == [progress_line(record, 1, 1)]  # once an episode is in, no more waiting notes


def test_the_waiting_note_reads_each_nodes_last_message():
    line = "[INFO] [1764262800.123] [decision]: configuring: policy ocr-embed"
    assert LOG_PREFIX.sub("", line) == "configuring: policy ocr-embed"
