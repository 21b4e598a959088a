"""Where a benchmark's episodes run, by name (`--executor`): `local` (this process, or a pool of
forked processes with `--workers`) and `ray` (a local Ray instance or a cluster).

Every executor returns records in task order, and only the driver process writes the output
folder, so the choice of executor never changes a byte of episodes.jsonl.
"""
from cityseeker_ros.core.evaluation.executors import local, ray  # noqa: F401 - register the built-in executors
from cityseeker_ros.core.evaluation.executors.base import EXECUTORS, Executor, RunKey

__all__ = ["EXECUTORS", "Executor", "RunKey"]
