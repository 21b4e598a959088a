"""Long in-process runs say where they are: episodes done of total, rate and time left on stderr,
rewritten in place on a terminal, only the final line in a log; stdout keeps the tables."""
from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cityseeker_ros.core.evaluation import ablation
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra import progress
from tests.core.infra.test_progress import FakeStream, screen_lines

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def every_update_shown(monkeypatch):
    """Episodes of a tiny world end milliseconds apart; show each so the counts can be checked."""
    monkeypatch.setattr(progress, "TERMINAL_REFRESH_S", 0.0)


def counts(shown: list[str]) -> list[str]:
    """'3/6' of each 'label: 3/6 episodes, ...' line."""
    return [line.split(": ", 1)[1].split()[0] for line in shown if ": done," not in line]


def test_a_benchmark_on_a_terminal_counts_every_episode_of_every_seed(tiny_city, tmp_path, every_update_shown):
    config = BenchmarkConfig(data=str(tiny_city), policy="random", seeds=[0, 1])
    benchmark = Benchmark(config)
    total = len(benchmark.tasks())
    stream = FakeStream(tty=True)
    summary = benchmark.run(tmp_path / "run", progress_stream=stream)
    shown = screen_lines(stream.getvalue())
    assert total == 2 * summary["overall"]["episodes"] > 0
    assert counts(shown) == [f"{n}/{total}" for n in range(total + 1)]
    assert shown[0] == f"benchmark random: 0/{total} episodes"
    assert shown[-1].startswith(f"benchmark random: done, {total}/{total} episodes in ")
    assert stream.getvalue().endswith("\n") and stream.getvalue().count("\n") == 1  # one line, rewritten


def test_a_benchmark_in_a_log_writes_only_its_final_line(tiny_city, tmp_path):
    stream = FakeStream(tty=False)
    Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random")).run(tmp_path / "run", progress_stream=stream)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchmark random: done, ") and "\r" not in stream.getvalue()


def test_no_progress_writes_nothing(tiny_city, tmp_path):
    stream = FakeStream(tty=True)
    Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random")).run(tmp_path / "run", progress=False,
                                                                         progress_stream=stream)
    assert stream.getvalue() == ""


def test_a_resumed_benchmark_starts_from_the_episodes_already_done(tiny_city, tmp_path, every_update_shown):
    Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random", seeds=[0])).run(tmp_path / "run", progress=False)
    benchmark = Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random", seeds=[0, 1]))
    total = len(benchmark.tasks())
    stream = FakeStream(tty=True)
    benchmark.run(tmp_path / "run", progress_stream=stream)
    shown = screen_lines(stream.getvalue())
    assert counts(shown) == [f"{n}/{total}" for n in range(total // 2, total + 1)]
    assert shown[-1].endswith(f", {total // 2} done before")


def test_a_benchmark_with_nothing_left_to_run_says_so(tiny_city, tmp_path):
    config = BenchmarkConfig(data=str(tiny_city), policy="random", seeds=[0])
    Benchmark(config).run(tmp_path / "run", progress=False)
    stream = FakeStream(tty=False)
    Benchmark(config).run(tmp_path / "run", progress_stream=stream)
    assert stream.getvalue().startswith("nothing to run: all ")


def test_an_ablation_shows_each_run_and_its_episodes(grid_dir, tmp_path, every_update_shown):
    config = ablation.AblationConfig(data=str(grid_dir), family="landmarks", policies=ablation.policies_from("random"),
                                     cells=ablation.cells_from("baseline,B1"), seeds=[0], limit=2)
    stream = FakeStream(tty=True)
    ablation.run_ablation(config, tmp_path / "abl", progress_stream=stream)
    shown = screen_lines(stream.getvalue())
    assert shown[0] == f"[1/2] policy random, cell baseline -> {tmp_path / 'abl' / 'random' / 'baseline'}"
    assert "[1/2] policy random, cell baseline: 0/2 episodes" in shown
    assert any(line.startswith("[1/2] policy random, cell baseline: done, 2/2 episodes") for line in shown)
    assert any(line.startswith("[2/2] policy random, cell B1: done, 2/2 episodes") for line in shown)


def run_command(args: list[str], terminal: bool, timeout_s: float = 120.0) -> tuple[int, str, str]:
    """`python -m cityseeker_ros ARGS` with stderr on a pseudo-terminal (or a pipe); stdout piped.
    Returns the exit status, stdout and what stderr showed."""
    command = [sys.executable, "-m", "cityseeker_ros", *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not terminal:
        proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=timeout_s, env=env)
        return proc.returncode, proc.stdout, proc.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            env=env)
    os.close(slave)
    seen, deadline = b"", time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end of the terminal
                break
            if not chunk:
                break
            seen += chunk
        else:
            proc.kill()
            pytest.fail(f"{' '.join(args)}: still running after {timeout_s} s; stderr so far: {seen!r}")
        stdout = proc.communicate(timeout=timeout_s)[0].decode()
    finally:
        os.close(master)
    return proc.returncode, stdout, seen.decode().replace("\r\n", "\n")


def test_the_landmark_command_shows_progress_on_a_terminal_and_only_its_final_line_in_a_log(grid_dir, tmp_path):
    """docs/tasks.md's landmark-goal benchmark, on the hand-made grid and 3 episodes."""
    args = ["benchmark", "--data", str(grid_dir), "--family", "landmarks", "--policy", "random", "--limit", "3"]
    code, stdout, on_terminal = run_command([*args, "--out", str(tmp_path / "tty")], terminal=True)
    assert code == 0, on_terminal
    shown = screen_lines(on_terminal)
    assert "benchmark random: 0/3 episodes" in shown
    assert any(line.startswith("benchmark random: done, 3/3 episodes in ") for line in shown), shown
    assert "\r\x1b[K" in on_terminal  # rewritten in place
    assert "benchmark random:" not in stdout and stdout.startswith("policy random on gridtown: 3 episodes")
    assert "{'" not in stdout and "the world's task facts:" in stdout  # readable, not a Python dict

    code, stdout, in_log = run_command([*args, "--out", str(tmp_path / "log")], terminal=False)
    assert code == 0, in_log
    progress_lines = [line for line in in_log.splitlines() if line.startswith("benchmark random")]
    assert len(progress_lines) == 1 and progress_lines[0].startswith("benchmark random: done, 3/3 episodes in ")
    assert "\r" not in in_log and "benchmark random:" not in stdout
