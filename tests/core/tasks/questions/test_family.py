"""The family as the engine sees it: registered once, the answer action, prompts that ask for an
answer, and a task file whose every bad field is named."""
from __future__ import annotations

import copy
import json

import pytest

from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.tasks.family import MOVE_ACTIONS, get_family
from cityseeker_ros.core.tasks.questions import QuestionsFamily
from cityseeker_ros.core.worlds.folder import load_world


def test_the_family_is_registered_with_the_answer_action_and_its_prompts():
    family = get_family("questions")
    assert isinstance(family, QuestionsFamily)
    assert family.actions == MOVE_ACTIONS | {"answer"}
    assert family.tasks_file == "tasks.questions.json"
    assert family.prompts.answers and family.prompts.goal_label == "Question"
    assert "answer" in family.prompts.stop_question.lower()
    assert family.success_metric in family.metric_keys
    assert set(family.headline) <= set(family.metric_keys) and set(family.breakdown) <= set(family.metric_keys)
    assert family.oracle in family.baselines


def test_the_task_file_loads_by_split_with_budget_and_details(street_folder):
    world = load_world(street_folder, split="test", family="questions")
    assert world.episodes and all(e.family == "questions" and e.budget == 50 for e in world.episodes)
    assert all(e.details["kind"] and e.details["accepted"] for e in world.episodes)
    assert world.category_targets == {}
    assert str(street_folder / "tasks.questions.json") in world.source_files
    assert get_family("questions").describe(street_folder)["questions"] >= len(world.episodes)


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: d.update(kind="smell"), "details.kind"),
    (lambda d: d.update(answer=""), "details.answer"),
    (lambda d: d.update(accepted=[]), "details.accepted"),
    (lambda d: d.pop("target_latlon"), "details.target_latlon"),
    (lambda d: d.update(facts=[{"fact": "colour", "source": "imagination"}]), "details.facts"),
    (lambda d: d.update(facts=[]), "details.facts"),
    (lambda d: d.update(kind="counting", asked_kind="bank", end_poi=None), "details.end_poi"),
    (lambda d: d.update(kind="existence", asked_kind=""), "details.asked_kind"),
])
def test_a_bad_detail_fails_naming_the_file_task_and_field(street_folder, tmp_path, change, words):
    import shutil

    folder = tmp_path / "w"
    shutil.copytree(street_folder, folder)
    doc = json.loads((folder / "tasks.questions.json").read_text())
    bad = copy.deepcopy(doc)
    first_test = next(t for t in bad["tasks"] if t["split"] == "test")
    change(first_test["details"])
    (folder / "tasks.questions.json").write_text(json.dumps(bad))
    with pytest.raises(DataError) as err:
        load_world(folder, split="test", family="questions")
    text = str(err.value)
    assert "tasks.questions.json" in text and words in text and first_test["id"] in text
