"""The replay loop a goal server drives (supervisor mode episodes): no plan of its own, each goal
runs one dataset task on the replay world, all its rounds, as the in-process benchmark runs it.
A goal the loop cannot run is refused with a code and a one-line reason before anything starts;
every step is reported as the goal's feedback says it; a cancel ends the task through the world
node, as a failed decision does, so its record is still written."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from cityseeker_ros.core.agents.memory.store import MemoryStore
from cityseeker_ros.core.agents.policies.base import Decision
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.guidance import guide_action
from cityseeker_ros.core.loop.replay import ReplayLoop
from cityseeker_ros.core.loop.run_plan import RunPlan, SeededEpisode
from cityseeker_ros.core.loop.seek import path_length_m
from cityseeker_ros.core.loop.served import NOT_READY
from cityseeker_ros.core.loop.state_machine import Outputs, ViewSet
from cityseeker_ros.core.strategies.bcr_policy import BcrPolicy
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.core.tasks.episode import Episode, World


@dataclass(frozen=True)
class EpisodeStep:
    """One step of a running task, as a goal's feedback says it."""

    step: int
    steps_left: int
    node: str  # after the step
    action: Action
    rationale: str
    distance_m: float
    decision_latency_s: float


class EpisodeServerLoop(ReplayLoop):
    """A replay loop with no plan of its own: `run_task` starts one task (all its rounds);
    `cancel` ends it through the world node. `on_step` hears every step."""

    def __init__(self, config: BenchmarkConfig, worlds: Sequence[World], memory: Optional[MemoryStore],
                 supervisor: Optional[BcrPolicy], outputs: Outputs, decision_timeout_s: float,
                 select_timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(config, RunPlan(config, [], memory), supervisor, outputs, decision_timeout_s,
                         select_timeout_s, clock)
        self.memory = memory
        self.episodes: dict[str, tuple[World, Episode]] = {e.episode_id: (w, e) for w in worlds for e in w.episodes}
        self.on_step: Callable[[EpisodeStep], None] = lambda step: None
        self.cancel_reason: Optional[str] = None
        self._walked: list[str] = []
        self._asked_at: Optional[float] = None

    @property
    def busy(self) -> bool:
        return self.session is not None

    def refusal(self, episode_id: str, round: int, max_steps: int,
                goal_running: bool = False) -> Optional[tuple[str, str]]:
        """Why a goal for this task cannot run now, as (code, reason); None when it can.
        `goal_running`: the server still serves another goal (its result not yet returned)."""
        config = self.config
        if self.state == "starting":
            return "not_ready", NOT_READY
        if goal_running or self.busy:
            return "busy", "another RunEpisode goal is running: cancel it or wait for its result"
        if episode_id not in self.episodes:
            return "bad_episode", f"episode_id {episode_id!r} is not a task of {config.data}"
        if round != 0:
            return "bad_round", (f"round {round}: a goal runs a task's rounds in order from round 0 "
                                 f"(the run has {config.rounds})")
        if max_steps not in (0, config.max_steps):
            return "bad_budget", (f"max_steps {max_steps}: the replay world's budget is fixed at "
                                  f"{config.max_steps} (0: that budget)")
        return None

    def run_task(self, episode_id: str, seed: int) -> None:
        world, episode = self.episodes[episode_id]
        self.plan, self.done = RunPlan(self.config, [SeededEpisode(world, episode, seed)], self.memory), 0
        self.state = "starting"
        self.start()

    def cancel(self, reason: str) -> bool:
        """End the running task: the view set awaiting a decision (or the next one) is answered
        with an error, and the world node ends the episode with it."""
        if self.session is None:
            return False
        self.cancel_reason = reason
        if self._pending is not None:
            view_set, self._pending = self._pending[0], None
            self.outputs.act(view_set.view_set_id, None, reason)
        return True

    def decision(self, view_set_id: str, decision: Optional[Decision], records: list[dict[str, Any]],
                 error: Optional[str] = None, extras: Optional[dict[str, Any]] = None) -> None:
        pending = self._pending
        self._asked_at = pending[1] if pending is not None and pending[0].view_set_id == view_set_id else None
        super().decision(view_set_id, decision, records, error, extras)

    def _begin(self, task: SeededEpisode, round: int) -> None:
        self.cancel_reason, self._walked, self._asked_at = None, [task.episode.start], None
        super()._begin(task, round)

    def _ask_or_act(self, view_set: ViewSet) -> None:
        if self.cancel_reason is not None:
            self.outputs.act(view_set.view_set_id, None, self.cancel_reason)
            return
        self._asked_at = None
        super()._ask_or_act(view_set)

    def _send(self, view_set: ViewSet, action: Action, reason: str = "", confidence: Optional[float] = None) -> None:
        super()._send(view_set, action, reason, confidence)
        assert self.session is not None
        world = self.session.world
        try:
            after = guide_action(world.graph, view_set.node, action, view_set.facing, reason, confidence,
                                 world.actions).next_node or view_set.node
        except ConfigError:  # an invalid move: the world refuses it and the agent stays
            after = view_set.node
        if after != self._walked[-1]:
            self._walked.append(after)
        latency = self.clock() - self._asked_at if self._asked_at is not None else 0.0
        steps_left = view_set.observation.steps_left
        taken = 0 if action.is_stop or action.answer is not None else 1  # a stop is a decision, not a step
        self.on_step(EpisodeStep(view_set.step + taken, max(0, steps_left - taken), after, action, reason,
                                 path_length_m(world.graph, self._walked), latency))
