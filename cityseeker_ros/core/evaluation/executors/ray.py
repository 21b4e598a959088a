"""`--executor ray`: episodes on Ray actors, on this machine or a cluster; the driver writes.

- The driver puts the worlds (and view sources) into Ray's object store once; actors read them
  from there, so worker nodes need the package but no copy of the data.
- An actor builds the policy once (a model is loaded once per actor: `prepare`) and runs groups of
  `--batch-size` tasks in lockstep. A task is all rounds of one (episode, seed), so an episode's
  memory never leaves its actor mid-episode: the actor runs against a private in-process store,
  seeded with the rounds the driver's memory already holds (a resumed run), and hands every row
  back with the record. The driver alone writes episodes.jsonl, summary.json and memory.sqlite.
- Records are written in task order, so the bytes equal a serial run's; a result that arrives
  early waits in the driver until the ones before it are written (and is run again if the driver
  dies first: only what is written counts as done, as with the local pool).
- A group whose actor dies (a killed process, a removed node) or that raises is run again, one
  episode per call, on a fresh actor; an episode that fails `RETRIES` more times ends with an
  `error` record instead of hanging the run. Ctrl-C (or any exit) kills the actors this run
  started, and a Ray instance it started is shut down.
"""
from __future__ import annotations

import logging
import os
import socket
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from cityseeker_ros.core.agents.memory.store import MemoryKey, MemoryStore
from cityseeker_ros.core.agents.memory.transfer import EpisodeMemory, export_episode, import_episode
from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.evaluation.episode_run import EpisodeRunner, episode_record, resumed_rounds
from cityseeker_ros.core.evaluation.executors.base import EXECUTORS, Executor, RunKey
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.environment import Environment

RETRIES = 2  # further attempts of an episode after its first failure
QUEUE_DEPTH = 2  # calls queued per actor, so it never waits for the driver between groups
START_FAILURES = 20  # actors dying while they start, in a row, before the run gives up
WORKER_MEMORY = ":memory:"  # an actor's private store; rows go back to the driver with the record


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'cityseeker_ros[ray]'") from None
    return ray


class EpisodeWorker:
    """The body of one Ray actor: a runner over the shipped worlds, built once. Made into an actor
    by `ray.remote` at run time, so importing this module needs no Ray."""

    def __init__(self, config: Any, payload: tuple[dict[str, Any], dict[str, Any]], policy_class: type) -> None:
        import ray

        node = ray.get_runtime_context().get_node_id()
        self.where = f"node {node[:12]} on {socket.gethostname()}, pid {os.getpid()}"
        self.error: Optional[str] = None
        try:
            # A policy registered by the driver's own code (a plugin, a test) exists here too:
            # unpickling its class imports its module, which registers it, or it is registered now.
            if config.policy not in POLICIES:
                POLICIES.register(config.policy)(policy_class)
            worlds, sources = payload
            self.runner: Optional[EpisodeRunner] = EpisodeRunner(config, worlds=worlds, sources=sources)
        except Exception as exc:  # reported by ready(): a missing model folder on this node, say
            self.runner, self.error = None, f"{type(exc).__name__}: {exc}"

    def ready(self) -> tuple[Optional[str], str]:
        """(start-up error or None, where this actor runs)."""
        return self.error, self.where

    def run(self, tasks: Sequence[RunKey], seeds: Sequence[Optional[EpisodeMemory]]
            ) -> tuple[list[dict[str, Any]], list[Optional[EpisodeMemory]]]:
        """Records of `tasks` in lockstep, and each one's memory rows (supervised runs)."""
        runner = self.runner
        assert runner is not None, self.error
        keys = _keys(runner, tasks)
        if runner.config.supervised:
            runner.supervise()
            for key, seed in zip(keys, seeds):
                import_episode(runner.memory, key, seed or EpisodeMemory())
        records = runner.run(tasks)
        memories: list[Optional[EpisodeMemory]] = [None] * len(tasks)
        if runner.config.supervised:
            memories = [export_episode(runner.memory, key) for key in keys]
            for key in keys:
                runner.memory.forget(key)
        return records, memories


def _keys(runner: EpisodeRunner, tasks: Sequence[RunKey]) -> list[MemoryKey]:
    c = runner.config
    return [MemoryKey(c.run_id(), runner.worlds[city].episodes[i].episode_id, seed) for city, i, seed in tasks]


def failed_record(runner: EpisodeRunner, task: RunKey, message: str) -> dict[str, Any]:
    """The record of an episode that could not be run at all: it ends at its start with `error`."""
    city, i, seed = task
    world, c = runner.worlds[city], runner.config
    episode = world.episodes[i]
    env = Environment(world, max_steps=c.max_steps, max_invalid_retries=c.max_invalid_retries)
    env.reset(episode)
    env.fail(message)
    return episode_record(world, episode, seed, env.trajectory, [], max_steps=c.max_steps,
                          dtw_threshold_m=c.dtw_threshold_m)


