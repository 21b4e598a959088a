"""Copying one episode's memory between stores: what a Ray worker hands back to the driver."""
from __future__ import annotations

import sqlite3

from cityseeker_ros.core.agents.memory import (
    DecisionMemory,
    EdgeMemory,
    MemoryKey,
    RoundMemory,
    SqliteMemoryStore,
    Visit,
)
from cityseeker_ros.core.agents.memory.transfer import EpisodeMemory, export_episode, import_episode

KEY, OTHER = MemoryKey("run", "ep1", 0), MemoryKey("run", "ep2", 0)


def remember(store: SqliteMemoryStore, key: MemoryKey, rounds: int, finished: int) -> None:
    for r in range(rounds):
        store.begin_round(key, r)
        for step in range(3):
            store.add_visit(key, Visit(r, step, f"n{step}", 22.3 + step / 1e4, 114.1, 90.0 * step))
            store.add_decision(key, DecisionMemory(r, step, f"n{step}", step, 90.0, "ahead", 0.5, "why", "decide"))
            store.add_edge(key, EdgeMemory(r, step, f"n{step}", f"n{step + 1}", 90.0))
        store.mark_edges(key, r, [1], "backtracked")
        if r < finished:
            store.end_round(key, RoundMemory(r, ("n0", "n1"), (0, 1), "stopped", {"record": {"round": r}}))


def rows(path) -> dict[str, list]:
    with sqlite3.connect(path) as db:
        return {t: sorted(db.execute(f"select * from {t}").fetchall(), key=repr)
                for t in ("rounds", "visits", "decisions", "edges")}


def test_an_exported_episode_imports_to_the_same_rows(tmp_path):
    source, target = SqliteMemoryStore(tmp_path / "a.sqlite"), SqliteMemoryStore(tmp_path / "b.sqlite")
    remember(source, KEY, rounds=3, finished=2)  # the last round unfinished, as a crash leaves it
    remember(target, KEY, rounds=1, finished=1)  # stale rows of the same episode are replaced
    remember(source, OTHER, rounds=1, finished=1)
    remember(target, OTHER, rounds=1, finished=1)
    import_episode(target, KEY, export_episode(source, KEY))
    source.close(), target.close()
    assert rows(tmp_path / "a.sqlite") == rows(tmp_path / "b.sqlite")


def test_a_slice_of_rounds_and_an_empty_memory():
    store = SqliteMemoryStore(":memory:")
    remember(store, KEY, rounds=3, finished=3)
    first = export_episode(store, KEY, range(2))
    assert first.rounds == [0, 1] and [m.round for m in first.finished] == [0, 1]
    assert {v.round for v in first.visits} == {0, 1} and len(first.edges) == 6
    assert export_episode(store, KEY, range(0)) == EpisodeMemory()
    import_episode(store, KEY, EpisodeMemory())
    assert store.finished_rounds(KEY) == [] and store.visits(KEY) == []
