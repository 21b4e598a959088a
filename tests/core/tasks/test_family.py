"""The task-family layer: the registry, the environment's family rules (actions, budget), and
records and summaries judged by their family. A family made here for the test (`probe`) stands
for one a contributor adds: one registration, nothing else touched."""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from cityseeker_ros.core.agents.policies.base import Policy
from cityseeker_ros.core.agents.policies.families import check_serves, policies_for
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


# ---------------------------------------------------------------- a run's settings, each family's policies


def test_the_run_s_max_steps_caps_an_episode_s_own_budget_and_each_family_names_its_default_cap(tiny_world):
    own = Episode(**{**tiny_world.episodes[0].__dict__, "family": "landmarks", "budget": 40})
    landmarks, questions, needs = get_family("landmarks"), get_family("questions"), get_family("needs")
    assert landmarks.budget(own, 5) == 5 and landmarks.budget(own, 150) == 40  # --max-steps 5 is 5 steps
    assert needs.budget(tiny_world.episodes[0], 7) == 7
    # A run naming no cap keeps every budget the family's rules set: needs 35, questions CityEQA's 50.
    assert (needs.default_max_steps(), questions.default_max_steps(), landmarks.default_max_steps()) == (35, 50, 150)


def test_each_family_s_policies_are_those_that_declare_it_its_baselines_and_oracle_among_them():
    for name in ("needs", "landmarks", "questions"):
        family = get_family(name)
        assert set(family.baselines) <= set(policies_for(family.name)) and family.oracle in policies_for(family.name)
    assert "question-oracle" not in policies_for("landmarks")
    assert "oracle" not in policies_for("questions") and "random" not in policies_for("questions")
    assert "landmark-oracle" not in policies_for("needs")
    assert "vlm" in policies_for("questions")  # a model policy speaks every family's prompts


@pytest.mark.parametrize("family, policy, oracle", [
    ("landmarks", "question-oracle", "'oracle'"), ("questions", "oracle", "'question-oracle'"),
    ("needs", "landmark-seeker", None)])
def test_a_policy_of_another_family_is_refused_naming_the_family_s_policies_and_oracle(family, policy, oracle):
    with pytest.raises(ConfigError) as caught:
        check_serves(policy, family)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"--policy {policy} does not serve the {family} task family")
    assert line.endswith("its policies: " + ", ".join(policies_for(family)))
    assert (f"its oracle is {oracle}" in line) if oracle else "oracle is" not in line


def _world_json(folder: Path, **fields: Any) -> Path:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "world.json").write_text(json.dumps({"format": "cityseeker-world", "name": "town", **fields}))
    return folder


def test_a_missing_task_file_says_why_from_world_json(tmp_path):
    landmarks = get_family("landmarks")
    why = landmarks.missing_tasks(_world_json(tmp_path / "few", warnings=[
        "thin data: 80% of streets have no building", "no landmark goals: 2 landmarks; goals need at least 3"]))
    assert why == "missing: the world has no landmark goals: 2 landmarks; goals need at least 3 (world.json's warnings)"
    why = landmarks.missing_tasks(_world_json(tmp_path / "needs-only", warnings=[], families={}))
    assert why == (f"missing: the world was built without landmark goals; make them with `cityseeker world tasks "
                   f"{tmp_path / 'needs-only'} --families landmarks`")
    why = get_family("questions").missing_tasks(_world_json(tmp_path / "lost", families={"questions": {"tasks": {}}}))
    assert why.startswith("missing, though world.json records questions built; make them with")
