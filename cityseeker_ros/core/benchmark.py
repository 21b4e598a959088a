"""Run a policy over a dataset's episodes and seeds, resumably and in parallel.

Every (episode, seed) draws its randomness from a generator seeded by both, so results do
not depend on the order episodes run in or on which worker runs them, and a serial and a
parallel run write the same episodes.jsonl.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from cityseeker_ros import __version__
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.decisions import summarize_decisions
from cityseeker_ros.core.environment import DEFAULT_MAX_STEPS, Action, Environment, Observation, Trajectory
from cityseeker_ros.core.episode import Episode, World
from cityseeker_ros.core.errors import ConfigError
from cityseeker_ros.core.memory.store import MemoryKey, MemoryStore
from cityseeker_ros.core.metrics import DEFAULT_DTW_THRESHOLD_M, episode_metrics, summarize
from cityseeker_ros.core.policies import POLICIES, Policy, make_policy
from cityseeker_ros.core.redact import redact, redact_command, redact_text
from cityseeker_ros.core.results import EpisodeLog, write_json_atomic
from cityseeker_ros.core.text import clean_json
from cityseeker_ros.core.views import VIEW_SOURCES, ViewSource, make_view_source

if TYPE_CHECKING:
    from cityseeker_ros.core.supervisor import Supervisor

EPISODES_FILE = "episodes.jsonl"
SUMMARY_FILE = "summary.json"
CONFIG_FILE = "config.json"
# Settings that change results: a resumed run must match them exactly.
RESULT_DEFINING = ("data_files", "dataset", "policy", "policy_params", "max_steps",
                   "max_invalid_retries", "dtw_threshold_m", "views", "view_params", "view_sources",
                   "strategies", "rounds", "max_backtracks", "follow_hints", "prompt")
MEMORY_FILE = "memory.sqlite"
# The command a user typed, for the processes it started (`cityseeker run` sets it for its ROS
# nodes): config.json records that command, not the evaluator node's own command line.
RUN_COMMAND_ENV = "CITYSEEKER_RUN_COMMAND"


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
    # Only the first N episodes of each category in each city, in load order: a small run that
    # still covers every category, the same episodes on every machine (then `limit` applies).
    per_category: Optional[int] = None
    workers: int = 1
    dtw_threshold_m: float = DEFAULT_DTW_THRESHOLD_M
    views: Optional[str] = None  # a view source name; None = headings only, no images
    view_params: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 1  # episodes run in lockstep per process, so a VLM decides for all in one call
    # BCR strategies ({"name": "B1", ...params}; privileged ones need "oracle": true) and rounds
    # per episode; with either, a supervisor runs the policy and remembers in `memory`.
    strategies: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 1
    max_backtracks: int = 3
    follow_hints: str = "auto"
    memory: Optional[str] = None  # SQLite file; None: memory.sqlite in the output folder
    executor: str = "local"  # where episodes run: core/executors (local process pool, ray)
    ray_address: Optional[str] = None  # --executor ray: a cluster to join; None starts a local instance

    @property
    def supervised(self) -> bool:
        return bool(self.strategies) or self.rounds > 1

    def run_id(self) -> str:
        """Names this run's memory: the same settings resume the same memory."""
        settings = {k: getattr(self, k) for k in ("dataset", "policy", "policy_params", "max_steps",
                                                   "max_invalid_retries", "views", "view_params", "strategies",
                                                   "rounds", "max_backtracks", "follow_hints")}
        settings["data"] = str(Path(self.data).resolve())
        return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def make_strategies(self) -> list[Any]:
        from cityseeker_ros.core.supervisor import make_strategy

        if not isinstance(self.strategies, list):
            raise ConfigError(f"strategies must be a list, got {self.strategies!r}")
        return [make_strategy(spec) for spec in self.strategies]

    def validate(self) -> None:
        from cityseeker_ros.core.executors import EXECUTORS

        POLICIES.get(self.policy)
        EXECUTORS.get(self.executor)
        self.make_strategies()
        if self.views is not None:
            VIEW_SOURCES.get(self.views)
        if not isinstance(self.view_params, dict):
            raise ConfigError(f"view parameters must be a mapping, got {self.view_params!r}")
        for name in ("max_steps", "max_invalid_retries", "workers", "limit", "per_category", "batch_size", "rounds",
                     "max_backtracks"):
            value = getattr(self, name)
            optional = name in ("limit", "per_category") and value is None
            if not (isinstance(value, int) and not isinstance(value, bool)) and not optional:
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
        if self.per_category is not None and self.per_category < 1:
            raise ConfigError(f"--per-category must be >= 1, got {self.per_category}")
        if self.workers < 1:
            raise ConfigError(f"--workers must be >= 1, got {self.workers}")
        if self.batch_size < 1:
            raise ConfigError(f"--batch-size must be >= 1, got {self.batch_size}")
        if self.rounds < 1:
            raise ConfigError(f"--rounds must be >= 1, got {self.rounds}")
        if self.dtw_threshold_m <= 0:
            raise ConfigError(f"dtw threshold must be > 0 m, got {self.dtw_threshold_m}")


