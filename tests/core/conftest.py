"""The supervised episode runner the loop and strategy tests share (tests/core/scripted.py has
the scripted policies it runs)."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.agents.memory import SqliteMemoryStore
from cityseeker_ros.core.evaluation.episode_run import EpisodeRun
from cityseeker_ros.core.strategies import BcrPolicy, make_strategy


@pytest.fixture
def supervise(tiny_world, tmp_path):
    """supervise(policy, ["B1", ...], episode=0, rounds=1, round=0, ...) -> (record, supervisor).
    Rounds share one memory file per test."""
    store = SqliteMemoryStore(tmp_path / "memory.sqlite")

    def run(policy, strategies, episode=0, rounds=1, round=0, seed=0, run_id="run", max_steps=35, views=None, **kw):
        specs = [s if isinstance(s, dict) else {"name": s.split(":")[-1], "oracle": s.startswith("oracle:")}
                 for s in strategies]
        sup = BcrPolicy(policy, [make_strategy(s) for s in specs], store, run_id, rounds=rounds, **kw)
        sup.begin_round(seed, round)
        ep = tiny_world.episodes[episode]
        r = EpisodeRun(tiny_world, ep, sup, seed, max_steps=max_steps, round=round, views=views)
        while not r.done:
            r.act()
        record = r.record()
        assert "error" not in record, record.get("error")
        sup.finish_round(record)
        return record, sup

    run.store = store
    return run
