"""The order a supervisor node runs a benchmark in: tasks one after another, every round of a
task before the next, rounds the memory already holds skipped, exactly as an in-process serial
run does, so both write the same records in the same order."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from cityseeker_ros.core.agents.memory.store import MemoryKey, MemoryStore
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.episode_run import resumed_rounds, with_rounds
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.episode import Episode, World


@dataclass(frozen=True)
class SeededEpisode:
    world: World
    episode: Episode
    seed: int

    @property
    def key(self) -> tuple[str, int]:
        return self.episode.episode_id, self.seed


@dataclass
class RunPlan:
    """`current()` is the (task, round) to run; `finish(record)` moves on and returns the task's
    final record (earlier rounds summarised in it) once its last round is done."""

    config: BenchmarkConfig
    tasks: list[SeededEpisode]
    memory: Optional[MemoryStore] = None
    _index: int = 0
    _rounds: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._start_task()

    @classmethod
    def from_keys(cls, config: BenchmarkConfig, worlds: Sequence[World], keys: Sequence[tuple[str, int]],
                  memory: Optional[MemoryStore] = None) -> RunPlan:
        episodes = {e.episode_id: (w, e) for w in worlds for e in w.episodes}
        tasks = []
        for episode_id, seed in keys:
            if episode_id not in episodes:
                raise ConfigError(f"tasks: unknown episode id {episode_id!r}")
            tasks.append(SeededEpisode(*episodes[episode_id], int(seed)))
        return cls(config, tasks, memory)

    @property
    def done(self) -> bool:
        return self._index >= len(self.tasks)

    def current(self) -> Optional[tuple[SeededEpisode, int]]:
        return None if self.done else (self.tasks[self._index], len(self._rounds))

    def finish(self, record: dict[str, Any]) -> Optional[dict[str, Any]]:
        self._rounds.append(record)
        if len(self._rounds) < self.config.rounds:
            return None
        final = with_rounds(self._rounds)
        self._index += 1
        self._start_task()
        return final

    def _start_task(self) -> None:
        self._rounds = []
        if self.done or self.memory is None or self.config.rounds == 1:
            return
        task = self.tasks[self._index]
        key = MemoryKey(self.config.run_id(), task.episode.episode_id, task.seed)
        self._rounds = resumed_rounds(self.memory, key, self.config.rounds)
