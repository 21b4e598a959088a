"""Running episodes: one episode against a policy, a batch in lockstep, every round of a
supervised run, and the record each leaves. Executors call these in whatever process runs
the episodes."""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from cityseeker_ros.core.agents.memory.store import MemoryKey, MemoryStore
from cityseeker_ros.core.agents.policies import Policy, make_policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.metrics import DEFAULT_DTW_THRESHOLD_M
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.redact import redact_text
from cityseeker_ros.core.sensing.views import ViewSource, make_view_source
from cityseeker_ros.core.tasks.environment import Action, Environment, Observation, Trajectory
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.family import family_of

if TYPE_CHECKING:
    from cityseeker_ros.core.strategies import BcrPolicy


def episode_rng(seed: int, episode_id: str, round: int = 0) -> np.random.Generator:
    """Round 0 keeps the single-round stream, so adding rounds does not change the first."""
    label = f"{seed}/{episode_id}" + (f"/round{round}" if round else "")
    digest = hashlib.sha256(label.encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


class EpisodeRun:
    """One episode in progress: environment, policy and the record it ends with. A broken
    policy or backend ends this episode with end reason `error`, never the run."""

    def __init__(self, world: World, episode: Episode, policy: Policy, seed: int, *,
                 max_steps: Optional[int] = None, max_invalid_retries: int = 2,
                 dtw_threshold_m: float = DEFAULT_DTW_THRESHOLD_M, views: Optional[ViewSource] = None,
                 round: int = 0) -> None:
        """`max_steps` caps the episode's budget; None: its family's default cap, as a run's."""
        self.world, self.episode, self.policy, self.seed = world, episode, policy, seed
        if max_steps is None:
            max_steps = family_of(episode).default_max_steps()
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
    ROS where the supervisor node assembles the same inputs from messages). The episode's task
    family scores it and adds its own fields."""
    family = family_of(episode)
    budget = family.budget(episode, max_steps)
    solvable = world.solvable(episode, budget)
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
        "metrics": family.score(world, episode, traj, solvable, dtw_threshold_m=dtw_threshold_m),
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
        **family.record_fields(world, episode, traj),
    }
    if episode.budget is not None:  # the budget used (its own, the run's cap applied); needs keep their bytes
        record["budget"] = budget
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


class EpisodeRunner:
    """Loaded dataset and policy; one per process."""

    def __init__(self, config: BenchmarkConfig, worlds: Optional[dict[str, World]] = None,
                 sources: Optional[dict[str, Optional[ViewSource]]] = None, prepare: bool = True) -> None:
        """`worlds` and `sources` given: made elsewhere (a Ray worker gets the driver's through the
        object store, core/evaluation/executors/ray.py); `prepare` False leaves the model unloaded (a driver
        whose episodes run elsewhere)."""
        self.config = config
        config.check_serves()  # before the dataset loads: a run of another family's policy never starts
        self.worlds = worlds if worlds is not None else {
            w.city: w for w in load_dataset(Path(config.data), config.dataset, family=config.family)}
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
        from cityseeker_ros.core.agents.memory import make_memory_store
        from cityseeker_ros.core.strategies import BcrPolicy

        if c.memory is None:
            raise ConfigError("a supervised run needs a memory file (the benchmark sets one in --out)")
        self.memory = make_memory_store("sqlite", path=c.memory)
        self.policies = [BcrPolicy(p, c.make_strategies(), self.memory, c.run_id(), rounds=c.rounds,
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
                supervisor: BcrPolicy = self.policies[i]  # type: ignore[assignment]
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
