"""Each seed agent end to end on each family with a tiny random-weight Qwen2.5-VL loaded through
the real transformers path (chat template, images, generation). Its replies are noise: this
checks the plumbing. Every call is logged with the tokens the backend counted, unreadable
replies are counted fallbacks, the episodes finish, and the report's summary counts them."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.vlm.backend import make_backend
from cityseeker_ros.core.evaluation.decisions import summarize_decisions
from tests.core.agents.seeds.seed_support import AGENTS, FAMILIES, MAKERS, run
from tests.core.agents.vlm.conftest import tiny_checkpoints  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def tiny_qwen(tiny_checkpoints):  # noqa: F811
    backend = make_backend("transformers", model=str(tiny_checkpoints["qwen2.5-vl"]), dtype="float32",
                           device_map="cpu")
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    return {f: MAKERS[f](tmp_path_factory.mktemp(f)) for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("agent", AGENTS)
def test_a_tiny_model_runs_each_agent_on_each_family(worlds, tiny_qwen, agent, family):
    policy = make_policy(agent, backend_instance=tiny_qwen, max_new_tokens=8)
    record = run(worlds[family], policy, max_steps=2)
    assert "error" not in record, record.get("error")
    assert record["end_reason"] in ("budget_exhausted", "stopped", "answered", "invalid_action")
    steps = record["decisions"]
    assert steps and all(d["agent"] == agent and d["calls_n"] == len(d["calls"]) >= 1 for d in steps)
    calls = [c for d in steps for c in d["calls"]]
    assert all(c["tokens_in"] > 0 and 0 < c["tokens_out"] <= 8 and c["seconds"] > 0 for c in calls)
    assert all(d["tokens_in"] == sum(c["tokens_in"] for c in d["calls"]) for d in steps)
    summary = summarize_decisions([record])
    row = summary["agents"][agent]
    assert row["steps"] == len(steps) and row["calls"] == len(calls)
    assert summary["fallbacks"] == sum(d["fallback"] for d in steps)
    json.dumps(record)
