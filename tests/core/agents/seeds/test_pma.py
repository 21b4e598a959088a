"""The `pma` policy with a scripted backend: the calls of a whole question episode in order, what
each component switch changes in the calls sent, the needs and landmark families (no answer: the
plan ends with a stop), and malformed replies at every call (a counted fallback, never a crash)."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies.base import make_policy
from cityseeker_ros.core.agents.seeds.pma import PmaPolicy
from cityseeker_ros.core.infra.errors import ConfigError
from tests.core.agents.seeds.pma_support import (
    Scripted,
    bakery_episode,
    good_reply,
    question_world,
    run,
    user_text,
)


@pytest.fixture(scope="module")
def qworld(tmp_path_factory):
    return question_world(tmp_path_factory.mktemp("pma") / "highstreet")


def _calls(record):
    return [[c["role"] for c in d["calls"]] for d in record["decisions"]]


def test_a_question_episode_plans_maps_explores_navigates_collects_and_answers(qworld):
    backend = Scripted(good_reply)
    record = run(qworld, bakery_episode(qworld), PmaPolicy(backend_instance=backend), max_steps=50)
    assert "error" not in record and record["end_reason"] == "answered" and record["answer"] == "Panificio Bruno"
    # s02: the restaurant is found at once; Navigation(restaurant_1, north) walks two steps on the map
    # without a call (its point is 10 m past the restaurant's north edge: 45 m); there the bakery is
    # found, the collector asks to turn right: the high street has no view to the right of north (the
    # south view is 180 degrees round), so the answer stands and Answer Generation answers.
    assert _calls(record) == [["planner", "manager", "explorer"], ["manager", "explorer"], ["manager", "explorer"],
                              ["manager", "explorer", "collector", "answerer"]]
    assert [d["state"]["subtask"] for d in record["decisions"]] == [0, 0, 1, 3]
    assert [d["state"]["position"] for d in record["decisions"]] == [[0.0, 0.0], [0.0, 15.0], [0.0, 30.0], [0.0, 45.0]]
    last = record["decisions"][-1]
    assert last["state"]["plan"] == ["Exploration(agent, north, restaurant_1)", "Navigation(restaurant_1, north)",
                                     "Exploration(restaurant_1, north, bakery_1)", "Collection(the name of bakery_1)"]
    assert last["state"]["known"]["restaurant_1"] == "map_restaurant_1"  # the map's ids are its own
    assert last["state"]["navigator"][-1]["collector"] == "no view to turn to (turnright)"
    assert last["calls_n"] == 4 and last["tokens_in"] == 28 and last["tokens_out"] == 8 and last["seconds"] >= 0
    assert last["fallbacks"] == 0 and last["decision"] == {"action": None, "answer": "Panificio Bruno"}
    assert all(len(c["prompt_hash"]) > 8 for d in record["decisions"] for c in d["calls"])
    json.dumps(record)


def _roles_and_texts(qworld, **switches):
    backend = Scripted(good_reply)
    run(qworld, bakery_episode(qworld), PmaPolicy(backend_instance=backend, **switches), max_steps=50)
    return backend.roles(), [user_text(r) for _, r in backend.requests]


def test_each_component_switch_changes_the_calls_sent(qworld):
    roles, texts = _roles_and_texts(qworld)
    no_planner, np_texts = _roles_and_texts(qworld, planner=False)
    assert "planner" not in no_planner and (no_planner, np_texts) != (roles, texts)
    assert any("Exploration(agent, any, target)" in t for t in np_texts)  # the fixed plan
    no_manager, nm_texts = _roles_and_texts(qworld, manager=False)
    assert "manager" not in no_manager and "answerer" not in no_manager
    assert not any("Your map" in t for t in nm_texts) and any("Your map" in t for t in texts)
    assert "navigator" in no_manager  # no map: the navigator asks the model
    no_collector, nc_texts = _roles_and_texts(qworld, collector=False)
    assert no_collector.count("collector") == 1 and roles.count("collector") == 1  # no view to turn right to
    assert not any("Task 2: Action Selection" in t for t in nc_texts)
    assert any("Task 2: Action Selection" in t for t in texts)
    assert len({tuple(r) for r in (roles, no_planner, no_manager)}) == 3 and nc_texts != texts


def test_the_collector_answers_without_refining_on_the_last_step(qworld):
    backend = Scripted(good_reply)
    episode = replace(bakery_episode(qworld), budget=2)  # the family's own budget, not max_steps, bounds it
    record = run(qworld, episode, PmaPolicy(backend_instance=backend))
    assert record["end_reason"] == "answered" and record["answer"] == "Panificio Bruno"
    last = [r for r in backend.requests if r[0] == "collector"]
    assert len(last) == 1 and "Task 2" not in user_text(last[0][1])


@pytest.mark.parametrize("family", ["needs", "landmarks"])
def test_families_without_answers_navigate_explore_and_stop(tiny_world, family):
    episode = tiny_world.episodes[0]
    if family == "landmarks":
        episode = replace(episode, family="landmarks", instruction="The goal is about 60 m east of the clock tower.",
                          details={"goal_relations": []})

    def reply(role, n, request):
        if role == "planner":
            return {"objects": [{"id": "tower_1", "class": "tower", "name": "clock tower"}],
                    "plan": [{"type": "Exploration", "landmark": "agent", "direction": "east", "target": "tower_1"},
                             {"type": "Collection", "requirement": "x"}]}
        if role == "explorer":
            return {"found": n >= 1, "action": "A"}
        return good_reply(role, n, request)

    backend = Scripted(reply)
    record = run(tiny_world, episode, PmaPolicy(backend_instance=backend), max_steps=10)
    assert "error" not in record and record["end_reason"] == "stopped" and record.get("answer") is None
    assert "collector" not in backend.roles() and "answerer" not in backend.roles()
    assert record["decisions"][0]["state"]["plan"] == ["Exploration(agent, east, tower_1)", "Stop()"]
    assert record["decisions"][-1]["decision"] == {"action": None}
    assert "Goal: " in user_text(backend.requests[0][1]) or family == "needs"


JUNK = ["", "   ", "{", "null", "[]", "no JSON here", '{"plan": 5}', '{"plan": [{"type": "navigation"}]}',
        '{"objects": "many"}', '{"objects": [{"view": "Q", "class": "x", "distance_m": "far"}, 7]}',
        '{"found": "maybe", "action": "A"}', '{"found": true, "action": "Z"}', '{"found": true}',
        '{"answer": ""}', '{"answer": "' + "x" * 300 + '"}', '{"answer": "ok", "action": "Fly"}',
        '{"answer": {"deep": [1, 2]}, "action": 3}', '{"action": "STOP", "action2": "B"}', "A" * 20_000,
        "\ud800 broken \udfff", "{" * 500 + "}" * 3, '{"answer": NaN, "found": Infinity}', '```json\n{"plan": [',
        '{"objects": [{"view": "A", "class": "", "distance_m": 1e309}]}', '{"action": -1, "found": "yes"}']


@pytest.mark.parametrize("role", ["planner", "manager", "navigator", "explorer", "collector", "answerer"])
def test_malformed_replies_at_one_role_fall_back_and_the_episode_goes_on(qworld, role):
    def reply(r, n, request):
        return JUNK[n % len(JUNK)] if r == role else good_reply(r, n, request)

    backend = Scripted(reply)
    record = run(qworld, replace(bakery_episode(qworld), budget=12),
                 PmaPolicy(backend_instance=backend, manager=role != "navigator"))
    assert "error" not in record, record.get("error")
    assert record["end_reason"] in ("answered", "stopped", "budget_exhausted")
    calls = [c for d in record["decisions"] for c in d["calls"]]
    bad = [c for c in calls if c["role"] == role]
    assert bad, f"no {role} call was made"
    assert sum(d["fallbacks"] for d in record["decisions"]) == sum("parse_error" in c for c in calls)
    assert any("parse_error" in c for c in bad)


def test_a_fuzzed_backend_never_crashes_an_episode(qworld, tiny_world):
    rng = np.random.default_rng(26)

    def reply(role, n, request):
        return JUNK[int(rng.integers(len(JUNK)))] if rng.random() < 0.6 else good_reply(role, n, request)

    episodes = [(qworld, replace(e, budget=8)) for e in qworld.episodes[:4]] + [(tiny_world, tiny_world.episodes[0])]
    fallbacks = 0
    for switches in ({}, {"planner": False}, {"manager": False}, {"collector": False}):
        for world, episode in episodes:
            record = run(world, episode, PmaPolicy(backend_instance=Scripted(reply), **switches), max_steps=8)
            assert "error" not in record, (switches, episode.episode_id, record.get("error"))
            fallbacks += sum(d["fallbacks"] for d in record["decisions"])
            json.dumps(record)
    assert fallbacks > 20


def test_every_reply_unreadable_ends_by_stopping_with_every_call_counted(qworld):
    backend = Scripted(lambda role, n, request: "I cannot tell.")
    record = run(qworld, replace(bakery_episode(qworld), budget=4), PmaPolicy(backend_instance=backend))
    assert "error" not in record and record["end_reason"] == "stopped" and record.get("answer") is None
    assert all(d["fallbacks"] == d["calls_n"] for d in record["decisions"])
    assert _calls(record)[0] == ["planner", "manager", "explorer"] and _calls(record)[-1] == ["manager", "collector"]


def test_settings_are_checked_and_described():
    with pytest.raises(ConfigError, match="planner must be true or false"):
        PmaPolicy(backend_instance=Scripted(good_reply), planner="yes")
    with pytest.raises(ConfigError, match="collect_steps"):
        PmaPolicy(backend_instance=Scripted(good_reply), collect_steps=0)
    with pytest.raises(ConfigError, match="arrive_m"):
        PmaPolicy(backend_instance=Scripted(good_reply), arrive_m=-1)
    agent = make_policy("pma", backend_instance=Scripted(good_reply), manager=False)
    described = agent.describe()
    assert described["policy"] == "pma" and described["manager"] is False and described["planner"] is True
    assert described["prompt_version"].startswith("cityseeker-pma/")
