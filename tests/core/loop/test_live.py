"""The live episode: it begins when the vehicle reaches the task's start, the path is where the
vehicle arrived (not where it was sent), and it ends on stop, budget or failure like the replay,
or when the vehicle makes no progress for stall_timeout_s (checked with a fake clock)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from cityseeker_ros.cli import main as cli
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.files import write_text_atomic
from cityseeker_ros.core.loop.live import LiveEpisode
from cityseeker_ros.core.loop.session import EpisodeSession
from cityseeker_ros.core.tasks.environment import BACK, STOP, EndReason, move, retrace


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_nodes_passed_on_the_way_to_the_start_are_not_steps():
    live = LiveEpisode("s", max_steps=5)
    assert not live.arrive("x") and not live.arrive("y") and live.trajectory is None
    assert live.arrive("s") and live.trajectory.path == ["s"] and live.steps == 0


def test_the_path_is_where_the_vehicle_arrived_and_a_stop_ends_it():
    live = LiveEpisode("s", max_steps=5)
    live.arrive("s")
    live.act(move(2))
    assert not live.arrive("s")  # still there: no step
    assert live.arrive("b")  # the action meant some node; the vehicle reached b
    live.act(retrace("s"))
    assert live.arrive("s")
    live.act(STOP)
    assert live.done and live.trajectory.end_reason is EndReason.STOPPED
    assert live.trajectory.path == ["s", "b", "s"] and live.trajectory.headings == [2, BACK, None]
    assert not live.arrive("c")  # nothing counts after the end


def test_the_budget_ends_it_at_the_node_reached_with_the_last_step():
    live = LiveEpisode("s", max_steps=2)
    live.arrive("s")
    live.act(move(0))
    live.arrive("a")
    live.act(move(1))
    live.arrive("b")
    assert live.done and live.trajectory.end_reason is EndReason.BUDGET_EXHAUSTED and live.steps == 2


def test_a_failure_ends_it_with_the_error():
    live = LiveEpisode("s", max_steps=2)
    live.arrive("s")
    live.fail("the decision node failed")
    assert live.done and live.trajectory.end_reason is EndReason.ERROR
    assert live.trajectory.error == "the decision node failed"


def test_a_vehicle_that_stops_short_of_its_goal_ends_the_episode_as_stalled():
    """The Monaco hang: the vehicle stands 3 m from the goal and the node never changes. Fixes
    keep coming with GNSS jitter; the episode ends once, stall_timeout_s after the last progress."""
    clock = FakeClock()
    live = LiveEpisode("s", max_steps=5, stall_timeout_s=30.0, clock=clock)
    live.arrive("s")
    live.act(move(1), goal="b")
    rng = np.random.default_rng(0)
    for d in (20.0, 12.0, 3.0):  # walking in: progress
        clock.t += 5.0
        live.approach(d)
        assert not live.check_stall()
    progress_at, checks = clock.t, 0
    while not live.check_stall():  # then jitter around 3 m, a check every 0.1 s
        clock.t += 0.1
        live.approach(3.0 + rng.uniform(-0.9, 0.9))
        checks += 1
        assert checks < 10_000
    assert clock.t - progress_at == pytest.approx(30.0, abs=0.11)
    traj = live.trajectory
    assert live.done and traj.end_reason is EndReason.STALLED and traj.path == ["s"] and live.steps == 0
    assert "stalled: no progress towards node b for 30 s" in traj.error and "closest 3.0 m" in traj.error
    assert not live.check_stall() and not live.arrive("b")  # ended once; nothing counts after


def test_waiting_for_a_decision_is_not_a_stall_and_each_move_restarts_the_clock():
    clock = FakeClock()
    live = LiveEpisode("s", max_steps=5, stall_timeout_s=10.0, clock=clock)
    clock.t += 9.0
    live.arrive("s")  # reached the start in time: now waiting for the decision
    clock.t += 3600.0
    assert not live.under_way and not live.check_stall()
    live.act(move(0), goal="a")
    clock.t += 9.9
    assert not live.check_stall()
    live.arrive("a")
    live.act(move(0), goal="b")
    clock.t += 9.9
    assert not live.check_stall()
    clock.t += 0.1
    assert live.check_stall() and live.trajectory.path == ["s", "a"]
    assert "(no position;" in live.trajectory.error


def test_never_reaching_the_start_stalls_with_the_start_as_the_path():
    clock = FakeClock()
    live = LiveEpisode("s", max_steps=5, stall_timeout_s=5.0, clock=clock)
    live.approach(200.0)
    clock.t += 4.0
    live.approach(150.0)  # progress on the way to the start
    clock.t += 4.0
    assert not live.check_stall()
    clock.t += 1.0
    assert live.check_stall()
    assert live.trajectory.path == ["s"] and live.trajectory.end_reason is EndReason.STALLED
    assert "no progress to the start towards node s" in live.trajectory.error


def test_the_stall_timeout_is_checked():
    from cityseeker_ros.core.loop.live import DEFAULT_STALL_TIMEOUT_S

    assert LiveEpisode("s", 5).stall_timeout_s == DEFAULT_STALL_TIMEOUT_S
    for bad in (0, -1.0, float("nan"), float("inf"), "10"):
        with pytest.raises(ConfigError, match="stall_timeout_s"):
            LiveEpisode("s", 5, stall_timeout_s=bad)


def test_a_stalled_record_is_scored_and_reported(tiny_city, tmp_path):
    """A stalled episode is an ordinary record: `cityseeker report` counts and shows it."""
    out = tmp_path / "out"
    assert cli(["benchmark", "--data", str(tiny_city), "--policy", "random", "--out", str(out), "--no-progress"]) == 0
    world = load_dataset(tiny_city)[0]
    clock = FakeClock()
    live = LiveEpisode(world.episodes[0].start, max_steps=5, stall_timeout_s=1.0, clock=clock)
    clock.t += 2.0
    assert live.check_stall()
    config = BenchmarkConfig(data=str(tiny_city), policy="random")
    record = EpisodeSession(world, world.episodes[0], 0, 0, config, None).record(live.trajectory)
    lines = (out / "episodes.jsonl").read_text().splitlines()
    write_text_atomic(out / "episodes.jsonl", "\n".join([json.dumps(record), *lines[1:]]) + "\n")
    assert record["end_reason"] == "stalled" and record["steps"] == 0 and "stalled" in record["error"]
    assert cli(["report", str(out)]) == 0
    assert re.search(r"\| stalled \| 1 \|", (out / "report.md").read_text(encoding="utf-8"))
