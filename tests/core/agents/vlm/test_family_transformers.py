"""The VLM policy on a question-like and a landmark-like episode end to end: a tiny random
Qwen2.5-VL loaded through the real transformers path reads each family's prompts (chat
template, images, the stop panorama, JSON schema with the answer field) and decides. Its replies
are noise, so this checks the plumbing: records name the family's prompt version, unusable
replies are counted fallbacks, the episodes finish, and lockstep episodes of two families
share one batched call."""
from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from cityseeker_ros.core.agents.vlm.backend import Backend, Generation, make_backend
from cityseeker_ros.core.agents.vlm.policy import VlmPolicy
from cityseeker_ros.core.evaluation.decisions import summarize_decisions
from cityseeker_ros.core.evaluation.episode_run import EpisodeRun, run_episode, run_together
from cityseeker_ros.core.sensing.views.source import ViewSource
from tests.core.agents.vlm.families import ASKS, GOALS, family_episode, test_families  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("test_families")


class NoiseViews(ViewSource):
    """Seeded noise per node and heading, and a panorama, so every prompt shape carries images."""

    name = "noise"

    def _image(self, node, salt: float, shape) -> np.ndarray:
        seed = zlib.crc32(f"{node.id}/{salt:.1f}".encode())
        return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)

    def images(self, node, headings):
        return [self._image(node, h, (28, 28, 3)) for h in headings]

    def panorama_view(self, node, facing):
        return self._image(node, 1000.0 + facing, (28, 56, 3))


@pytest.fixture(scope="module")
def tiny_qwen(tiny_checkpoints):
    backend = make_backend("transformers", model=str(tiny_checkpoints["qwen2.5-vl"]), dtype="float32",
                           device_map="cpu")
    yield backend
    backend.close()


@pytest.mark.parametrize("family", [ASKS, GOALS])
@pytest.mark.parametrize("mode", ["two-call", "single-call"])
def test_a_tiny_model_runs_each_family(tiny_world, tiny_qwen, family, mode):
    ep = family_episode(tiny_world, family)
    agent = VlmPolicy(backend_instance=tiny_qwen, mode=mode, max_new_tokens=8)
    record = run_episode(tiny_world, ep, agent, seed=0, max_steps=3, views=NoiseViews())
    assert "error" not in record, record.get("error")
    assert record["end_reason"] in ("budget_exhausted", "stopped", "answered")
    decisions = record["decisions"]
    assert decisions and all(f"+{family}/" in d["prompt_version"] for d in decisions)
    assert all(isinstance(r, str) for d in decisions for r in d["raw"])
    if mode == "two-call":
        assert decisions[0]["stop_input"] == "panorama"
    summary = summarize_decisions([record])
    assert summary["count"] == len(decisions) and summary["fallbacks"] == sum(d["fallback"] for d in decisions)
    json.dumps(record)


class Answering(Backend):
    """The real model's call, then a scripted reply in place of its noise: a question answered
    through the transformers request path."""

    name = "answering"

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    def generate(self, requests):
        out = []
        for request, real in zip(requests, self.inner.generate(requests)):
            asks = "answer" in (request.json_schema or {}).get("properties", {})
            text = json.dumps({"observation": "a sign", "thoughts": "t", "stop": True, "answer": "Café de Paris",
                               "confidence": 0.9}) if asks else real.text
            out.append(Generation(text, real.latency, real.prompt_tokens, real.completion_tokens))
        return out

    def describe(self):
        return {"name": self.name}


def test_a_question_is_answered_through_the_real_request_path(tiny_world, tiny_qwen):
    ep = family_episode(tiny_world, ASKS)
    agent = VlmPolicy(backend_instance=Answering(tiny_qwen), max_new_tokens=8)
    record = run_episode(tiny_world, ep, agent, seed=0, max_steps=3, views=NoiseViews())
    assert record["end_reason"] == "answered" and record["answer"] == "Café de Paris"
    [decision] = record["decisions"]
    assert decision["decision"]["answer"] == "Café de Paris" and decision["tokens"]["prompt"] > 0


def test_lockstep_episodes_of_two_families_share_one_batched_call(tiny_world, tiny_qwen):
    runs = [EpisodeRun(tiny_world, family_episode(tiny_world, f), VlmPolicy(backend_instance=tiny_qwen,
                                                                          max_new_tokens=8),
                       0, max_steps=2, views=NoiseViews()) for f in (ASKS, GOALS)]
    records = run_together(runs)
    for family, record in zip((ASKS, GOALS), records):
        assert "error" not in record and all(f"+{family}/" in d["prompt_version"] for d in record["decisions"])