def episode_rng(seed: int, episode_id: str, round: int = 0) -> np.random.Generator:
    """Round 0 keeps the single-round stream, so adding rounds does not change the first."""
    label = f"{seed}/{episode_id}" + (f"/round{round}" if round else "")
    digest = hashlib.sha256(label.encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


class EpisodeRun:
    """One episode in progress: environment, policy and the record it ends with. A broken
    policy or backend ends this episode with end reason `error`, never the run."""

    def __init__(self, world: World, episode: Episode, policy: Policy, seed: int, *,
                 max_steps: int = DEFAULT_MAX_STEPS, max_invalid_retries: int = 2,
                 dtw_threshold_m: float = DEFAULT_DTW_THRESHOLD_M, views: Optional[ViewSource] = None,
                 round: int = 0) -> None:
        self.world, self.episode, self.policy, self.seed = world, episode, policy, seed
        self.max_steps, self.dtw_threshold_m = max_steps, dtw_threshold_m
        self.env = Environment(world, max_steps=max_steps, max_invalid_retries=max_invalid_retries, views=views)
        self.observation = self.env.reset(episode)
        self.observed: list[dict[str, Any]] = []  # what the agent was shown at each step it acted
        self._guard(lambda: policy.reset(episode, episode_rng(seed, episode.episode_id, round),
                                         world if policy.privileged else None))

    @property
    def done(self) -> bool:
        return self.env.done

    def _guard(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:
            self.env.fail(redact_text(f"{type(exc).__name__}: {exc}"))  # a message may quote a key
            return None

    def note(self) -> None:
        note_observation(self.observed, self.observation)

    def act(self) -> None:
        self.note()
        self.apply(self._guard(lambda: self.policy.act(self.observation)))

    def apply(self, action: Union[Action, Exception, None]) -> None:
        """Take the action; an exception in its place (from a batched call) ends the episode."""
        if isinstance(action, Exception):
            self.env.fail(redact_text(f"{type(action).__name__}: {action}"))
        elif action is not None and not self.done:
            self.observation = self._guard(lambda: self.env.step(action).observation) or self.observation

    def record(self) -> dict[str, Any]:
        return episode_record(self.world, self.episode, self.seed, self.env.trajectory, self.observed,
                              max_steps=self.max_steps, dtw_threshold_m=self.dtw_threshold_m,
                              decisions=self.policy.step_records(), extras=self.policy.episode_extras())


def note_observation(observed: list[dict[str, Any]], obs: Observation) -> None:
    """Log the observation about to be acted on (once per step: retries show the same views)."""
    if observed and observed[-1]["step"] == obs.step:
        return
    observed.append({"step": obs.step, "node": obs.node, "facing": round(obs.facing, 2),
                     "views": [{"index": v.index, "heading": round(v.heading, 2),
                                "relative": v.relative.value} for v in obs.views]})


def episode_record(world: World, episode: Episode, seed: int, traj: Trajectory, observed: list[dict[str, Any]], *,
                   max_steps: int, dtw_threshold_m: float, decisions: Sequence[dict[str, Any]] = (),
                   extras: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The episodes.jsonl record of one finished episode, wherever it ran (in process, or over
    ROS where the supervisor node assembles the same inputs from messages)."""
    solvable = world.solvable(episode, max_steps)
    record = {
        "episode_id": episode.episode_id,
        "city": episode.city,
        "category": episode.category,
        "difficulty": episode.difficulty,
        "seed": seed,
        "path": traj.path,
        "final_node": traj.path[-1],
        "end_reason": traj.end_reason.value,
        "steps": traj.steps,
        "metrics": episode_metrics(world, episode, traj.path, solvable, dtw_threshold_m=dtw_threshold_m),
        "solvable": solvable,
        "instruction": episode.instruction,
        "request": episode.request,
        "start": episode.start,
        "target": episode.target,
        "stage_goals": list(episode.stage_goals),
        "stage_goals_visited": _visited_in_order(traj.path, episode.stage_goals),
        "reference_path": list(episode.reference_path),
        "actions": traj.headings,
        # Coordinates, so reports and failure analysis need nothing but this record.
        "path_latlon": _latlon(world, traj.path),
        "reference_latlon": _latlon(world, episode.reference_path),
        "target_latlon": _latlon(world, [episode.target])[0],
        "observed": observed,
    }
    if traj.error:
        record["error"] = traj.error
    if decisions:
        record["decisions"] = list(decisions)
    record.update(extras or {})
    return record


def _latlon(world: World, nodes: Sequence[str]) -> list[list[float]]:
    return [[round(world.graph.nodes[n].lat, 7), round(world.graph.nodes[n].lon, 7)] for n in nodes]


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
        for r in active:
            r.note()
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

    def __init__(self, config: BenchmarkConfig, worlds: Optional[dict[str, World]] = None,
                 sources: Optional[dict[str, Optional[ViewSource]]] = None, prepare: bool = True) -> None:
        """`worlds` and `sources` given: made elsewhere (a Ray worker gets the driver's through the
        object store, core/executors/ray.py); `prepare` False leaves the model unloaded (a driver
        whose episodes run elsewhere)."""
        self.config = config
        self.worlds = worlds if worlds is not None else {w.city: w for w in load_dataset(Path(config.data),
                                                                                         config.dataset)}
        self.policy = make_policy(config.policy, **config.policy_params)
        # Loaded once here; forked workers inherit it (use --workers 1 with --batch-size on a GPU).
        if prepare:
            self.policy.prepare()
        # Sources are made (and so checked) at start-up; images are made only for policies
        # that look at them, the others would discard them.
        if sources is None:
            sources = {city: make_view_source(config.views, w, config.view_params) if config.views else None
                       for city, w in self.worlds.items()}
        self.sources = sources
        self.views = {city: v if self.policy.uses_images else None for city, v in sources.items()}
        # What defines the pixels (renderer version, settings, folder), written next to the results.
        self.view_sources = {city: v.describe() for city, v in sources.items() if v is not None}

        # One policy per lockstep slot; the VLM policy shares one loaded model between them.
        self.policies = [self.policy] + [make_policy(config.policy, **config.policy_params)
                                         for _ in range(config.batch_size - 1)]
        self.memory: Optional[MemoryStore] = None

    def supervise(self) -> None:
        """Wrap each slot's policy in a supervisor with its strategies and the run's memory (once
        the memory file is known: it lives in the output folder unless configured)."""
        c = self.config
        if not c.supervised or self.memory is not None:
            return
        from cityseeker_ros.core.memory import make_memory_store
        from cityseeker_ros.core.supervisor import Supervisor

        if c.memory is None:
            raise ConfigError("a supervised run needs a memory file (the benchmark sets one in --out)")
        self.memory = make_memory_store("sqlite", path=c.memory)
        self.policies = [Supervisor(p, c.make_strategies(), self.memory, c.run_id(), rounds=c.rounds,
                                    max_backtracks=c.max_backtracks, follow_hints=c.follow_hints)
                         for p in self.policies]

    def start(self, task: tuple[str, int, int], policy: Policy, round: int = 0) -> EpisodeRun:
        city, index, seed = task
        world, c = self.worlds[city], self.config
        return EpisodeRun(world, world.episodes[index], policy, seed, max_steps=c.max_steps,
                          max_invalid_retries=c.max_invalid_retries, dtw_threshold_m=c.dtw_threshold_m,
                          views=self.views[city], round=round)

    def run(self, tasks: Sequence[tuple[str, int, int]]) -> list[dict[str, Any]]:
        """Records of up to batch_size episodes, run in lockstep, in task order."""
        if not self.config.supervised:
            return run_together([self.start(t, p) for t, p in zip(tasks, self.policies)])
        return self._run_rounds(tasks)

    def _run_rounds(self, tasks: Sequence[tuple[str, int, int]]) -> list[dict[str, Any]]:
        """Every round of each episode, in lockstep per round; rounds the memory holds as finished
        (a resumed run) are taken from it rather than run again."""
        self.supervise()
        assert self.memory is not None
        c = self.config
        keys = [MemoryKey(c.run_id(), self.worlds[city].episodes[i].episode_id, seed) for city, i, seed in tasks]
        rounds = [resumed_rounds(self.memory, key, c.rounds) for key in keys]
        for r in range(c.rounds):
            todo = [i for i, rs in enumerate(rounds) if len(rs) == r]
            runs = []
            for i in todo:
                supervisor: Supervisor = self.policies[i]  # type: ignore[assignment]
                supervisor.begin_round(tasks[i][2], r)
                runs.append(self.start(tasks[i], supervisor, r))
            for i, run, record in zip(todo, runs, run_together(runs)):
                run.policy.finish_round(record)  # type: ignore[attr-defined]
                rounds[i].append(record)
        return [with_rounds(rs) for rs in rounds]


def resumed_rounds(memory: MemoryStore, key: MemoryKey, rounds: int) -> list[dict[str, Any]]:
    """Records of the leading rounds the memory holds as finished (a resumed run skips them).
    The final round is never skipped: its record is in episodes.jsonl once written."""
    finished = {r.round: r.extra["record"] for r in memory.finished_rounds(key)}
    done: list[dict[str, Any]] = []
    while len(done) < rounds - 1 and len(done) in finished:
        done.append(finished[len(done)])
    return done


def with_rounds(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The final round's record, with the earlier rounds summarised beside it."""
    final = dict(records[-1])
    if len(records) > 1:
        final["rounds"] = [{"round": n, **{k: rec.get(k) for k in ("path", "actions", "end_reason", "steps",
                                                                     "metrics", "supervisor")}}
                           for n, rec in enumerate(records[:-1])]
    return final


class Benchmark:
    """`Benchmark(config).run(out_dir)` writes episodes.jsonl, summary.json and config.json."""

    def __init__(self, config: BenchmarkConfig) -> None:
        from cityseeker_ros.core.executors import EXECUTORS

        config.validate()
        self.config = config
        self.executor = EXECUTORS.get(config.executor)
        self.runner = _Runner(config, prepare=self.executor.prepares_in_driver)
        self.execution: dict[str, Any] = {}
        self.worlds = self.runner.worlds

    def tasks(self) -> list[tuple[str, int, int]]:
        return run_tasks(self.config, self.worlds)

    def key(self, task: tuple[str, int, int]) -> tuple[str, int]:
        city, i, seed = task
        return self.worlds[city].episodes[i].episode_id, seed

    def manifest(self, command: Optional[str] = None) -> dict[str, Any]:
        return run_manifest(self.config, self.worlds, self.runner.view_sources, command)

    def run(self, out_dir: Path, progress: bool = True, command: Optional[str] = None) -> dict[str, Any]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        if self.config.supervised and self.config.memory is None:
            self.config.memory = str((out / MEMORY_FILE).resolve())
        tasks = self.tasks()
        with RunOutput(out, self.manifest(command), [self.key(t) for t in tasks], group_commit=True) as output:
            todo = [t for t in tasks if self.key(t) not in output.done]
            bar = _progress(len(tasks), len(tasks) - len(todo), progress)
            try:
                for record in self._execute(todo):
                    output.add(record)
                    bar.update(1)
            finally:
                bar.close()
            return output.write_summary(self.execution)

    def _execute(self, todo: list[tuple[str, int, int]]) -> Iterator[dict[str, Any]]:
        """Records of `todo` in task order, from the configured executor (core/executors)."""
        size = self.config.batch_size
        groups = [todo[i:i + size] for i in range(0, len(todo), size)]
        executor = self.executor(self.config)
        self.execution = executor.stats  # filled in as it runs; summary.json's "execution"
        yield from executor.records(self.runner, groups)


def run_tasks(config: BenchmarkConfig, worlds: dict[str, World]) -> list[tuple[str, int, int]]:
    """(city, episode index, seed) in run order: every episode for the first seed, then the next.
    `per_category` keeps the first N episodes of each category of each city in load order, then
    `limit` the first K of what is left."""
    pairs = []
    for w in worlds.values():
        taken: Counter[str] = Counter()
        for i, episode in enumerate(w.episodes):
            taken[episode.category] += 1
            if config.per_category is None or taken[episode.category] <= config.per_category:
                pairs.append((w.city, i))
    if config.limit is not None:
        pairs = pairs[: config.limit]
    return [(city, i, seed) for seed in config.seeds for city, i in pairs]


def run_manifest(config: BenchmarkConfig, worlds: dict[str, World], view_sources: dict[str, Any],
                 command: Optional[str] = None) -> dict[str, Any]:
    """config.json: the settings, what the data and pixels were, versions; written next to the
    results, with every credential masked (core/redact.py): results are shared, keys are not."""
    import networkx
    import pyproj

    from cityseeker_ros.core.vlm.prompt_profiles import prompt_record

    c = config
    return clean_json(redact({
        **asdict(c),
        "data": str(Path(c.data).resolve()),
        "privileged": bool(getattr(POLICIES.get(c.policy), "privileged", False))
        or any(s.get("oracle") for s in c.strategies),
        "oracle_strategies": [s["name"] for s in c.strategies if s.get("oracle")],
        "run_id": c.run_id(),
        "cities": sorted(worlds),
        "synthetic": any(w.synthetic for w in worlds.values()),
        "view_sources": view_sources,
        "prompt": prompt_record(c.policy, c.policy_params),  # profile, version, template hash
        "data_files": resolved_keys({p: h for w in worlds.values() for p, h in w.source_files.items()}),
        "package_version": __version__,
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "networkx": networkx.__version__, "pyproj": pyproj.__version__},
        "command": os.environ.get(RUN_COMMAND_ENV) or command or redact_command(sys.argv),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }))


def check_resume(out: Path, manifest: dict[str, Any]) -> None:
    """A folder that holds a run with other result-defining settings is never appended to. Paths
    are compared resolved, so `worlds/x` and `/home/me/worlds/x` are the same data; the refusal
    names only the settings that differ, down to the changed entry of a mapping."""
    path = out / CONFIG_FILE
    if not path.exists():
        return
    try:
        previous = clean_json(redact(json.loads(path.read_text(encoding="utf-8"))))  # as a manifest is now
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg}); use a new --out") from None
    if not isinstance(previous, dict):
        raise ConfigError(f"{path}: expected a JSON object; use a new --out")
    before, now = comparable(previous), comparable(manifest)
    changed = [line for k in RESULT_DEFINING for line in differences(k, before.get(k), now.get(k))]
    if changed:
        raise ConfigError(f"{out} holds a run with different settings ({'; '.join(changed)}); "
                          "use a new --out or the same settings to resume")


