"""The ROS node set runs every task family: `cityseeker run benchmark --family ...` over real DDS
on loopback writes the records and summary the in-process benchmark writes, answers (a
question's `answer` through AgentAction.ANSWER and Episode.answer) and family budgets included,
with privileged policies whose decision node loads the family's episodes."""
from __future__ import annotations

import pytest

from tests.core.tasks.landmarks.gridtown import SMALL, grid_graph, grid_scene
from tests.core.tasks.landmarks.gridtown import write_world_folder as write_landmark_world
from tests.core.tasks.questions.conftest import high_street
from tests.core.tasks.questions.conftest import write_world_folder as write_question_world
from tests.ros.test_runner import in_process, records, run, summary


@pytest.fixture(scope="module")
def question_world(tmp_path_factory):
    from cityseeker_ros.core.tasks.family import get_family

    graph, scene = high_street()
    generated = get_family("questions").generate("highstreet", graph, scene, seed=0)
    return write_question_world(tmp_path_factory.mktemp("world") / "highstreet", graph, scene, generated.document)


@pytest.fixture(scope="module")
def landmark_world(tmp_path_factory):
    from cityseeker_ros.core.tasks.landmarks.generator import LandmarkTaskSettings, generate_landmark_tasks

    graph = grid_graph()
    scene = grid_scene(graph)
    generated = generate_landmark_tasks("gridtown", graph, scene, LandmarkTaskSettings(**SMALL))
    return write_landmark_world(tmp_path_factory.mktemp("world") / "gridtown", graph, scene, generated.document)


@pytest.mark.parametrize("policy", ["question-oracle", "question-random"])
def test_questions_over_ros_write_the_in_process_records_answers_included(question_world, ros_domain, tmp_path,
                                                                          policy):
    flags = ("--data", str(question_world), "--family", "questions", "--policy", policy, "--limit", "4")
    in_process(tmp_path / "cli", *flags)
    run(tmp_path / "ros", ros_domain, *flags)
    got, expected = records(tmp_path / "ros"), records(tmp_path / "cli")
    assert got == expected and len(got) == 4
    assert all(r["family"] == "questions" for r in got)
    if policy == "question-oracle":
        assert all(r["end_reason"] == "answered" and r["answer"] for r in got)
        assert summary(tmp_path / "ros")["overall"]["accuracy"] == 100.0
    assert summary(tmp_path / "ros") == summary(tmp_path / "cli")


def test_landmark_goals_over_ros_keep_each_episode_s_own_budget(landmark_world, ros_domain, tmp_path):
    flags = ("--data", str(landmark_world), "--family", "landmarks", "--policy", "landmark-oracle", "--limit", "3",
             "--single-process")
    in_process(tmp_path / "cli", *flags[:-1])
    run(tmp_path / "ros", ros_domain, *flags)
    got = records(tmp_path / "ros")
    assert got == records(tmp_path / "cli") and {r["family"] for r in got} == {"landmarks"}
    assert summary(tmp_path / "ros") == summary(tmp_path / "cli")
