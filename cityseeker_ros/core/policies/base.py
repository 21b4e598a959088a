"""The policy interface: an agent maps observations to actions and knows nothing of the env."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
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


POLICIES: Registry[Callable[..., Policy]] = Registry("policy")


def make_policy(name: str, **params: Any) -> Policy:
    factory = POLICIES.get(name)
    try:
        return factory(**params)
    except TypeError as exc:
        raise ConfigError(f"policy '{name}': bad parameters {params}: {exc}") from None
