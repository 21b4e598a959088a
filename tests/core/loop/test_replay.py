"""The replay loop without ROS: fed by an in-process world node (an Environment that starts a
new run per selection) and a decision side with its own policy, exactly as the nodes exchange
them, it writes the in-process benchmark's records (strategies, rounds and memory included);
no decision in time holds once and the record lists it; stale runs and lost selections are
handled."""
from __future__ import annotations

import json
from typing import Any, Optional

from cityseeker_ros.core.agents.memory import make_memory_store
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.loop.replay import ReplayLoop
from cityseeker_ros.core.loop.run_plan import RunPlan
from cityseeker_ros.core.loop.session import make_bcr_policy
from tests.core.evaluation.test_benchmark import lines
from tests.core.loop.rigs import FakeClock, ReplayRig


def replay_rig(config: BenchmarkConfig, bench: Benchmark, clock: Optional[FakeClock] = None) -> ReplayRig:
    """The run's tasks, in the benchmark's order, on a replay loop."""
    worlds = list(bench.worlds.values())
    memory = make_memory_store("sqlite", path=config.memory) if config.supervised else None
    plan = RunPlan.from_keys(config, worlds, [bench.key(t) for t in bench.tasks()], memory)
    kw: dict[str, Any] = {"clock": clock} if clock is not None else {}
    return ReplayRig(config, worlds, lambda outputs: ReplayLoop(
        config, plan, make_bcr_policy(config, memory) if memory else None, outputs, decision_timeout_s=10.0,
        select_timeout_s=10.0, **kw))


def test_the_replay_loop_writes_the_in_process_records(hk6, tmp_path):
    settings = dict(data=str(hk6), policy="random", seeds=[0, 1], limit=4, rounds=2,
                    strategies=[{"name": "B2", "oracle": True}, {"name": "R3"}, {"name": "C1"}])
    Benchmark(BenchmarkConfig(**settings, memory=str(tmp_path / "a.sqlite"))).run(tmp_path / "a", progress=False)
    expected = [json.loads(x) for x in lines(tmp_path / "a" / "episodes.jsonl")]
    config = BenchmarkConfig(**settings, memory=str(tmp_path / "b.sqlite"))
    assert replay_rig(config, Benchmark(config)).run() == expected
    assert any(e["kind"] == "backtrack" for r in expected for e in r["supervisor"]["events"])


def test_unsupervised_replay_matches_and_a_late_decision_holds_once(tiny_city, tmp_path):
    config = BenchmarkConfig(data=str(tiny_city), policy="forward")
    bench = Benchmark(config)
    bench.run(tmp_path / "a", progress=False)
    expected = [json.loads(x) for x in lines(tmp_path / "a" / "episodes.jsonl")]
    clock = FakeClock()
    rig = replay_rig(config, Benchmark(config), clock)
    rig.answer = False
    rig.loop.start()
    rig.deliver()
    [(view_set, context, round)] = rig.parked
    for _ in range(30):  # 15 s of ticks: one hold, however many ticks see it overdue
        clock.t += 0.5
        rig.loop.tick()
    assert rig.loop.state == "holding" and rig.loop.holds == 1 and rig.loop.overdue
    assert "no decision for view set" in rig.loop.reason
    rig.answer = True
    decision, records = rig.decider.answer(view_set, context, round)
    rig.loop.decision(view_set.view_set_id, decision, records)
    rig.deliver()
    assert rig.loop.state == "finished"
    got = rig.recorder.of("outcome")
    [hold] = got[0]["holds"]
    assert {k: hold[k] for k in ("step", "view_set_id", "held_s")} == {
        "step": 0, "view_set_id": view_set.view_set_id, "held_s": 15.0}
    assert hold["reason"] == f"no decision for view set {view_set.view_set_id} within 10 s: holding"
    assert [{k: v for k, v in r.items() if k != "holds"} for r in got] == expected
    assert rig.recorder.of("command") == []  # a replay never commands a vehicle


def test_a_stale_run_is_ignored_and_a_lost_selection_is_asked_again(tiny_city):
    config = BenchmarkConfig(data=str(tiny_city), policy="forward", limit=1)
    clock = FakeClock()
    rig = replay_rig(config, Benchmark(config), clock)
    [(episode_id, seed)] = [rig.loop.plan.current()[0].key]
    # The loop saw run 5 before it selected: runs up to 5 are not the one it asked for.
    rig.world.run = 5
    old = rig.world.select(episode_id, seed)
    rig.loop.view_set(old)  # before the loop started: remembered as the newest run
    rig.loop.start()
    rig.seen = len(rig.recorder.events)
    rig.loop.view_set(old)
    assert rig.loop.state == "selecting" and rig.loop.run == 0 and rig.recorder.of("ask") == []
    clock.t += 10.5
    rig.loop.tick()
    assert len(rig.recorder.of("select")) == 2
    assert any("not started after 10 s: selecting again" in m for _, m in rig.recorder.of("log"))
    rig.deliver()
    assert rig.loop.state == "finished" and len(rig.recorder.of("outcome")) == 1
