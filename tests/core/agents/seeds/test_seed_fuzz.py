"""Malformed replies at every call of every seed agent, on every family: the episode goes on
through the counted fallback and never crashes."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies import make_policy
from tests.core.agents.seeds.seed_support import AGENTS, FAMILIES, MAKERS, ByRole, good_reply, run

JUNK = ("", "   ", "null", "{", "}{", "[1, 2", '{"action": }', '{"action": "Z"}', '{"action": 7}', '{"action": null}',
        '{"landmarks": "many"}', '{"landmarks": [{"name": 5, "distance_m": "far"}]}',
        '{"landmarks": [{"name": "Radio Mast", "visible": true, "distance_m": -3}]}', '{"Answer_Q1": "nowhere"}',
        '{"Answer_Q1": [1e308, NaN]}', '{"new_plan": 42, "action": "STOP", "answer": ""}',
        '{"summary": [1]}',
        '{"final_decision": "revise"}', "```json\n{'action': 'A',}\n```", "\x00\ud800 STOP? continue?",
        "{" * 5000, "A" * 40_000, json.dumps({"action": ["A", "B"]}),
        '{"action": "STOP", "answer": "' + "x" * 500 + '"}')


UNREADABLE = ("", "   ", "null", "{", "}{", "[1, 2", '{"action": }', "{" * 5000)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    return {f: MAKERS[f](tmp_path_factory.mktemp(f)) for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("agent", AGENTS)
def test_malformed_replies_at_every_call_never_end_the_episode(worlds, agent, family):
    rng = np.random.default_rng(sum(map(ord, agent + family)))
    params = {"prep": {}, "navgpt": {"cot": True, "reflection": True}, "mapgpt": {"reflection": True}}[agent]
    for trial in range(3):
        def reply(request, p=(0.5, 0.9, 1.0)[trial], blank=trial == 2):  # half, nearly all, nothing readable
            if blank:
                return UNREADABLE[rng.integers(len(UNREADABLE))]
            return JUNK[rng.integers(len(JUNK))] if rng.random() < p else good_reply(request)

        record = run(worlds[family], make_policy(agent, backend_instance=ByRole(reply), **params), max_steps=4)
        assert "error" not in record, record.get("error")
        assert record["end_reason"] in ("stopped", "answered", "budget_exhausted", "invalid_action")
        steps = record["decisions"]
        assert steps and all(d["fallbacks"] == sum("parse_error" in c for c in d["calls"]) for d in steps)
        assert all(d["fallback"] == (d["fallbacks"] > 0) for d in steps)
        if trial == 2:
            assert all(d["fallback"] for d in steps)  # nothing was readable: every step fell back
        json.dumps(record)
