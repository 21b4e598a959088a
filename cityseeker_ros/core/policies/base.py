"""The policy interface: an agent maps observations to actions and knows nothing of the env."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Optional

import numpy as np

from cityseeker_ros.core.environment import Action, Observation
from cityseeker_ros.core.episode import Episode, World
from cityseeker_ros.core.errors import ConfigError
from cityseeker_ros.core.registry import Registry


class Policy(ABC):
    # A privileged policy is handed the world (graph, targets) and is labelled oracle in results.
    privileged: ClassVar[bool] = False
    # Whether act() looks at View.image; the benchmark skips making images for policies that do not.
    uses_images: ClassVar[bool] = True

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        """Start an episode. `rng` is the only randomness a policy may use, so runs repeat."""
        self.episode = episode
        self.rng = rng

    @abstractmethod
    def act(self, observation: Observation) -> Action:
        ...

    def prepare(self) -> None:  # noqa: B027 - most policies have nothing to load
        """Load models or connect before the first episode, so bad configuration fails at
        start-up rather than as a stream of failed episodes."""

    @classmethod
    def act_together(cls, policies: Sequence[Policy], observations: Sequence[Observation]) -> list[Action]:
        """One action per (policy, observation), each policy in its own episode. Policies whose
        backend batches (the VLM policy) override this to make one model call for all."""
        return [p.act(o) for p, o in zip(policies, observations)]

    def step_records(self) -> list[dict[str, Any]]:
        """Per-decision details of the current episode (prompt hash, raw reply, parsed decision,
        latency...) for episodes.jsonl; policies without such details have none."""
        return []


POLICIES: Registry[Callable[..., Policy]] = Registry("policy")


def make_policy(name: str, **params: Any) -> Policy:
    factory = POLICIES.get(name)
    try:
        return factory(**params)
    except TypeError as exc:
        raise ConfigError(f"policy '{name}': bad parameters {params}: {exc}") from None
