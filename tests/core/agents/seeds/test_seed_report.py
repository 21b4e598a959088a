"""What the report shows of the seed agents: calls, tokens and seconds per step per agent in the
decisions table, and loops (VLN-MME's main error: 106 of 131) counted in the failure tree."""
from __future__ import annotations

import json
import re

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.evaluation.decisions import summarize_decisions
from cityseeker_ros.core.evaluation.failures import episode_tags, failure_tree
from cityseeker_ros.core.evaluation.report.page import decisions_table
from tests.core.agents.seeds.seed_support import ByRole, good_reply, needs_world, role_of, run, texts


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return needs_world(tmp_path_factory.mktemp("w"))


def test_the_decisions_table_shows_calls_tokens_and_seconds_per_step_per_agent(tiny):
    records = [run(tiny, make_policy(a, backend_instance=ByRole(), **p), max_steps=2)
               for a, p in (("prep", {}), ("navgpt", {}))]
    summary = summarize_decisions(records)
    prep, navgpt = summary["agents"]["prep"], summary["agents"]["navgpt"]
    steps = records[0]["decisions"]
    assert prep["steps"] == len(steps) and prep["calls"] == sum(d["calls_n"] for d in steps)
    assert prep["calls_per_step"] == pytest.approx(prep["calls"] / prep["steps"], abs=1e-4)
    assert prep["tokens_in_per_step"] == pytest.approx(7 * prep["calls_per_step"], abs=1e-3)
    assert prep["tokens_out"] == 2 * prep["calls"] and set(prep["roles"]) == {"perception", "memory", "planning"}
    assert navgpt["calls_per_step"] == 1.0 and navgpt["roles"] == {"action": navgpt["calls"]}
    table = decisions_table({"decisions": summary})
    rows = dict(table.rows)
    assert rows["navgpt: calls / tokens in / tokens out / seconds per step"].startswith("1.00 / 7.0 / 2.0 / ")
    assert rows["navgpt: calls by role (unreadable)"] == f"action {navgpt['calls']} (0)"
    json.dumps(summary)


def test_an_oscillating_agent_is_counted_as_a_loop_in_the_failure_tree(tiny):
    def back_and_forth(request):
        if role_of(request) != "action":
            return good_reply(request)
        visited = re.findall(r'"([A-Z])": "[^"]*, visited\.', texts(request))
        return json.dumps({"action": visited[0] if visited else "A", "description": "the way I came"})

    record = run(tiny, make_policy("navgpt", backend_instance=ByRole(back_and_forth)), max_steps=4)
    assert len(set(record["path"])) < len(record["path"])  # it went back and forth
    assert "loop" in episode_tags(record)
    tree = failure_tree([record])
    assert tree["tags"]["loop"] == 1
    failure = next(c for c in tree["children"] if c["key"] == "failure")
    assert failure["count"] == 1 and failure["tags"]["loop"] == 1
