"""Golden prompts: a PMA question episode against the loopback canned OpenAI-compatible server
sends exactly the recorded requests (images shown as `<image WxH>`, since their encoding is the
backend's business). To re-record after a deliberate prompt change:
PMA_GOLDEN_WRITE=1 pytest tests/core/agents/seeds/test_pma_golden.py, then review the diff."""
from __future__ import annotations

import base64
import io
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from cityseeker_ros.core.agents.seeds.pma import PmaPolicy
from cityseeker_ros.core.agents.vlm.openai_backend import OpenAIBackend
from tests.core.agents.seeds.pma_support import bakery_episode, good_reply, question_world, run
from tests.core.agents.vlm.canned_server import MODEL, CannedServer

GOLDEN = Path(__file__).parent / "fixtures" / "pma_question.json"
# The first exploration's share of the 10 steps is 2 ("auto" subtask_steps: 8 steps left among three
# sub-tasks), so the navigation walks step 2 without a call; the bakery is found at step 3.
ORDER = ["planner", "manager", "explorer", "manager", "explorer", "manager", "manager", "explorer",
         "collector", "answerer"]


def _completion(role: str, n: int) -> dict:
    reply = {"thoughts": "looking", "found": n >= 2, "action": "A"} if role == "explorer" else good_reply(role, n, None)
    return {"id": "x", "object": "chat.completion", "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": json.dumps(reply)}}],
            "usage": {"prompt_tokens": 100 + n, "completion_tokens": 10}}


def _shown(part):
    if isinstance(part, dict) and part.get("type") == "image_url":
        from PIL import Image

        data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
        width, height = Image.open(io.BytesIO(data)).size
        return f"<image {width}x{height}>"
    return part["text"] if isinstance(part, dict) and part.get("type") == "text" else part


def _requests(server: CannedServer) -> list[dict]:
    out = []
    for post in server.posts():
        body = post["body"]
        messages = [{"role": m["role"], "content": [_shown(p) for p in m["content"]] if isinstance(m["content"], list)
                     else m["content"]} for m in body["messages"]]
        out.append({"messages": messages, "max_tokens": body.get("max_tokens"),
                    "response_format": body.get("response_format")})
    return out


@pytest.fixture
def server():
    s = CannedServer()
    yield s
    s.close()


def test_a_question_episode_sends_the_golden_requests(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    world = question_world(tmp_path / "highstreet")
    counts: dict[str, int] = {}
    for role in ORDER:
        server.script.append({"body": _completion(role, counts.setdefault(role, 0))})
        counts[role] += 1
    backend = OpenAIBackend(base_url=server.url, model=MODEL, timeout_s=10.0, max_concurrency=1)
    try:
        record = run(world, replace(bakery_episode(world), budget=10), PmaPolicy(backend_instance=backend,
                                                                                 max_new_tokens=64))
    finally:
        backend.close()
    assert [c["role"] for d in record["decisions"] for c in d["calls"]] == ORDER
    assert record["end_reason"] == "answered" and record["answer"] == "Panificio Bruno"
    sent = _requests(server)
    assert [c["role"] for d in record["decisions"] for c in d["calls"]] == ORDER
    assert [c["tokens_in"] for d in record["decisions"] for c in d["calls"]][:3] == [100, 100, 100]
    if os.environ.get("PMA_GOLDEN_WRITE"):
        GOLDEN.write_text(json.dumps({"requests": sent}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))["requests"]
    assert len(sent) == len(golden)
    assert all(r["response_format"]["type"] == "json_schema" for r in sent)  # every call declares its reply
    for i, (got, want) in enumerate(zip(sent, golden)):
        assert got == want, f"request {i} ({ORDER[i]}) differs from {GOLDEN.name}"
