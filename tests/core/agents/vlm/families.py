"""Two small task families for the VLM policy's family tests, with words of their own, so the
golden prompts do not move when the real landmark and question families reword theirs: one
whose goal is a place described by landmarks (stop = "I am at the goal"), one whose stop answers
a question. `test_families` registers them for one test; `family_episode` makes an episode of
either on the tiny city (tests/conftest.py)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import pytest

from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, Episode, World
from cityseeker_ros.core.tasks.family import (
    FAMILIES,
    MOVE_ACTIONS,
    MetricSpec,
    PromptForms,
    TaskFamily,
    get_family,
)
from cityseeker_ros.core.tasks.trajectory import Trajectory

GOALS = "test-landmarks"
ASKS = "test-questions"


class _Family(TaskFamily):
    title: ClassVar[str] = "test"
    seed_paper: ClassVar[str] = "none"
    synthetic: ClassVar[str] = "everything"
    metrics: ClassVar[tuple[MetricSpec, ...]] = (MetricSpec("reached", "Reached", "%", "final node is the goal"),)
    success_metric: ClassVar[str] = "reached"
    success_words: ClassVar[str] = "at the goal"
    headline: ClassVar[tuple[str, ...]] = ("reached",)
    breakdown: ClassVar[tuple[str, ...]] = ("reached",)
    ablation: ClassVar[tuple[tuple[str, str], ...]] = (("reached", "Reached (%)"),)
    baselines: ClassVar[tuple[str, ...]] = ("random",)

    def score(self, world: World, episode: Episode, trajectory: Trajectory, solvable: bool, *,
              dtw_threshold_m: float) -> dict[str, float]:
        return {"reached": 100.0 if trajectory.path[-1] == episode.target else 0.0}

    def record_fields(self, world: World, episode: Episode, trajectory: Trajectory) -> dict[str, Any]:
        return {"family": self.name, "answer": trajectory.answer}

    def load(self, folder, city, graph, split):  # pragma: no cover - never loaded from a folder
        raise NotImplementedError

    def generate(self, name, graph, scene, seed=0):  # pragma: no cover
        raise NotImplementedError


class Goals(_Family):
    name: ClassVar[str] = GOALS
    prompts: ClassVar[PromptForms] = PromptForms(
        system="You walk to a goal described by landmarks. Answer with one JSON object and nothing else.",
        goal_label="Goal", stop_question="Are you at the goal?")


class Asks(_Family):
    name: ClassVar[str] = ASKS
    actions: ClassVar[frozenset[str]] = MOVE_ACTIONS | {"answer"}
    prompts: ClassVar[PromptForms] = PromptForms(
        system="You answer a question about a place near you. Answer with one JSON object and nothing else.",
        goal_label="Question", stop_question="Can you answer the question from here?", answers=True)


@pytest.fixture
def test_families():
    """Registers the two test families for one test and removes them after."""
    get_family(DEFAULT_FAMILY)  # the built-in families load first, as in a run
    for family in (Goals(), Asks()):
        FAMILIES.register(family.name)(family)
    try:
        yield
    finally:
        for name in (GOALS, ASKS):
            FAMILIES._entries.pop(name, None)


def family_episode(world: World, family: str, index: int = 0, **changes: Any) -> Episode:
    """The tiny city's episode `index` as an episode of `family`, with words that fit it."""
    words = {GOALS: "The goal is about 40 m east of the clock tower.",
             ASKS: "What is the name of the café east of the bank?"}
    episode = world.episodes[index]
    return replace(episode, family=family, instruction=words.get(family, episode.instruction), **changes)
