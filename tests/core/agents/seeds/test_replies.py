"""Structured replies: every call of every seed agent declares its reply schema once; against the
loopback canned server each call carries it as `response_format`, and replies written in that
schema (the plainest value each field allows) parse every time; with `json_schema` off no schema
is sent and the prompts are the same (the papers' free-text protocol). The schema's reader itself:
required fields, types, tolerant enums ("Keep: no change needed" is keep)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.seeds.replies import (
    ReplySchema,
    enum_field,
    flag_field,
    list_field,
    number_field,
    object_field,
    text_field,
)
from cityseeker_ros.core.agents.vlm import backend as vlm_backend
from tests.core.agents.seeds.seed_support import MAKERS, capped
from tests.core.agents.vlm import canned_server
from tests.core.agents.vlm.canned_server import MODEL, CannedServer

AGENTS = ("prep", "navgpt", "mapgpt", "pma")
SWITCHES = {"prep": {}, "navgpt": {"cot": True, "reflection": True}, "mapgpt": {"cot": True, "reflection": True},
            "pma": {}}


def example_reply(schema: dict[str, Any]) -> Any:
    """The plainest value a schema allows (first enum choice, one list item): what a server that
    enforces the schema may send."""
    kind = schema.get("type")
    if kind == "object":
        return {k: example_reply(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [example_reply(schema.get("items", {}))]
    if "enum" in schema:
        return schema["enum"][0]
    return {"string": "x", "number": 10.0, "boolean": True}[kind]


def _in_schema(body: dict) -> dict:
    schema = body["response_format"]["json_schema"]["schema"] if "response_format" in body else None
    content = json.dumps(example_reply(schema)) if schema else '{"action": "A", "answer": "x"}'
    return {"id": "x", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    return {family: make(tmp_path_factory.mktemp(family)) for family, make in MAKERS.items()}


def _run(world, agent, monkeypatch, **params):
    from cityseeker_ros.core.evaluation.episode_run import run_episode
    from tests.core.agents.vlm.test_family_transformers import NoiseViews

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(canned_server, "good_reply", _in_schema)
    server = CannedServer()
    try:
        backend = vlm_backend.make_backend("openai", model=MODEL, base_url=server.url, timeout_s=5)
        policy = make_policy(agent, backend_instance=backend, **SWITCHES[agent], **params)
        record = run_episode(world, capped(world.episodes[0], 4), policy, seed=0, max_steps=4, views=NoiseViews())
        return record, [p["body"] for p in server.posts()]
    finally:
        server.close()


@pytest.mark.parametrize("family", sorted(MAKERS))
@pytest.mark.parametrize("agent", AGENTS)
def test_every_call_carries_its_schema_and_replies_in_it_always_parse(worlds, monkeypatch, agent, family):
    record, bodies = _run(worlds[family], agent, monkeypatch)
    assert "error" not in record, record.get("error")
    calls = [c for d in record["decisions"] for c in d["calls"]]
    assert calls and len(bodies) == len(calls)
    assert all(b["response_format"]["type"] == "json_schema" for b in bodies)
    assert [b["response_format"]["json_schema"]["name"] for b in bodies] == [c["schema"] for c in calls]
    unread = [(c["role"], c["parse_error"]) for c in calls if "parse_error" in c]
    assert not unread, unread
    assert sum(d["fallbacks"] for d in record["decisions"]) == 0


@pytest.mark.parametrize("agent", AGENTS)
def test_with_the_switch_off_no_schema_is_sent_and_the_prompts_are_the_same(worlds, monkeypatch, agent):
    world = worlds["landmarks" if agent == "prep" else "questions" if agent == "pma" else "needs"]
    on_record, on = _run(world, agent, monkeypatch)
    off_record, off = _run(world, agent, monkeypatch, json_schema=False)
    assert off and not any("response_format" in b for b in off)
    assert off[0]["messages"] == on[0]["messages"]  # the replies differ after (test_seed_golden checks whole runs)
    assert off_record["decisions"] and make_policy(agent, backend="openai", model="m",
                                                   json_schema=False).describe()["json_schema"] is False


SIGHTED = ReplySchema("Sighted", {"seen": list_field(object_field({"name": text_field(), "far": number_field(),
                                                                    "visible": flag_field()}, ("name",))),
                                  "verdict": enum_field("keep", "revise"), "note": text_field()}, ("seen",))


@pytest.mark.parametrize("text, verdict", [('{"seen": [], "verdict": "Keep: no change needed"}', "keep"),
                                           ('{"seen": [], "verdict": "revised"}', "revise"),
                                           ('{"seen": [], "verdict": "keep or revise"}', None),
                                           ('{"seen": [], "verdict": "unsound, change it"}', None)])
def test_an_enum_is_read_from_its_own_words_only(text, verdict):
    read = SIGHTED.read(text)
    assert read.ok and read.fields.get("verdict") == verdict


def test_types_are_coerced_required_fields_enforced_and_bad_items_dropped():
    read = SIGHTED.read('Here: {"seen": [{"name": "tower", "far": "30 m", "visible": "yes"}, {"far": 3}, 7], '
                        '"note": 5}')
    assert read.ok and read.fields == {"seen": [{"name": "tower", "far": 30.0, "visible": True}], "note": "5"}
    for bad, why in (('{"note": "x"}', "'seen' is missing"), ('{"seen": "tower"}', "not a list"),
                     ("no JSON", "no JSON object"), ('{"seen": {"a": 1}}', "not a list")):
        got = SIGHTED.read(bad)
        assert not got.ok and got.fields is None and why in got.error, (bad, got.error)
    assert SIGHTED.read('{"seen": [{"name": "x", "far": "far"}]}').fields["seen"] == [{"name": "x"}]


def test_the_schema_sent_requires_every_field_at_every_level_and_declares_its_name():
    schema = SIGHTED.json_schema()
    assert schema["title"] == "Sighted" and schema["required"] == ["seen", "verdict", "note"]
    item = schema["properties"]["seen"]["items"]
    assert item["required"] == ["name", "far", "visible"] and item["additionalProperties"] is False
    assert schema["properties"]["verdict"]["enum"] == ["keep", "revise"]
    with pytest.raises(ValueError, match="required field"):
        ReplySchema("Broken", {"a": text_field()}, ("b",))
