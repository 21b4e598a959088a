"""Golden prompts: each seed agent run against the loopback canned OpenAI-compatible server sends
exactly the messages recorded in tests/core/agents/seeds/fixtures/<agent>_golden.json (images
as their sizes: JPEG bytes vary with the encoder). A deliberate prompt change regenerates them:
CITYSEEKER_UPDATE_GOLDEN=1 pytest tests/core/agents/seeds/test_seed_golden.py, then review the diff."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.vlm import backend as vlm_backend
from cityseeker_ros.core.agents.vlm.backend import GenerationRequest, Message
from tests.core.agents.seeds.seed_support import good_reply, landmark_world, needs_world, run
from tests.core.agents.vlm import canned_server
from tests.core.agents.vlm.canned_server import MODEL, CannedServer
from tests.core.agents.vlm.test_openai_backend import decode

FIXTURES = Path(__file__).parent / "fixtures"
CASES = {"prep": ("landmarks", {}), "navgpt": ("needs", {"cot": True, "reflection": True}),
         "mapgpt": ("needs", {"cot": True, "reflection": True})}


def _request(body: dict) -> GenerationRequest:
    messages = []
    for m in body["messages"]:
        content = m["content"]
        parts = (content,) if isinstance(content, str) else tuple(p["text"] for p in content if p["type"] == "text")
        messages.append(Message(m["role"], parts))
    return GenerationRequest(tuple(messages))


def _answer(body: dict) -> dict:
    """The canned server's reply: what the role's readable reply is (seed_support.good_reply)."""
    return {"id": "x", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": good_reply(_request(body))}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}


def _placeholders(messages: list[dict]) -> list[dict]:
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [{"type": "image_url", "image_url": {"url": "<image {1}x{0}>".format(*decode(
                p["image_url"]["url"])[1].shape)}} if p["type"] == "image_url" else p for p in content]
        out.append({"role": m["role"], "content": content})
    return out


@pytest.mark.parametrize("json_schema", [True, False])
@pytest.mark.parametrize("agent", sorted(CASES))
def test_a_run_sends_the_golden_messages(tmp_path, monkeypatch, agent, json_schema):
    """The same messages with the reply schemas sent and without (the papers' free-text protocol)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(canned_server, "good_reply", _answer)
    family, params = CASES[agent]
    world = (landmark_world if family == "landmarks" else needs_world)(tmp_path)
    server = CannedServer()
    try:
        backend = vlm_backend.make_backend("openai", model=MODEL, base_url=server.url, timeout_s=5)
        record = run(world, make_policy(agent, backend_instance=backend, json_schema=json_schema, **params),
                     max_steps=2)
        posts = server.posts()
    finally:
        server.close()
    assert "error" not in record and not any(d["fallback"] for d in record["decisions"])
    sent = [_placeholders(p["body"]["messages"]) for p in posts]
    formats = [p["body"].get("response_format") for p in posts]
    assert all(f is not None and f["type"] == "json_schema" for f in formats) if json_schema else \
        all(f is None for f in formats)
    assert len(sent) == sum(d["calls_n"] for d in record["decisions"])
    assert all(c["tokens_in"] == 11 and c["tokens_out"] == 3 for d in record["decisions"] for c in d["calls"])
    path = FIXTURES / f"{agent}_golden.json"
    if os.environ.get("CITYSEEKER_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(sent, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert sent == json.loads(path.read_text(encoding="utf-8"))
