"""What an agent remembers of its walks, and the interface every memory backend meets.

Memory is keyed by (run, episode, seed) and round, so nothing one episode learnt is visible to
another episode or to another run. The strategies read and write only through `MemoryStore`, so a
server database can replace the embedded default without touching them.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class MemoryKey:
    """One episode of one run: the unit that memory never crosses."""

    run: str
    episode: str
    seed: int


@dataclass(frozen=True)
class Visit:
    """The agent stood on `node` at `step` of `round`, facing `facing` (degrees from north)."""

    round: int
    step: int
    node: str
    lat: float
    lon: float
    facing: float


@dataclass(frozen=True)
class DecisionMemory:
    """What the agent chose at a node and why. `action` is a view index, None for stop;
    `kind` is "decide" (the policy chose) or "retrace" (the supervisor walked back)."""

    round: int
    step: int
    node: str
    action: Optional[int]
    heading: Optional[float]
    relative: Optional[str]
    confidence: Optional[float]
    rationale: str = ""
    kind: str = "decide"


@dataclass(frozen=True)
class EdgeMemory:
    """A hop the agent made: from `source` along `heading` to `target`. `outcome` is "taken",
    or "backtracked" once a backtrack retraced it (the agent judged it a wrong turn)."""

    round: int
    step: int
    source: str
    target: str
    heading: Optional[float]
    outcome: str = "taken"


@dataclass(frozen=True)
class RoundMemory:
    """A finished round: where it went and how it ended (no success flag: the agent cannot know)."""

    round: int
    path: tuple[str, ...]
    actions: tuple = ()
    end_reason: str = ""
    extra: dict = field(default_factory=dict)  # anything the runner needs to resume without rerunning


class MemoryStore(ABC):
    """Append-only per round, durable per call: a crash loses at most the round in progress,
    which `begin_round` clears before it is run again. Reads include the unfinished round's rows
    (the round in progress needs its own memory); only `finished_rounds` leaves it out."""

    @abstractmethod
    def begin_round(self, key: MemoryKey, round: int) -> None:
        """Start (or restart after a crash) a round: drop any rows of this round and later ones."""

    @abstractmethod
    def add_visit(self, key: MemoryKey, visit: Visit) -> None: ...

    @abstractmethod
    def add_decision(self, key: MemoryKey, decision: DecisionMemory) -> None: ...

    @abstractmethod
    def add_edge(self, key: MemoryKey, edge: EdgeMemory) -> None: ...

    @abstractmethod
    def mark_edges(self, key: MemoryKey, round: int, steps: Sequence[int], outcome: str) -> None:
        """Set the outcome of this round's edges made at `steps`."""

    @abstractmethod
    def end_round(self, key: MemoryKey, memory: RoundMemory) -> None:
        """Mark the round finished; only finished rounds survive a restart."""

    @abstractmethod
    def finished_rounds(self, key: MemoryKey) -> list[RoundMemory]:
        """Finished rounds of this episode, in round order."""

    @abstractmethod
    def visits(self, key: MemoryKey, rounds: Optional[Sequence[int]] = None) -> list[Visit]:
        """Visits in (round, step) order; `rounds` None means all rounds."""

    @abstractmethod
    def decisions(self, key: MemoryKey, rounds: Optional[Sequence[int]] = None) -> list[DecisionMemory]:
        """Decisions in (round, step) order; `rounds` None means all rounds."""

    @abstractmethod
    def edges(self, key: MemoryKey, rounds: Optional[Sequence[int]] = None) -> list[EdgeMemory]:
        """Edges in (round, step) order; `rounds` None means all rounds."""

    @abstractmethod
    def visits_near(self, key: MemoryKey, lat: float, lon: float, radius_m: float,
                    rounds: Optional[Sequence[int]] = None) -> list[Visit]:
        """Visits within `radius_m` metres (great-circle) of a point, nearest first, equal
        distances in (round, step) order."""

    @abstractmethod
    def forget(self, key: MemoryKey) -> None:
        """Drop everything of one episode (a fresh start of it)."""

    @abstractmethod
    def close(self) -> None: ...