def resolved_keys(files: dict[str, Any]) -> dict[str, Any]:
    """A path -> value mapping keyed by absolute, symlink-free paths (relative ones from the
    current folder)."""
    return {str(Path(p).resolve()): v for p, v in files.items()}


def comparable(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as check_resume compares it: data file paths resolved (a config.json written
    before they were), and the view parameters that every view source describes left to those
    descriptions, which hold them in canonical form (a panorama folder resolved)."""
    out = dict(manifest)
    if isinstance(out.get("data_files"), dict):
        out["data_files"] = resolved_keys(out["data_files"])
    described = [set(d) for d in (out.get("view_sources") or {}).values() if isinstance(d, dict)]
    if described and isinstance(out.get("view_params"), dict):
        out["view_params"] = {k: v for k, v in out["view_params"].items() if k not in set.intersection(*described)}
    return out


_ABSENT = object()


def differences(key: str, before: Any, now: Any) -> list[str]:
    """`key: old -> new` for each leaf that differs, mappings followed entry by entry
    (`data_files[/w/graph.json]: 'ab..' -> 'cd..'`, `policy_params.temperature: 0 -> 0.2`)."""
    if before == now:
        return []
    if isinstance(before, dict) and isinstance(now, dict):
        lines = []
        for k in [*before, *(k for k in now if k not in before)]:
            sub = f"{key}[{k}]" if "/" in str(k) or " " in str(k) else f"{key}.{k}"
            lines += differences(sub, before.get(k, _ABSENT), now.get(k, _ABSENT))
        return lines

    def shown(value: Any) -> str:
        return "(absent)" if value is _ABSENT else repr(value)
    return [f"{key}: {shown(before)} -> {shown(now)}"]


class RunOutput:
    """An output folder being filled, by `Benchmark.run` or by the evaluator node: config.json
    checked against a run it may resume and written, records appended to episodes.jsonl (each
    (episode, seed) once), summary.json over the wanted tasks in log order. `group_commit`:
    records reach the disk in batches (core/group_commit.py), for a writer fed by many workers."""

    def __init__(self, out: Path, manifest: dict[str, Any], wanted: Sequence[tuple[str, int]],
                 group_commit: bool = False) -> None:
        from cityseeker_ros.core.group_commit import GroupCommitLog

        self.out, self.manifest, self.wanted = Path(out), manifest, set(wanted)
        self.out.mkdir(parents=True, exist_ok=True)
        check_resume(self.out, manifest)
        write_json_atomic(self.out / CONFIG_FILE, manifest)
        self.log = (GroupCommitLog if group_commit else EpisodeLog)(self.out / EPISODES_FILE)
        self.done = {(r["episode_id"], r["seed"]) for r in self.log.records}

    @property
    def complete(self) -> bool:
        return self.wanted <= self.done

    def add(self, record: dict[str, Any]) -> bool:
        """Append a record; False (and nothing written) when its (episode, seed) is already there."""
        key = (record["episode_id"], record["seed"])
        if key in self.done:
            return False
        self.log.append(record)
        self.done.add(key)
        return True

    def write_summary(self, execution: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        """`execution`: how the episodes of this session ran (the executor's actors and retries)."""
        if hasattr(self.log, "flush"):
            self.log.flush()
        records = [r for r in self.log.records if (r["episode_id"], r["seed"]) in self.wanted]
        summary = run_summary(records, self.manifest)
        if execution:
            summary["execution"] = execution
        write_json_atomic(self.out / SUMMARY_FILE, summary)
        return summary

    def close(self) -> None:
        self.log.close()

    def __enter__(self) -> RunOutput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_summary(records: Sequence[dict[str, Any]], manifest: dict[str, Any]) -> dict[str, Any]:
    """summary.json of a run's records."""
    summary = summarize(records)
    summary["end_reasons"] = _count(r["end_reason"] for r in records)
    if any("decisions" in r for r in records):
        summary["decisions"] = summarize_decisions(records)
    summary["config"] = manifest
    return summary


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def _progress(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, unit="ep", dynamic_ncols=True,
                file=sys.stderr, desc="episodes")

