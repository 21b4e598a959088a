"""The replay loop a goal server drives (supervisor mode episodes), without ROS: a goal it cannot
run is refused with its code and reason before anything starts; each goal's task gives the
in-process benchmark's record for that task and seed, with one step report per decision; a
cancel ends the task through the world node, which still writes its record. The node and the
goal server both hear each task's outcome (ForwardingOutputs)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.loop.episode_server import EpisodeServerLoop, EpisodeStep
from cityseeker_ros.core.loop.served import NOT_READY, ForwardingOutputs
from cityseeker_ros.core.vehicles.sim import PolicyDecider
from tests.core.evaluation.test_benchmark import lines
from tests.core.loop.rigs import FakeClock, ReplayRig
from tests.core.loop.test_seek import StopAfter


class Server:
    """The outcomes a goal server hears."""

    def __init__(self) -> None:
        self.outcomes: list[dict[str, Any]] = []

    def feedback(self, feedback: Any) -> None:
        raise AssertionError("not a seek")

    result = feedback

    def outcome(self, record: dict[str, Any]) -> None:
        self.outcomes.append(record)


def served(config: BenchmarkConfig, clock: FakeClock) -> tuple[EpisodeServerLoop, ReplayRig, Server]:
    worlds = list(Benchmark(config).worlds.values())
    server = Server()

    def make(outputs):
        forwarding = ForwardingOutputs(outputs)
        forwarding.listener = server
        return EpisodeServerLoop(config, worlds, None, None, forwarding, decision_timeout_s=10.0,
                                 select_timeout_s=10.0, clock=clock)

    rig = ReplayRig(config, worlds, make)
    return rig.loop, rig, server


def test_a_goal_the_loop_cannot_run_is_refused_with_its_reason(tiny_city):
    config = BenchmarkConfig(data=str(tiny_city), policy="forward", max_steps=20, rounds=1)
    loop, rig, _ = served(config, FakeClock())
    episode_id = next(iter(loop.episodes))
    assert loop.refusal(episode_id, 0, 0) == ("not_ready", NOT_READY)
    loop.start()  # the decision node is active; no task yet
    assert loop.state == "finished" and loop.refusal(episode_id, 0, 0) is None
    assert loop.refusal(episode_id, 0, 20) is None  # the run's own budget, said out loud
    code, reason = loop.refusal("no-such-task", 0, 0)
    assert code == "bad_episode" and f"'no-such-task' is not a task of {tiny_city}" in reason
    code, reason = loop.refusal(episode_id, 1, 0)
    assert code == "bad_round" and "from round 0 (the run has 1)" in reason
    code, reason = loop.refusal(episode_id, 0, 7)
    assert code == "bad_budget" and "fixed at 20" in reason
    assert loop.refusal(episode_id, 0, 0, goal_running=True)[0] == "busy"
    loop.run_task(episode_id, 0)
    assert loop.busy and loop.refusal(episode_id, 0, 0)[0] == "busy"
    assert rig.recorder.of("outcome") == []


def test_each_goal_gives_the_in_process_record_and_a_step_report_per_decision(tiny_city, tmp_path):
    config = BenchmarkConfig(data=str(tiny_city), policy="forward", seeds=[0, 1])
    Benchmark(config).run(tmp_path / "in_process", progress=False)
    expected = [json.loads(x) for x in lines(tmp_path / "in_process" / "episodes.jsonl")]
    clock = FakeClock()
    loop, rig, server = served(config, clock)
    steps: list[EpisodeStep] = []
    loop.on_step = steps.append
    loop.start()
    for record in expected:
        steps.clear()
        loop.run_task(record["episode_id"], record["seed"])
        rig.deliver()
        assert not loop.busy and server.outcomes[-1] == record == rig.recorder.of("outcome")[-1]
        assert [(s.step, s.node) for s in steps] == [(i + 1, n) for i, n in enumerate(record["path"][1:])]
    assert len(server.outcomes) == len(expected) == 4


def test_a_step_report_says_the_step_the_budget_left_the_node_and_the_decisions_latency(tiny_city):
    config = BenchmarkConfig(data=str(tiny_city), policy="forward", max_steps=35)
    clock = FakeClock()
    loop, rig, _ = served(config, clock)
    rig.decider = PolicyDecider(StopAfter(2))  # A -> B -> A, then a stop
    steps: list[EpisodeStep] = []
    loop.on_step = steps.append
    loop.start()
    rig.answer = False
    loop.run_task("tinytown-0", 0)
    rig.deliver()
    [(view_set, context, round)] = rig.parked
    clock.t += 1.5
    rig.answer = True
    loop.decision(view_set.view_set_id, *rig.decider.answer(view_set, context, round))
    rig.deliver()
    assert [(s.step, s.steps_left, s.node, s.action.is_stop) for s in steps] == [
        (1, 34, "00000001", False), (2, 33, "00000000", False), (2, 33, "00000000", True)]  # a stop takes no step
    assert [s.distance_m for s in steps] == pytest.approx([20.0, 40.0, 40.0], abs=0.1)
    assert [s.decision_latency_s for s in steps] == [1.5, 0.0, 0.0]


def test_a_cancel_ends_the_task_through_the_world_and_its_record_is_written(tiny_city):
    config = BenchmarkConfig(data=str(tiny_city), policy="forward")
    clock = FakeClock()
    loop, rig, server = served(config, clock)
    assert not loop.cancel("no task")
    loop.start()
    rig.answer = False  # the decision node goes quiet: the question waits
    loop.run_task(next(iter(loop.episodes)), 0)
    rig.deliver()
    assert loop.pending_view_set is not None
    assert loop.cancel("cancelled by the client")
    rig.deliver()
    assert rig.recorder.of("act")[-1][1:] == (None, "cancelled by the client")  # the world ends it with that
    [record] = server.outcomes
    assert record["end_reason"] == "error" and record["steps"] == 0 and not loop.busy
