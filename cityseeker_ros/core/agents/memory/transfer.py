"""Copy one episode's memory between stores, through the `MemoryStore` interface only.

A distributed run (core/evaluation/executors/ray.py) runs an episode's rounds on a worker against a private
in-process store and hands the rows back, so the driver alone writes the run's memory file. Rows
are copied round by round in their read order (round, step, insertion), and a round is marked
finished only after its rows: an import cut short leaves what a run killed mid-round leaves.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

from cityseeker_ros.core.agents.memory.store import (
    DecisionMemory,
    EdgeMemory,
    MemoryKey,
    MemoryStore,
    RoundMemory,
    Visit,
)


@dataclass
class EpisodeMemory:
    """Everything one (run, episode, seed) remembers, for `rounds` (None: all)."""

    finished: list[RoundMemory] = field(default_factory=list)
    visits: list[Visit] = field(default_factory=list)
    decisions: list[DecisionMemory] = field(default_factory=list)
    edges: list[EdgeMemory] = field(default_factory=list)

    @property
    def rounds(self) -> list[int]:
        return sorted({m.round for m in self.finished} | {r.round for rows in (self.visits, self.decisions, self.edges)
                                                           for r in rows})


def export_episode(store: MemoryStore, key: MemoryKey, rounds: Optional[Sequence[int]] = None) -> EpisodeMemory:
    wanted = None if rounds is None else list(rounds)
    if wanted == []:
        return EpisodeMemory()
    finished = [m for m in store.finished_rounds(key) if wanted is None or m.round in wanted]
    return EpisodeMemory(finished, store.visits(key, wanted), store.decisions(key, wanted), store.edges(key, wanted))


def import_episode(store: MemoryStore, key: MemoryKey, memory: EpisodeMemory) -> None:
    """Replace everything `store` holds of `key` with `memory`."""
    store.forget(key)
    finished = {m.round: m for m in memory.finished}
    for r in memory.rounds:
        store.begin_round(key, r)
        for visit in (v for v in memory.visits if v.round == r):
            store.add_visit(key, visit)
        for decision in (d for d in memory.decisions if d.round == r):
            store.add_decision(key, decision)
        for edge in (e for e in memory.edges if e.round == r):
            store.add_edge(key, edge)
        if r in finished:
            store.end_round(key, finished[r])
