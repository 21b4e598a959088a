"""The policy interface: an agent maps observations to actions and knows nothing of the env."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

import numpy as np

from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.core.tasks.environment import Action, Observation
from cityseeker_ros.core.tasks.episode import Episode, World


@dataclass(frozen=True)
class PromptContext:
    """Extra text a supervisor gives a policy for one decision. Empty slots leave no trace.

    `backtrack`, `surroundings` and `history` are the paper's {backtrack_prompt},
    {surrounding_prompt} and {history_prompt} (filled by the BCR strategies); `feedback` tells
    the model why its previous answer was not used (the environment's or the parser's error).
    """

    backtrack: Optional[str] = None
    surroundings: Optional[str] = None
    history: Optional[str] = None
    feedback: Optional[str] = None


@dataclass(frozen=True)
class Decision:
    """An action with what the policy says about it: confidence in [0, 1] (None when the policy
    has no notion of it) and a short rationale. Strategies such as B1 read them."""

    action: Action
    confidence: Optional[float] = None
    rationale: str = ""


class Policy(ABC):
    # A privileged policy is handed the world (graph, targets) and is labelled oracle in results.
    privileged: ClassVar[bool] = False
    # Whether act() looks at View.image; the benchmark skips making images for policies that do not.
    uses_images: ClassVar[bool] = True
    # Whether decide() reads a PromptContext; a supervisor follows hints itself for those that do not.
    accepts_context: ClassVar[bool] = False
    # Whether its decisions carry a confidence (B1, and B3's confidence trigger, act on it).
    reports_confidence: ClassVar[bool] = True
    # The task families it serves (a run of another is refused before it starts); None: every
    # family (a model policy speaks each family's prompts).
    families: ClassVar[Optional[frozenset[str]]] = None

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        """Start an episode. `rng` is the only randomness a policy may use, so runs repeat."""
        self.episode = episode
        self.rng = rng

    @abstractmethod
    def act(self, observation: Observation) -> Action:
        ...

    def decide(self, observation: Observation, context: Optional[PromptContext] = None) -> Decision:
        """act() with its confidence and rationale; policies that read context override this."""
        action = self.act(observation)
        return Decision(action, *self.explain())

    def explain(self) -> tuple[Optional[float], str]:
        """(confidence, rationale) of the last act(); none by default."""
        return None, ""

    @classmethod
    def shows_panorama(cls, params: dict[str, Any]) -> bool:
        """Whether a policy made with `params` may read Observation.panorama. In process the
        panorama is made on first use anyway; a world node in another process makes and sends
        it ahead, so a runner turns that off for policies that never look at it."""
        return False

    def prepare(self) -> None:  # noqa: B027 - most policies have nothing to load
        """Load models or connect before the first episode, so bad configuration fails at
        start-up rather than as a stream of failed episodes."""

    @classmethod
    def act_together(cls, policies: Sequence[Policy], observations: Sequence[Observation]) -> list[Action]:
        """One action per (policy, observation), each policy in its own episode. Policies whose
        backend batches (the VLM policy) override this to make one model call for all."""
        return [p.act(o) for p, o in zip(policies, observations)]

    @classmethod
    def decide_together(cls, policies: Sequence[Policy], observations: Sequence[Observation],
                        contexts: Sequence[Optional[PromptContext]]) -> list[Decision]:
        """decide() for several episodes at once; batching policies override it."""
        return [p.decide(o, c) for p, o, c in zip(policies, observations, contexts)]

    def episode_extras(self) -> dict[str, Any]:
        """Fields this policy adds to the episode record (a supervisor's events and context)."""
        return {}

    def step_records(self) -> list[dict[str, Any]]:
        """Per-decision details of the current episode (prompt hash, raw reply, parsed decision,
        latency...) for episodes.jsonl; policies without such details have none."""
        return []


POLICIES: Registry[Callable[..., Policy]] = Registry("policy")


def make_policy(name: str, **params: Any) -> Policy:
    return POLICIES.create(name, **params)
