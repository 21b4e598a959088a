"""Run a policy over a dataset's episodes and seeds, resumably and in parallel.

Every (episode, seed) draws its randomness from a generator seeded by both, so results do
not depend on the order episodes run in or on which worker runs them, and a serial and a
parallel run write the same episodes.jsonl.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import platform
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import numpy as np

from cityseeker_ros import __version__
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.decisions import summarize_decisions
from cityseeker_ros.core.environment import DEFAULT_MAX_STEPS, Action, Environment
from cityseeker_ros.core.episode import Episode, World
from cityseeker_ros.core.errors import ConfigError
from cityseeker_ros.core.metrics import DEFAULT_DTW_THRESHOLD_M, episode_metrics, summarize
from cityseeker_ros.core.policies import POLICIES, Policy, make_policy
from cityseeker_ros.core.results import EpisodeLog, write_json_atomic
from cityseeker_ros.core.views import VIEW_SOURCES, ViewSource, make_view_source

EPISODES_FILE = "episodes.jsonl"
SUMMARY_FILE = "summary.json"
CONFIG_FILE = "config.json"
# Settings that change results: a resumed run must match them exactly.
RESULT_DEFINING = ("data_files", "dataset", "policy", "policy_params", "max_steps",
                   "max_invalid_retries", "dtw_threshold_m", "views", "view_params", "view_sources")


@dataclass
class BenchmarkConfig:
    data: str
    policy: str
    dataset: str = "auto"
    policy_params: dict[str, Any] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [0])
    max_steps: int = DEFAULT_MAX_STEPS
    max_invalid_retries: int = 2
    limit: Optional[int] = None
    workers: int = 1
    dtw_threshold_m: float = DEFAULT_DTW_THRESHOLD_M
    views: Optional[str] = None  # a view source name; None = headings only, no images
    view_params: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 1  # episodes run in lockstep per process, so a VLM decides for all in one call

    def validate(self) -> None:
        POLICIES.get(self.policy)
        if self.views is not None:
            VIEW_SOURCES.get(self.views)
        if not isinstance(self.view_params, dict):
            raise ConfigError(f"view parameters must be a mapping, got {self.view_params!r}")
        for name in ("max_steps", "max_invalid_retries", "workers", "limit", "batch_size"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool)) and not (name == "limit" and value is None):
                raise ConfigError(f"--{name.replace('_', '-')} must be an integer, got {value!r}")
        if not isinstance(self.dtw_threshold_m, (int, float)) or isinstance(self.dtw_threshold_m, bool):
            raise ConfigError(f"dtw threshold must be a number of metres, got {self.dtw_threshold_m!r}")
        if not isinstance(self.policy_params, dict):
            raise ConfigError(f"policy parameters must be a mapping, got {self.policy_params!r}")
        if not self.seeds:
            raise ConfigError("--seeds must be at least 1")
        if self.max_steps < 1:
            raise ConfigError(f"--max-steps must be >= 1, got {self.max_steps}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {self.limit}")
        if self.workers < 1:
            raise ConfigError(f"--workers must be >= 1, got {self.workers}")
        if self.batch_size < 1:
            raise ConfigError(f"--batch-size must be >= 1, got {self.batch_size}")
        if self.dtw_threshold_m <= 0:
            raise ConfigError(f"dtw threshold must be > 0 m, got {self.dtw_threshold_m}")


def episode_rng(seed: int, episode_id: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}/{episode_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


class EpisodeRun:
    """One episode in progress: environment, policy and the record it ends with. A broken
    policy or backend ends this episode with end reason `error`, never the run."""

    def __init__(self, world: World, episode: Episode, policy: Policy, seed: int, *,
                 max_steps: int = DEFAULT_MAX_STEPS, max_invalid_retries: int = 2,
                 dtw_threshold_m: float = DEFAULT_DTW_THRESHOLD_M, views: Optional[ViewSource] = None) -> None:
        self.world, self.episode, self.policy, self.seed = world, episode, policy, seed
        self.max_steps, self.dtw_threshold_m = max_steps, dtw_threshold_m
        self.env = Environment(world, max_steps=max_steps, max_invalid_retries=max_invalid_retries, views=views)
        self.observation = self.env.reset(episode)
        self._guard(lambda: policy.reset(episode, episode_rng(seed, episode.episode_id),
                                         world if policy.privileged else None))

    @property
    def done(self) -> bool:
        return self.env.done

    def _guard(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:
            self.env.fail(f"{type(exc).__name__}: {exc}")
            return None

    def act(self) -> None:
        self.apply(self._guard(lambda: self.policy.act(self.observation)))

    def apply(self, action: Optional[Action]) -> None:
        if action is not None and not self.done:
            self.observation = self._guard(lambda: self.env.step(action).observation) or self.observation

    def record(self) -> dict[str, Any]:
        world, episode, traj = self.world, self.episode, self.env.trajectory
        solvable = world.solvable(episode, self.max_steps)
        record = {
            "episode_id": episode.episode_id,
            "city": episode.city,
            "category": episode.category,
            "difficulty": episode.difficulty,
            "seed": self.seed,
            "path": traj.path,
            "final_node": traj.path[-1],
            "end_reason": traj.end_reason.value,
            "steps": traj.steps,
            "metrics": episode_metrics(world, episode, traj.path, solvable, dtw_threshold_m=self.dtw_threshold_m),
            "solvable": solvable,
            "instruction": episode.instruction,
            "request": episode.request,
            "start": episode.start,
            "target": episode.target,
            "stage_goals": list(episode.stage_goals),
            "stage_goals_visited": _visited_in_order(traj.path, episode.stage_goals),
            "reference_path": list(episode.reference_path),
            "actions": traj.headings,
        }
        if traj.error:
            record["error"] = traj.error
        decisions = self.policy.step_records()
        if decisions:
            record["decisions"] = decisions
        return record


def run_episode(world: World, episode: Episode, policy: Policy, seed: int, **settings: Any) -> dict[str, Any]:
    """One episode, start to end, as the JSON record episodes.jsonl stores."""
    run = EpisodeRun(world, episode, policy, seed, **settings)
    while not run.done:
        run.act()
    return run.record()


def run_together(runs: Sequence[EpisodeRun]) -> list[dict[str, Any]]:
    """Several episodes in lockstep, so a policy can decide for all of them in one batched
    model call (`Policy.act_together`). If the batched call fails, each episode is asked on
    its own, so only the episodes whose decision really fails end with `error`."""
    while True:
        active = [r for r in runs if not r.done]
        if not active:
            return [r.record() for r in runs]
        policies = [r.policy for r in active]
        actions = None
        if len(active) > 1:
            try:
                actions = type(policies[0]).act_together(policies, [r.observation for r in active])
            except Exception:
                actions = None
        if actions is None:
            for r in active:
                r.act()
        else:
            for r, action in zip(active, actions):
                r.apply(action)


def _visited_in_order(path: list[str], goals: tuple[str, ...]) -> int:
    """How many stage goals the path reached, in order (the record of two-stage progress)."""
    reached = 0
    for node in path:
        if reached < len(goals) and node == goals[reached]:
            reached += 1
    return reached


class _Runner:
    """Loaded dataset and policy; one per process."""

    def __init__(self, config: BenchmarkConfig) -> None:
        self.config = config
        self.worlds = {w.city: w for w in load_dataset(Path(config.data), config.dataset)}
        self.policy = make_policy(config.policy, **config.policy_params)
        # Loaded once here; forked workers inherit it (use --workers 1 with --batch-size on a GPU).
        self.policy.prepare()
        # Sources are made (and so checked) at start-up; images are made only for policies
        # that look at them, the others would discard them.
        sources = {city: make_view_source(config.views, w, config.view_params) if config.views else None
                   for city, w in self.worlds.items()}
        self.views = {city: v if self.policy.uses_images else None for city, v in sources.items()}
        # What defines the pixels (renderer version, settings, folder), written next to the results.
        self.view_sources = {city: v.describe() for city, v in sources.items() if v is not None}

        # One policy per lockstep slot; the VLM policy shares one loaded model between them.
        self.policies = [self.policy] + [make_policy(config.policy, **config.policy_params)
                                         for _ in range(config.batch_size - 1)]

    def start(self, task: tuple[str, int, int], policy: Policy) -> EpisodeRun:
        city, index, seed = task
        world, c = self.worlds[city], self.config
        return EpisodeRun(world, world.episodes[index], policy, seed, max_steps=c.max_steps,
                          max_invalid_retries=c.max_invalid_retries, dtw_threshold_m=c.dtw_threshold_m,
                          views=self.views[city])

    def run(self, tasks: Sequence[tuple[str, int, int]]) -> list[dict[str, Any]]:
        """Records of up to batch_size episodes, run in lockstep, in task order."""
        return run_together([self.start(t, p) for t, p in zip(tasks, self.policies)])


_WORKER: Optional[_Runner] = None


def _worker_init(config: BenchmarkConfig) -> None:
    global _WORKER
    _WORKER = _Runner(config)


def _worker_run(tasks: Sequence[tuple[str, int, int]]) -> list[dict[str, Any]]:
    assert _WORKER is not None
    return _WORKER.run(tasks)


class Benchmark:
    """`Benchmark(config).run(out_dir)` writes episodes.jsonl, summary.json and config.json."""

    def __init__(self, config: BenchmarkConfig) -> None:
        config.validate()
        self.config = config
        self.runner = _Runner(config)
        self.worlds = self.runner.worlds

    def tasks(self) -> list[tuple[str, int, int]]:
        pairs = [(w.city, i) for w in self.worlds.values() for i in range(len(w.episodes))]
        if self.config.limit is not None:
            pairs = pairs[: self.config.limit]
        return [(city, i, seed) for seed in self.config.seeds for city, i in pairs]

    def key(self, task: tuple[str, int, int]) -> tuple[str, int]:
        city, i, seed = task
        return self.worlds[city].episodes[i].episode_id, seed

    def manifest(self, command: Optional[str] = None) -> dict[str, Any]:
        import networkx
        import pyproj

        c = self.config
        return {
            **asdict(c),
            "data": str(Path(c.data).resolve()),
            "privileged": bool(getattr(POLICIES.get(c.policy), "privileged", False)),
            "cities": sorted(self.worlds),
            "synthetic": any(w.synthetic for w in self.worlds.values()),
            "view_sources": self.runner.view_sources,
            "data_files": {p: h for w in self.worlds.values() for p, h in w.source_files.items()},
            "package_version": __version__,
            "versions": {"python": platform.python_version(), "numpy": np.__version__,
                         "networkx": networkx.__version__, "pyproj": pyproj.__version__},
            "command": command or " ".join(sys.argv),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }

    def _check_resume(self, out: Path, manifest: dict[str, Any]) -> None:
        path = out / CONFIG_FILE
        if not path.exists():
            return
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc.msg}); use a new --out") from None
        changed = [k for k in RESULT_DEFINING if previous.get(k) != manifest[k]]
        if changed:
            details = "; ".join(f"{k}: {previous.get(k)!r} -> {manifest[k]!r}" for k in changed)
            raise ConfigError(f"{out} holds a run with different settings ({details}); "
                              "use a new --out or the same settings to resume")

    def run(self, out_dir: Path, progress: bool = True, command: Optional[str] = None) -> dict[str, Any]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        manifest = self.manifest(command)
        self._check_resume(out, manifest)
        write_json_atomic(out / CONFIG_FILE, manifest)
        tasks = self.tasks()
        with EpisodeLog(out / EPISODES_FILE) as log:
            done = {(r["episode_id"], r["seed"]) for r in log.records}
            todo = [t for t in tasks if self.key(t) not in done]
            bar = _progress(len(tasks), len(tasks) - len(todo), progress)
            try:
                for record in self._execute(todo):
                    log.append(record)
                    bar.update(1)
            finally:
                bar.close()
            wanted = {self.key(t) for t in tasks}
            records = [r for r in log.records if (r["episode_id"], r["seed"]) in wanted]
        summary = summarize(records)
        summary["end_reasons"] = _count(r["end_reason"] for r in records)
        if any("decisions" in r for r in records):
            summary["decisions"] = summarize_decisions(records)
        summary["config"] = manifest
        write_json_atomic(out / SUMMARY_FILE, summary)
        return summary

    def _execute(self, todo: list[tuple[str, int, int]]) -> Iterator[dict[str, Any]]:
        size = self.config.batch_size
        groups = [todo[i:i + size] for i in range(0, len(todo), size)]
        if self.config.workers == 1 or len(groups) < 2:
            for group in groups:
                yield from self.runner.run(group)
            return
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        ctx = multiprocessing.get_context(method)
        with ctx.Pool(self.config.workers, initializer=_worker_init, initargs=(self.config,)) as pool:
            # imap keeps task order, so the log is written in the same order as a serial run.
            for records in pool.imap(_worker_run, groups, chunksize=max(1, 4 // size)):
                yield from records


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def _progress(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, unit="ep", dynamic_ncols=True,
                file=sys.stderr, desc="episodes")

