"""One episode driven by messages instead of a loop: the supervisor node's core.

In process, `EpisodeRun` owns the environment and the policy and loops. Over ROS the world
advances elsewhere (the replay node, or a vehicle) and the policy decides elsewhere (the decision
node), so the supervisor only sees observations and decisions arrive. An `EpisodeSession` turns
each observation into either an action it takes itself (a retraced hop, a forced hint) or a
request for a decision with its prompt context, turns each decision into an action, and at the
end builds the same episodes.jsonl record an in-process run writes.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional, Union

import numpy as np

from cityseeker_ros.core.agents.memory.store import MemoryStore
from cityseeker_ros.core.agents.policies import POLICIES, Policy
from cityseeker_ros.core.agents.policies.base import Decision, PromptContext
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.episode_run import episode_record, episode_rng, note_observation
from cityseeker_ros.core.strategies.bcr_policy import BcrPolicy
from cityseeker_ros.core.tasks.environment import Action, Observation, Trajectory
from cityseeker_ros.core.tasks.episode import Episode, World


class RemotePolicy(Policy):
    """The policy of another process (the decision node), as the supervisor's inner policy: it
    carries the real policy's class flags, so hints are followed or prompted exactly as in
    process, and it is never asked to decide here."""

    def __init__(self, name: str) -> None:
        cls = POLICIES.get(name)
        self.name = name
        self.privileged = bool(getattr(cls, "privileged", False))  # type: ignore[misc]
        self.uses_images = bool(getattr(cls, "uses_images", True))  # type: ignore[misc]
        self.accepts_context = bool(getattr(cls, "accepts_context", False))  # type: ignore[misc]
        self.reports_confidence = bool(getattr(cls, "reports_confidence", True))  # type: ignore[misc]

    def act(self, observation: Observation) -> Action:
        raise RuntimeError(f"policy {self.name} decides in the decision node, not in the supervisor")


def make_bcr_policy(config: BenchmarkConfig, memory: MemoryStore) -> Optional[BcrPolicy]:
    """The supervisor of a run's settings, around the remote policy; None for an unsupervised run."""
    if not config.supervised:
        return None
    return BcrPolicy(RemotePolicy(config.policy), config.make_strategies(), memory, config.run_id(),
                      rounds=config.rounds, max_backtracks=config.max_backtracks, follow_hints=config.follow_hints)


@dataclass(frozen=True)
class HoldSpan:
    """A stretch of time the supervisor held the vehicle because no decision came."""

    step: int
    view_set_id: str
    held_s: float
    reason: str


class EpisodeSession:
    """One round of one episode. `observe` each new observation (retries included), `decided`
    each decision that answers one, `record` the trajectory once the world says it ended."""

    def __init__(self, world: World, episode: Episode, seed: int, round: int, config: BenchmarkConfig,
                 supervisor: Optional[BcrPolicy]) -> None:
        self.world, self.episode, self.seed, self.round = world, episode, seed, round
        self.config, self.supervisor = config, supervisor
        self.observed: list[dict[str, Any]] = []
        self.decisions: list[dict[str, Any]] = []
        self.holds: list[HoldSpan] = []
        # The decision side's policy's episode extras (the latest answer's): the record carries them
        # as an in-process run's does, where the policy is not under a supervisor.
        self.policy_extras: dict[str, Any] = {}
        if supervisor is not None:
            supervisor.begin_round(seed, round)
            rng: np.random.Generator = episode_rng(seed, episode.episode_id, round)
            supervisor.reset(episode, rng, world if supervisor.privileged else None)

    def observe(self, obs: Observation) -> Union[Action, PromptContext]:
        """An action to take now, or the context to ask the decision node with."""
        note_observation(self.observed, obs)
        if self.supervisor is None:
            return PromptContext()
        return self.supervisor.advise(obs)

    def decided(self, obs: Observation, decision: Decision, records: list[dict[str, Any]]) -> Action:
        self.decisions.extend(records)
        if self.supervisor is None:
            return decision.action
        return self.supervisor.judge(obs, decision)

    def failed(self, records: list[dict[str, Any]]) -> None:
        """A decision that failed: its log records are kept; the caller ends the episode."""
        self.decisions.extend(records)

    def held(self, hold: HoldSpan) -> None:
        self.holds.append(hold)

    def record(self, trajectory: Trajectory) -> dict[str, Any]:
        """The round's record (made durable in the memory when supervised)."""
        extras = self.supervisor.episode_extras() if self.supervisor is not None else self.policy_extras
        record = episode_record(self.world, self.episode, self.seed, trajectory, self.observed,
                                max_steps=self.config.max_steps, dtw_threshold_m=self.config.dtw_threshold_m,
                                decisions=self.decisions, extras=extras)
        if self.holds:  # only runs that lost their decision node carry this
            record["holds"] = [asdict(h) for h in self.holds]
        if self.supervisor is not None:
            self.supervisor.finish_round(record)
        return record
