"""`--executor local`: episodes in this process, or in a pool of `--workers` processes."""
from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from typing import Any, Optional

from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.episode_run import EpisodeRunner
from cityseeker_ros.core.evaluation.executors.base import EXECUTORS, Executor, RunKey

_WORKER: Optional[EpisodeRunner] = None


def _worker_init(config: BenchmarkConfig) -> None:
    """A forked worker inherits the parent's runner (dataset, views and model already loaded);
    a spawned one builds its own."""
    global _WORKER
    if _WORKER is None:
        _WORKER = EpisodeRunner(config)


def _worker_run(tasks: Sequence[RunKey]) -> list[dict[str, Any]]:
    assert _WORKER is not None
    return _WORKER.run(tasks)


@EXECUTORS.register("local")
class LocalExecutor(Executor):
    """The default: no dependency beyond the package, forked workers inherit the loaded model."""

    def records(self, runner: EpisodeRunner, groups: Sequence[Sequence[RunKey]]) -> Iterator[dict[str, Any]]:
        if self.config.workers == 1 or len(groups) < 2:
            for group in groups:
                yield from runner.run(group)
            return
        global _WORKER
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        ctx = multiprocessing.get_context(method)
        _WORKER = runner if method == "fork" else None  # what forked workers start with
        try:
            with ctx.Pool(self.config.workers, initializer=_worker_init, initargs=(self.config,)) as pool:
                # imap keeps task order, so the log is written in the same order as a serial run.
                size = self.config.batch_size
                for records in pool.imap(_worker_run, groups, chunksize=max(1, 4 // size)):
                    yield from records
        finally:
            _WORKER = None
