"""navgpt and mapgpt: one action call per step with the views; the text summary and the text
map as memory; `cot` and `reflection` each change the calls sent."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from tests.core.agents.seeds.seed_support import ByRole, good_reply, needs_world, question_world, role_of, run, texts


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return needs_world(tmp_path_factory.mktemp("w"))


def _system(backend: ByRole) -> str:
    return backend.requests[0][1].messages[0].content[0]


@pytest.mark.parametrize("agent", ["navgpt", "mapgpt"])
def test_one_call_a_step_with_the_views_and_the_options(tiny, agent):
    backend = ByRole()
    record = run(tiny, make_policy(agent, backend_instance=backend), max_steps=3)
    assert [[c["role"] for c in d["calls"]] for d in record["decisions"]] == [["action"]] * len(record["decisions"])
    _, request = backend.requests[1]
    body = request.messages[-1].content
    assert "Action options:" in body[0] and '"STOP": "Have reached the destination and stop here."' in body[0]
    assert len(request.images) == len([c for c in body if isinstance(c, str) and c.startswith("Option ")])
    system = _system(backend)
    assert "Avoid loops" in system and "<Reasoning>" not in system and "reasoning" not in system
    assert ("Map -" in system) == (agent == "mapgpt")


def test_navgpt_remembers_a_text_summary(tiny):
    backend = ByRole()
    run(tiny, make_policy("navgpt", backend_instance=backend), max_steps=3)
    later = texts(backend.requests[2][1])
    assert "History: Navigation starts.\nStep 1: Turning heading direction" in later
    assert "meters towards a long avenue." in later and "Step 2:" in later and "Map:" not in later


def test_mapgpt_writes_the_topological_map(tiny):
    backend = ByRole()
    run(tiny, make_policy("mapgpt", backend_instance=backend), max_steps=3)
    first, later = texts(backend.requests[0][1]), texts(backend.requests[2][1])
    assert "Map: only node_0 so far." in first
    assert "Map: node_0 is connected to node_1." in later and "node_1 is connected to node_0" in later
    assert "You are at node_" in later and "Visited nodes: node_0, node_1" in later


@pytest.mark.parametrize("agent", ["navgpt", "mapgpt"])
def test_cot_and_reflection_each_change_the_calls_sent(tiny, agent):
    sent = {}
    for params in ({}, {"cot": True}, {"reflection": True}):
        backend = ByRole(lambda r: json.dumps({**json.loads(good_reply(r)), "final_decision": "revise"})
                         if role_of(r) == "action" else good_reply(r))
        run(tiny, make_policy(agent, backend_instance=backend, **params), max_steps=1)
        sent[json.dumps(params)] = (backend.roles(), _system(backend))
    base, cot, reflection = sent.values()
    assert base[0] == cot[0] == ["action"] and reflection[0] == ["action", "replan"]
    assert '"reasoning"' in cot[1] and '"reasoning"' not in base[1]
    assert '"final_decision"' in reflection[1] and '"final_decision"' not in base[1]


def test_a_kept_reflection_makes_no_second_call(tiny):
    backend = ByRole()
    record = run(tiny, make_policy("navgpt", backend_instance=backend, reflection=True), max_steps=2)
    assert backend.roles() == ["action"] * len(record["decisions"])


def test_a_revised_decision_is_replanned_with_the_first_reply_shown(tiny):
    def reply(request):
        if role_of(request) == "replan":
            return json.dumps({"action": "STOP", "description": "here"})
        return json.dumps({"action": "A", "reflection": "this loops", "final_decision": "Revise"})

    backend = ByRole(reply)
    record = run(tiny, make_policy("mapgpt", backend_instance=backend, reflection=True), max_steps=2)
    assert record["end_reason"] == "stopped" and backend.roles() == ["action", "replan"]
    replan = backend.requests[1][1]
    assert replan.messages[-2].role == "assistant" and "this loops" in replan.messages[-2].content[0]
    assert record["decisions"][0]["state"]["revised"] is True


@pytest.mark.parametrize("agent", ["navgpt", "mapgpt", "prep"])
def test_a_question_is_answered_by_the_stop(tmp_path, agent):
    world = question_world(tmp_path)

    def reply(request):
        role = role_of(request)
        if role in ("action", "planning"):
            return json.dumps({"action": "STOP", "answer": "Panificio Bruno", "description": "here"})
        return good_reply(request)

    backend = ByRole(reply)
    record = run(world, make_policy(agent, backend_instance=backend), max_steps=3)
    assert record["end_reason"] == "answered" and record["answer"] == "Panificio Bruno"
    assert record["decisions"][-1]["decision"] == {"action": None, "answer": "Panificio Bruno"}
    choosing = [r for role, r in backend.requests if role in ("action", "planning")][0]
    assert '"answer": "<your answer when you stop, else empty>"' in texts(choosing)


@pytest.mark.parametrize("agent", ["navgpt", "mapgpt"])
@pytest.mark.parametrize("said, noted", [("Keep: no change needed", "keep"), ("keep, this is sound", "keep"),
                                         ("Keep. No revision or change needed.", "keep"), ("keep", "keep"),
                                         ("revised: the move is unsound", "revise"), ("REVISE", "revise"),
                                         ("maybe", "unread"), ("keep or revise", "unread")])
def test_the_replan_is_decided_by_the_final_decision_field_alone(tiny, agent, said, noted):
    """Words such as "change" or "unsound" elsewhere never replan; an unreadable or two-way
    final_decision keeps the choice and is noted as unread."""
    def reply(request):
        if role_of(request) == "replan":
            return json.dumps({"action": "A", "description": "on"})
        return json.dumps({"action": "A", "description": "on", "reflection": "no change, nothing unsound",
                           "final_decision": said})

    backend = ByRole(reply)
    record = run(tiny, make_policy(agent, backend_instance=backend, reflection=True, max_new_tokens=64),
                 max_steps=4)
    steps, replans = len(record["decisions"]), noted == "revise"
    assert backend.roles() == (["action", "replan"] if replans else ["action"]) * steps
    assert [d["state"]["final_decision"] for d in record["decisions"]] == [noted] * steps
    assert record["decisions"][0]["state"].get("revised", False) is replans
