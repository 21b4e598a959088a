"""Baselines of the questions family (core/tasks/questions): a blind random walker that guesses,
and the privileged oracle that walks to the target and answers from the world."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.policies.base import POLICIES, Policy
from cityseeker_ros.core.render.palette import GENERIC_WORDS
from cityseeker_ros.core.tasks.environment import Action, Observation, answer, move
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.questions.answers import CARDINALS, FACADE_COLOURS, YES_NO, fact

# What a blind guesser says per kind of question: fixed lists, no knowledge of the world. A name
# cannot be guessed without reading, so it guesses a kind of place (and is almost never right).
GUESSES: dict[str, tuple[str, ...]] = {
    "floors": tuple(str(n) for n in range(1, 11)),
    "colour": tuple(c[0] for c in FACADE_COLOURS),
    "relation": CARDINALS,
    "category": tuple(sorted({w.lower() for w in GENERIC_WORDS.values()})),
    "name": tuple(sorted({w.lower() for w in GENERIC_WORDS.values()})),
    "existence": YES_NO,
    "counting": tuple(str(n) for n in range(0, 6)),
}


@POLICIES.register("question-random")
class QuestionRandomPolicy(Policy):
    """The paper-style floor: walks uniformly at random for a number of steps drawn uniformly from
    what the budget allows, then answers a guess drawn uniformly from the kind of answer the
    question asks for (GUESSES). It reads no image; the kind is the question's own words'."""

    uses_images = False
    families = frozenset({"questions"})

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        super().reset(episode, rng, world)
        self.answer_at: Optional[int] = None

    def act(self, observation: Observation) -> Action:
        if self.answer_at is None:
            self.answer_at = int(self.rng.integers(max(1, observation.steps_left)))
        if observation.step >= self.answer_at or not observation.views:
            words = GUESSES.get(str(self.episode.details.get("kind")), GUESSES["name"])
            return answer(words[int(self.rng.integers(len(words)))])
        return move(int(self.rng.integers(len(observation.views))))


@POLICIES.register("question-oracle")
class QuestionOraclePolicy(Policy):
    """Walks the reference path (to where the target's board is legible) and answers the question's
    fact computed from the world's scene by the ids the task names: the 100% ceiling of answer
    accuracy, and a check that every stored answer is what the scene says."""

    privileged = True
    uses_images = False
    families = frozenset({"questions"})

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        if world is None:
            raise ValueError("the question-oracle policy needs the world (it is privileged)")
        if world.root is None:
            raise ValueError(f"question-oracle: world {world.city} has no folder with scene.json to answer from")
        from cityseeker_ros.core.worlds.folder import load_scene

        super().reset(episode, rng, world)
        self.world = world
        self.truth = fact(load_scene(world.root), episode.details)[0]
        self.plan = _route_actions(world, episode.reference_path)

    def act(self, observation: Observation) -> Action:
        if self.plan and observation.steps_left > 1:
            return move(self.plan.pop(0))
        return answer(self.truth)


def _route_actions(world: World, route: Any) -> list[int]:
    """View indices that walk `route` hop by hop; stops at the first hop no action makes."""
    plan = []
    for a, b in zip(route, route[1:]):
        index = next((m.index for m in world.actions.moves(a) if m.edge.target == b), None)
        if index is None:
            break
        plan.append(index)
    return plan
