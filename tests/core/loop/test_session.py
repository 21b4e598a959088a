"""The supervisor node's core without ROS: a RunPlan of EpisodeSessions, fed observations by a
real Environment and decisions by a real policy the way the nodes exchange them, writes the
same records as the in-process benchmark (strategies, rounds, memory and decision logs included)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from cityseeker_ros.core.agents.memory import make_memory_store
from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.policies.base import PromptContext
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.episode_run import episode_rng
from cityseeker_ros.core.loop.run_plan import RunPlan
from cityseeker_ros.core.loop.session import EpisodeSession, HoldSpan, RemotePolicy, make_bcr_policy
from cityseeker_ros.core.tasks.environment import Environment, Trajectory
from tests.core.evaluation.test_benchmark import lines


def run_as_nodes(config: BenchmarkConfig, worlds, keys) -> list[dict[str, Any]]:
    """What the replay, decision and supervisor nodes do, in one loop: the world steps, the
    decision side keeps its own policy (reset per task and round, as the decision node does)."""
    memory = make_memory_store("sqlite", path=config.memory) if config.supervised else None
    plan = RunPlan.from_keys(config, worlds, keys, memory)
    supervisor = make_bcr_policy(config, memory) if memory is not None else None
    decider = make_policy(config.policy, **config.policy_params)
    finals = []
    while (current := plan.current()) is not None:
        task, round = current
        session = EpisodeSession(task.world, task.episode, task.seed, round, config, supervisor)
        decider.reset(task.episode, episode_rng(task.seed, task.episode.episode_id, round))
        env = Environment(task.world, max_steps=config.max_steps)
        obs = env.reset(task.episode)
        while not env.done:
            ask = session.observe(obs)
            if not isinstance(ask, PromptContext):  # an action the supervisor took itself
                action = ask
            else:
                logged = len(decider.step_records())
                decision = decider.decide(obs, ask)
                action = session.decided(obs, decision, decider.step_records()[logged:])
            obs = env.step(action).observation
        traj = env.trajectory
        final = plan.finish(session.record(Trajectory(list(traj.path), list(traj.headings), traj.end_reason,
                                                      traj.error)))
        if final is not None:
            finals.append(final)
    return finals


def test_sessions_write_the_in_process_records(hk6, tmp_path):
    settings = dict(data=str(hk6), policy="random", seeds=[0, 1], limit=4, rounds=2,
                    strategies=[{"name": "B2", "oracle": True}, {"name": "R3"}, {"name": "C1"}])
    Benchmark(BenchmarkConfig(**settings, memory=str(tmp_path / "a.sqlite"))).run(tmp_path / "a", progress=False)
    expected = [json.loads(x) for x in lines(tmp_path / "a" / "episodes.jsonl")]
    config = BenchmarkConfig(**settings, memory=str(tmp_path / "b.sqlite"))
    bench = Benchmark(config)
    keys = [bench.key(t) for t in bench.tasks()]
    assert run_as_nodes(config, list(bench.worlds.values()), keys) == expected
    assert any(e["kind"] == "backtrack" for r in expected for e in r["supervisor"]["events"])


def test_unsupervised_sessions_match_and_holds_are_reported(hk6, tmp_path):
    config = BenchmarkConfig(data=str(hk6), policy="forward", limit=3)
    bench = Benchmark(config)
    bench.run(tmp_path / "a", progress=False)
    expected = [json.loads(x) for x in lines(tmp_path / "a" / "episodes.jsonl")]
    worlds = list(bench.worlds.values())
    assert run_as_nodes(config, worlds, [bench.key(t) for t in bench.tasks()]) == expected

    world = worlds[0]
    session = EpisodeSession(world, world.episodes[0], 0, 0, config, None)
    session.held(HoldSpan(step=3, view_set_id="x/run1/4", held_s=2.5, reason="no decision"))
    env = Environment(world, max_steps=0)
    env.reset(world.episodes[0])
    record = session.record(env.trajectory)
    assert record["holds"] == [{"step": 3, "view_set_id": "x/run1/4", "held_s": 2.5, "reason": "no decision"}]


def test_the_remote_policy_carries_the_real_policy_flags_and_never_decides(tiny_world):
    vlm, oracle = RemotePolicy("vlm"), RemotePolicy("oracle")
    assert vlm.accepts_context and vlm.uses_images and not vlm.privileged
    assert oracle.privileged and not oracle.accepts_context
    with pytest.raises(RuntimeError, match="decides in the decision node"):
        vlm.act(None)  # type: ignore[arg-type]


def test_the_session_uses_only_the_supervisors_public_api():
    """The episode state machine is core behind public methods: no caller reaches into a
    supervisor's private state (the nodes and the loops go through EpisodeSession)."""
    import ast
    from pathlib import Path

    import cityseeker_ros.core.strategies as package

    root = Path(package.__file__).parent
    private = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "supervisor":
                private.append(f"{path.name}:{node.lineno} supervisor.{node.attr}")
    assert private == []
