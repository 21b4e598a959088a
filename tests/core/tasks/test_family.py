"""The task-family layer: the registry, the environment's family rules (actions, budget), and
records and summaries judged by their family. A family made here for the test (`probe`) stands
for one a contributor adds: one registration, nothing else touched."""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from cityseeker_ros.core.agents.policies.base import Policy
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.evaluation.metrics import summarize
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks import family as families
from cityseeker_ros.core.tasks.environment import STOP, Action, Environment, answer, move
from cityseeker_ros.core.tasks.episode import Episode
from cityseeker_ros.core.tasks.family import (
    MOVE_ACTIONS,
    GeneratedTasks,
    MetricSpec,
    PromptForms,
    TaskFamily,
    family_of_records,
    get_family,
    parse_families,
)
from cityseeker_ros.core.tasks.trajectory import EndReason


class Says(Policy):
    """Takes its actions in turn."""

    def __init__(self, actions: list[Action]) -> None:
        self.actions = list(actions)

    def act(self, observation) -> Action:
        return self.actions.pop(0)


class Probe(TaskFamily):
    name: ClassVar[str] = "probe"
    title: ClassVar[str] = "Probe"
    seed_paper: ClassVar[str] = "none"
    synthetic: ClassVar[str] = "everything"
    actions: ClassVar[frozenset[str]] = MOVE_ACTIONS | {"answer"}
    metrics: ClassVar[tuple[MetricSpec, ...]] = (MetricSpec("said", "Said", "%", "an answer was given"),
                                                 MetricSpec("steps", "Steps", "steps", "steps taken"))
    success_metric: ClassVar[str] = "said"
    success_words: ClassVar[str] = "answered"
    headline = breakdown = ("said", "steps")
    ablation = (("said", "Said (%)"),)
    baselines = ("random",)
    prompts = PromptForms("system", "Question", "Can you answer?", answers=True)

    def budget(self, episode: Episode, max_steps: int) -> int:
        return 3

    def score(self, world, episode, trajectory, solvable, *, dtw_threshold_m) -> dict[str, float]:
        return {"said": 100.0 if trajectory.answer else 0.0, "steps": float(trajectory.steps)}

    def record_fields(self, world, episode, trajectory) -> dict[str, Any]:
        return {"family": self.name, "answer": trajectory.answer}

    def load(self, folder: Path, city, graph, split):
        raise NotImplementedError

    def generate(self, name, graph, scene, seed=0) -> GeneratedTasks:
        raise NotImplementedError


@pytest.fixture()
def probe():
    families.get_family("needs")  # the built-in families first, so the registry is complete
    families.FAMILIES.register("probe")(Probe())
    yield
    del families.FAMILIES._entries["probe"]


def _episode(tiny_world, family: str = "needs") -> Episode:
    return Episode(**{**tiny_world.episodes[0].__dict__, "family": family, "details": {}})


def test_an_unknown_family_is_refused_listing_the_known():
    with pytest.raises(ConfigError, match=r"unknown task family 'quests'; known: landmarks, needs, questions"):
        get_family("quests")
    with pytest.raises(ConfigError, match="quests"):
        parse_families("needs,quests")
    with pytest.raises(ConfigError, match="name at least one"):
        parse_families(" , ")
    assert parse_families("questions,needs,questions") == ["questions", "needs"]
    assert parse_families("all") == ["landmarks", "needs", "questions"]


def test_needs_take_no_answer_and_the_refusal_is_fed_back(tiny_world):
    env = Environment(tiny_world, max_steps=10, max_invalid_retries=1)
    env.reset(_episode(tiny_world))
    result = env.step(answer("a cafe"))
    assert not result.valid and not result.done
    assert result.observation.feedback == "this task takes no answer action; choose among back, move, stop"
    assert env.step(answer("again")).end_reason is EndReason.INVALID_ACTION  # retries spent


def test_an_answer_ends_the_episode_where_it_stands_and_the_family_sets_the_budget(tiny_world, probe):
    env = Environment(tiny_world, max_steps=10)
    first = env.reset(_episode(tiny_world, "probe"))
    assert first.steps_left == 3 and env.budget == 3
    env.step(move(0))
    result = env.step(answer("Café Roma"))
    assert result.done and result.end_reason is EndReason.ANSWERED
    assert env.trajectory.answer == "Café Roma" and env.trajectory.steps == 1
    env.reset(_episode(tiny_world, "probe"))
    for _ in range(3):
        result = env.step(move(0)) if not env.done else result
    assert result.end_reason is EndReason.BUDGET_EXHAUSTED and env.trajectory.steps == 3


def test_records_carry_the_family_s_measures_and_fields_and_summaries_its_keys(tiny_world, probe):
    episode = _episode(tiny_world, "probe")
    said = run_episode(tiny_world, episode, Says([answer("yes")]), seed=0)
    silent = run_episode(tiny_world, episode, Says([STOP]), seed=1)
    assert said["metrics"] == {"said": 100.0, "steps": 0.0} and said["end_reason"] == "answered"
    assert said["family"] == "probe" and said["answer"] == "yes" and silent["answer"] is None
    summary = summarize([said, silent])
    assert list(summary["overall"]) == ["said", "steps", "episodes", "seeds"]
    assert summary["overall"]["said"] == 50.0
    with pytest.raises(ValueError, match="several task families"):
        family_of_records([said, {**said, "family": "needs"}])
