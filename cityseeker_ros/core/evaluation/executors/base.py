"""What every executor is, and the registry they are chosen from by name."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from cityseeker_ros.core.infra.registry import Registry

if TYPE_CHECKING:
    from cityseeker_ros.core.evaluation.config import BenchmarkConfig
    from cityseeker_ros.core.evaluation.episode_run import EpisodeRunner

RunKey = tuple[str, int, int]  # (city, episode index, seed): all rounds of one (episode, seed)


class Executor(ABC):
    """Runs groups of tasks (each group in lockstep, `--batch-size` long) and yields their records."""

    # Whether the driver's own runner runs episodes (and so must load the model).
    prepares_in_driver: ClassVar[bool] = True

    def __init__(self, config: BenchmarkConfig) -> None:
        self.config = config
        # How the run went, for summary.json ("execution"); empty for executors with nothing to say.
        self.stats: dict[str, Any] = {}

    @abstractmethod
    def records(self, runner: EpisodeRunner, groups: Sequence[Sequence[RunKey]]) -> Iterator[dict[str, Any]]:
        """One record per task, in the order of `groups` and of the tasks in each."""


EXECUTORS: Registry[type[Executor]] = Registry("executor")
