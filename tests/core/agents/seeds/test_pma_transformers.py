"""PMA end to end with a tiny random-weight Qwen2.5-VL through the real transformers path, on
each family it applies to: questions (answer), needs and landmark goals (stop). The model's
replies are noise, so this checks the plumbing: every call is made and recorded with tokens and
seconds, unreadable replies are counted fallbacks, and the episodes finish. A second run keeps
the real call but replaces its noise with readable replies, so a question is answered through it."""
from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from cityseeker_ros.core.agents.seeds.pma import PmaPolicy
from cityseeker_ros.core.agents.vlm.backend import Backend, Generation, make_backend
from tests.core.agents.seeds.pma_support import bakery_episode, good_reply, question_world, role_of, run

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def tiny_qwen(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from cityseeker_ros.core.agents.vlm.random_models import build_random_checkpoint

    folder = build_random_checkpoint("qwen2.5-vl", tmp_path_factory.mktemp("tiny_vlm") / "qwen2.5-vl", seed=0)
    backend = make_backend("transformers", model=str(folder), dtype="float32", device_map="cpu")
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def qworld(tmp_path_factory):
    return question_world(tmp_path_factory.mktemp("pma_tf") / "highstreet")


def _episode(family, qworld, tiny_world):
    if family == "questions":
        return qworld, replace(bakery_episode(qworld), budget=3)
    episode = tiny_world.episodes[0]
    if family == "landmarks":
        episode = replace(episode, family="landmarks", instruction="The goal is about 60 m east of the clock tower.",
                          details={"goal_relations": []})
    return tiny_world, episode


@pytest.mark.parametrize("family", ["questions", "needs", "landmarks"])
def test_a_tiny_model_runs_pma_on_each_family(tiny_qwen, qworld, tiny_world, family):
    world, episode = _episode(family, qworld, tiny_world)
    record = run(world, episode, PmaPolicy(backend_instance=tiny_qwen, max_new_tokens=8), max_steps=3)
    assert "error" not in record, record.get("error")
    assert record["end_reason"] in ("budget_exhausted", "stopped", "answered")
    calls = [c for d in record["decisions"] for c in d["calls"]]
    assert calls[0]["role"] == "planner" and {"manager", "explorer"} <= {c["role"] for c in calls}
    assert all(c["tokens_in"] > 0 and c["tokens_out"] >= 1 and c["seconds"] > 0 for c in calls)
    assert sum(d["fallbacks"] for d in record["decisions"]) == sum("parse_error" in c for c in calls)
    json.dumps(record)


class Readable(Backend):
    """The real model's call, then a readable reply in place of its noise."""

    name = "readable"

    def __init__(self, inner: Backend) -> None:
        self.inner, self.counts = inner, {}

    def generate(self, requests):
        out = []
        for request, real in zip(requests, self.inner.generate(requests)):
            role = role_of(request)
            n = self.counts.get(role, 0)
            self.counts[role] = n + 1
            text = json.dumps(good_reply(role, n, request))
            out.append(Generation(text, real.latency, real.prompt_tokens, real.completion_tokens))
        return out


def test_a_question_is_answered_through_the_real_request_path(tiny_qwen, qworld):
    record = run(qworld, replace(bakery_episode(qworld), budget=8),
                 PmaPolicy(backend_instance=Readable(tiny_qwen), max_new_tokens=4))
    assert record["end_reason"] == "answered" and record["answer"] == "Panificio Bruno"
    roles = [c["role"] for d in record["decisions"] for c in d["calls"]]
    assert roles[-2:] == ["collector", "answerer"]  # the high street has no view right of north to turn to
    assert record["decisions"][0]["tokens_in"] > 100  # the planner's text and the manager's images
