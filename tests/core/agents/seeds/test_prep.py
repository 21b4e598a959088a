"""prep: perception per view, the calculator's goal inference, reflection (memory and goal),
planning; the paper's ablation switches each change the calls sent."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from tests.core.agents.seeds.seed_support import ByRole, good_reply, landmark_world, needs_world, role_of, run, texts


@pytest.fixture(scope="module")
def gridtown(tmp_path_factory):
    return landmark_world(tmp_path_factory.mktemp("w"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return needs_world(tmp_path_factory.mktemp("w"))


def _prompts(backend: ByRole, role: str) -> list[str]:
    return [texts(r) for k, r in backend.requests if k == role]


def test_full_prep_perceives_infers_reflects_and_plans(gridtown):
    backend = ByRole()
    record = run(gridtown, make_policy("prep", backend_instance=backend), max_steps=2)
    first, second = record["decisions"]
    views = len([c for c in first["calls"] if c["role"] == "perception"])
    assert [c["role"] for c in first["calls"]] == ["perception"] * views + ["reflection", "planning"]
    assert [c["role"] for c in second["calls"]][-3:] == ["memory", "reflection", "planning"]
    assert first["state"]["inferences"] == 1 and first["state"]["goal_by"] == "model"
    assert first["state"]["goal"] == [50.0, 60.0] and first["state"]["plan"] == ["1. Move A.", "2. Stop."]
    planning = _prompts(backend, "planning")
    assert "The goal coordinates are most likely to be (50, 60)." in planning[0]
    assert "The plan is []." in planning[0] and "The plan is ['1. Move A.', '2. Stop.']." in planning[1]
    reflection = _prompts(backend, "reflection")[1]
    assert "The first time you inferred the goal was at" in reflection and "The second time" in reflection
    memory = _prompts(backend, "memory")[0]
    assert "1. You were at (0, 0). You could move to" in memory and "You then arrived at" in memory
    assert first["calls_n"] == len(first["calls"]) and first["tokens_in"] == 7 * first["calls_n"]


def test_the_calculator_answers_when_the_reflection_cannot_be_read(gridtown):
    def reply(request):
        return "I think it is somewhere" if role_of(request) == "reflection" else good_reply(request)

    record = run(gridtown, make_policy("prep", backend_instance=ByRole(reply)), max_steps=1)
    [step] = record["decisions"]
    assert step["state"]["goal_by"] == "calculator" and step["fallbacks"] == 1 and step["fallback"]
    assert [c for c in step["calls"] if c["role"] == "reflection"][0]["parse_error"]


@pytest.mark.parametrize("params, roles, words, absent", [
    ({}, {"perception", "memory", "reflection", "planning"}, ["The plan is", "most likely to be"], ["Now you infer"]),
    ({"reflection": False}, {"perception", "planning"}, ["The last plan is", "Now you infer that the goal is in"],
     ["most likely"]),
    ({"planning": False}, {"perception", "memory", "reflection", "planning"}, ["most likely to be"],
     ["plan is", "step of the plan"]),
    ({"reflection": False, "planning": False}, {"perception", "planning"}, ["Now you infer"],
     ["plan is", "step of the plan", "most likely"]),
])
def test_each_ablation_switch_changes_the_calls_sent(gridtown, params, roles, words, absent):
    backend = ByRole()
    run(gridtown, make_policy("prep", backend_instance=backend, **params), max_steps=2)
    assert set(backend.roles()) == roles
    last = _prompts(backend, "planning")[-1]
    assert all(w in last for w in words), last
    assert not any(w in last.split("Reply with")[0] for w in absent), last


def test_without_landmarks_perception_describes_the_views(tiny):
    backend = ByRole()
    record = run(tiny, make_policy("prep", backend_instance=backend), max_steps=2)
    assert all("Describe what you see" in t for t in _prompts(backend, "perception"))
    assert "reflection" not in backend.roles()  # no landmark, no goal inference to reconcile
    assert "View A shows: a street with a café" in _prompts(backend, "planning")[0]
    assert record["decisions"][0]["state"]["sightings"] == []


def test_the_planner_reads_no_images_and_perception_one_each(gridtown):
    backend = ByRole()
    run(gridtown, make_policy("prep", backend_instance=backend), max_steps=1)
    for role, request in backend.requests:
        assert len(request.images) == (1 if role == "perception" else 0)
    json.dumps([texts(r) for _, r in backend.requests])


def test_docs_count_the_calls_the_agent_makes_on_landmark_goals(gridtown):
    """docs/agents.md says k + 3 calls per step on landmark goals once a goal estimate exists (it
    once said k + 2), and k + 2 at the first step."""
    from pathlib import Path

    record = run(gridtown, make_policy("prep", backend_instance=ByRole()), max_steps=2)
    first, second = record["decisions"]
    k = [len([c for c in d["calls"] if c["role"] == "perception"]) for d in (first, second)]
    assert first["calls_n"] == k[0] + 2 and second["calls_n"] == k[1] + 3
    docs = (Path(__file__).parents[4] / "docs" / "agents.md").read_text(encoding="utf-8")
    assert "on landmark goals k + 3 once a goal estimate exists" in docs and "(k + 2 at the first step" in docs