def actor_resources(config: Any, cluster: dict[str, float]) -> dict[str, float]:
    """What one actor asks Ray for. A local model (`vlm` with the transformers backend) takes a
    GPU when the cluster has any; everything else (a remote OpenAI-compatible server, whose
    `max_concurrency` limit holds per actor, or a CPU policy) one CPU."""
    params = config.policy_params
    local_model = config.policy == "vlm" and params.get("backend") == "transformers"
    if local_model and cluster.get("GPU", 0) >= 1:
        return {"num_cpus": 1, "num_gpus": 1}
    return {"num_cpus": 1, "num_gpus": 0}


def actor_count(config: Any, resources: dict[str, float], cluster: dict[str, float]) -> int:
    """--workers when given (> 1), else as many actors as the cluster has room for."""
    if config.workers > 1:
        return config.workers
    if resources["num_gpus"]:
        return max(1, int(cluster.get("GPU", 0) // resources["num_gpus"]))
    return max(1, int(cluster.get("CPU", 1) // resources["num_cpus"]))


@dataclass
class _Work:
    positions: list[int]  # indices into the run's task list
    attempt: int = 0


@dataclass
class _Slot:
    """One actor: starting (`ready` pending), idle or busy with up to QUEUE_DEPTH calls."""

    handle: Any
    ready: Any
    where: str = "?"
    calls: list[Any] = field(default_factory=list)  # in submission order: the first one is running
    culprit: Any = None  # the call that was running when the actor died

    @property
    def busy(self) -> int:
        return len(self.calls)


@EXECUTORS.register("ray")
class RayExecutor(Executor):
    prepares_in_driver = False  # models load on the actors, not on a driver that may have no GPU

    def records(self, runner: EpisodeRunner, groups: Sequence[Sequence[RunKey]]) -> Iterator[dict[str, Any]]:
        if not groups:
            return
        ray = connect(self.config.ray_address)
        run = _RayRun(ray, runner, self.config, groups, self.stats)
        try:
            yield from run.stream()
        finally:
            run.stop()


_JOINED: list[Optional[str]] = []  # the address this process called ray.init with, if it did


def connect(address: Optional[str]) -> Any:
    """Ray, initialised for `address` (None: a local instance). The connection is kept for the
    process's later runs (an ablation's cells share one instance; Ray shuts it down at exit).
    A connection the caller made itself is used as it is."""
    ray = _ray()
    if ray.is_initialized():
        if not _JOINED or _JOINED[-1] == address:
            return ray
        ray.shutdown()
    _JOINED.clear()
    try:
        # No address: always a new local instance ("local"), never a cluster some earlier process
        # left in /tmp/ray/ray_current_cluster, which may be dead (ray.init would wait on it).
        ray.init(address=address or "local", include_dashboard=False, logging_level=logging.ERROR,
                 log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise ConfigError(f"--ray-address {address}: cannot join the Ray cluster: {_first_line(exc)}") from None
    _JOINED.append(address)
    return ray


class _RayRun:
    """The driver's loop: hand groups to free actors, replace dead actors, write in task order."""

    def __init__(self, ray: Any, runner: EpisodeRunner, config: Any, groups: Sequence[Sequence[RunKey]],
                 stats: dict[str, Any]) -> None:
        self.ray, self.runner, self.config = ray, runner, config
        self.tasks = [t for g in groups for t in g]
        self.todo: deque[_Work] = deque()
        position = 0
        for g in groups:
            self.todo.append(_Work(list(range(position, position + len(g)))))
            position += len(g)
        self.memory: Optional[MemoryStore] = None
        if config.supervised:
            from cityseeker_ros.core.agents.memory import make_memory_store

            self.memory = make_memory_store("sqlite", path=config.memory)
        cluster = ray.cluster_resources()
        self.resources = actor_resources(config, cluster)
        self.count = min(actor_count(config, self.resources, cluster), len(groups))
        worker_config = replace(config, memory=WORKER_MEMORY, workers=1)
        # Shipped once; every actor (and every replacement) reads the same objects.
        self.payload = ray.put(({c: w for c, w in runner.worlds.items()}, runner.sources))
        self.actor_class = ray.remote(EpisodeWorker).options(max_restarts=0, scheduling_strategy="SPREAD",
                                                               **self.resources)
        self.worker_config = worker_config
        self.slots: list[_Slot] = []
        self.inflight: dict[Any, tuple[_Slot, _Work]] = {}
        self.start_failures = 0
        # summary.json's "execution": per actor (node, pid) the episodes and decisions it ran.
        self.stats = stats
        stats.update({"executor": "ray", "actors": {}, "retried_episodes": 0, "actors_replaced": 0,
                      "failed_episodes": 0, "actor_resources": self.resources})
        self.done: dict[int, dict[str, Any]] = {}  # finished, waiting for their turn to be written
        self.memories: dict[int, Optional[EpisodeMemory]] = {}

    def _start_actor(self) -> None:
        handle = self.actor_class.remote(self.worker_config, self.payload, POLICIES.get(self.config.policy))
        self.slots.append(_Slot(handle, handle.ready.remote()))

    def stream(self) -> Iterator[dict[str, Any]]:
        ray = self.ray
        for _ in range(self.count):
            self._start_actor()
        written = 0
        while written < len(self.tasks):
            self._dispatch()
            waiting = [s.ready for s in self.slots if s.ready is not None] + list(self.inflight)
            ready, _ = ray.wait(waiting, num_returns=1, timeout=1.0)
            for ref in ready:
                if ref in self.inflight:
                    self._finished(ref)
                else:
                    self._started(ref)
            while written in self.done:  # write in task order: the serial run's bytes
                record = self.done.pop(written)
                memory = self.memories.pop(written, None)
                if self.memory is not None and memory is not None:
                    import_episode(self.memory, self._key(written), memory)
                yield record
                written += 1

    def _key(self, position: int) -> MemoryKey:
        return _keys(self.runner, [self.tasks[position]])[0]

    def _started(self, ref: Any) -> None:
        slot = next(s for s in self.slots if s.ready == ref)
        slot.ready = None
        try:
            error, slot.where = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # died while starting (a removed node)
            self._replace(slot, f"actor died while starting: {_first_line(exc)}", starting=True)
            return
        if error is not None:
            raise ConfigError(f"Ray worker {slot.where} could not start: {error} (model weights and any other "
                              "files a policy reads must exist at the same path on every Ray node)")
        self.start_failures = 0

    def _replace(self, slot: _Slot, why: str, starting: bool = False) -> None:
        self.slots.remove(slot)
        self.stats["actors_replaced"] += 1
        _kill(self.ray, slot.handle)
        self.start_failures += starting
        if self.start_failures > START_FAILURES:
            raise RuntimeError(f"Ray actors keep dying as they start ({why})")
        self._start_actor()

    def _dispatch(self) -> None:
        """Queue work on started actors, the least busy first, up to QUEUE_DEPTH each."""
        while self.todo:
            free = [s for s in self.slots if s.ready is None and s.busy < QUEUE_DEPTH]
            if not free:
                return
            slot = min(free, key=lambda s: s.busy)
            work = self.todo.popleft()
            tasks = [self.tasks[p] for p in work.positions]
            seeds = [self._seed(p) for p in work.positions]
            ref = slot.handle.run.remote(tasks, seeds)
            slot.calls.append(ref)
            self.inflight[ref] = (slot, work)

    def _seed(self, position: int) -> Optional[EpisodeMemory]:
        """The leading finished rounds the driver's memory holds for this task (a resumed run)."""
        if self.memory is None:
            return None
        key = self._key(position)
        done = len(resumed_rounds(self.memory, key, self.config.rounds))
        return export_episode(self.memory, key, range(done))

    def _finished(self, ref: Any) -> None:
        slot, work = self.inflight.pop(ref)
        try:
            records, rows = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            self._failed(slot, ref, work, exc)
            return
        finally:
            slot.calls.remove(ref)
        for position, record, memory in zip(work.positions, records, rows):
            self.done[position], self.memories[position] = record, memory
        actor = self.stats["actors"].setdefault(slot.where, {"episodes": 0, "decisions": 0})
        actor["episodes"] += len(records)
        actor["decisions"] += sum(_decisions(r) for r in records)

    def _failed(self, slot: _Slot, ref: Any, work: _Work, exc: BaseException) -> None:
        """Run a failed group again one episode per call (so one bad episode fails alone); an
        episode out of attempts gets an error record. When an actor dies, only the call it was
        running counts as an attempt: the calls queued behind it never started."""
        counts = True
        if isinstance(exc, self.ray.exceptions.RayActorError):
            if slot.culprit is None:
                slot.culprit = slot.calls[0]
            counts = ref == slot.culprit
            if slot in self.slots:
                self._replace(slot, str(exc))
        attempt = work.attempt + counts
        retry = []
        for position in work.positions:
            if attempt > RETRIES:
                message = f"ray: failed {attempt} times; last: {type(exc).__name__}: {_first_line(exc)}"
                # Stored like a finished result, written in its turn.
                self.done[position] = failed_record(self.runner, self.tasks[position], message)
                self.memories[position] = None
                self.stats["failed_episodes"] += 1
            else:
                retry.append(_Work([position], attempt))
                self.stats["retried_episodes"] += 1
        self.todo.extendleft(reversed(retry))

    def stop(self) -> None:
        """Kill every actor this run started (their calls in flight end with them)."""
        for slot in self.slots:
            _kill(self.ray, slot.handle)
        self.slots.clear()
        self.inflight.clear()
        if self.memory is not None:
            self.memory.close()


def _decisions(record: dict[str, Any]) -> int:
    """Steps the policy decided, over every round of the record."""
    return record.get("steps", 0) + sum(r.get("steps") or 0 for r in record.get("rounds", ()))


def _kill(ray: Any, handle: Any) -> None:
    try:
        ray.kill(handle, no_restart=True)
    except Exception:  # already gone, or the cluster with it
        pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[-1][:300] if text else ""
