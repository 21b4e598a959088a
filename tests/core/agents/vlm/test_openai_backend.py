"""OpenAIBackend against a canned OpenAI-compatible server (every failure mode, scripted) and
against a real one: `transformers serve` on CPU serving a tiny random LLaVA from a local folder."""
from __future__ import annotations

import base64
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from cityseeker_ros.core.agents.vlm.backend import BackendError, GenerationRequest, Message, make_backend
from cityseeker_ros.core.agents.vlm.openai_backend import OpenAIBackend
from cityseeker_ros.core.infra.errors import ConfigError
from tests.core.agents.vlm.canned_server import MODEL, CannedServer

SECRET = "sk-test-not-a-real-key-7f3a"
FAST = {"backoff_s": 0.01, "backoff_max_s": 0.05}  # retries in milliseconds, not seconds


@pytest.fixture
def server() -> Iterator[CannedServer]:
    s = CannedServer()
    yield s
    s.close()


@pytest.fixture
def backend_for(server: CannedServer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made: list[OpenAIBackend] = []

    def make(**kw: Any) -> OpenAIBackend:
        params = {"base_url": server.url, "model": MODEL, "timeout_s": 5.0, **FAST, **kw}
        made.append(OpenAIBackend(**params))
        return made[-1]

    yield make
    for b in made:
        b.close()


def two_colour_image(h: int = 16, w: int = 24) -> np.ndarray:
    """Left half pure red, right half pure blue: a BGR swap turns one into the other."""
    img = np.zeros((h, w, 3), np.uint8)
    img[:, : w // 2] = (255, 0, 0)
    img[:, w // 2:] = (0, 0, 255)
    return img


def decode(url: str) -> tuple[str, np.ndarray]:
    header, payload = url.split(",", 1)
    assert header.endswith(";base64")
    pil = Image.open(io.BytesIO(base64.b64decode(payload)))
    assert pil.mode == "RGB"
    return header[len("data:"):-len(";base64")], np.asarray(pil)


def ask(text: str, *images: np.ndarray, **kw: Any) -> GenerationRequest:
    return GenerationRequest(messages=(Message("user", (text, *images)),), **kw)


# ----- request body -----

def test_body_text_images_in_order_and_sampling(server, backend_for):
    noise = np.random.default_rng(0).integers(0, 256, (10, 14, 3), dtype=np.uint8)
    noise[0, 0] = (255, 0, 0)
    noise[-1, -1] = (0, 0, 255)
    b = backend_for(image_format="png", extra_body={"top_k": 5})
    req = GenerationRequest(
        messages=(Message("system", ("You navigate.",)),
                  Message("user", ("first", two_colour_image(), "second", noise, "which?"))),
        max_new_tokens=7, temperature=0.3)
    [gen] = b.generate([req])

    body = server.posts()[0]["body"]
    assert body["model"] == MODEL
    assert body["temperature"] == 0.3 and body["max_tokens"] == 7 and body["max_completion_tokens"] == 7
    assert body["top_k"] == 5 and "response_format" not in body
    assert body["messages"][0] == {"role": "system", "content": "You navigate."}
    parts = body["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text", "image_url", "text"]
    assert [p["text"] for p in parts if p["type"] == "text"] == ["first", "second", "which?"]
    mime, first = decode(parts[1]["image_url"]["url"])
    assert mime == "image/png"
    np.testing.assert_array_equal(first, two_colour_image())
    np.testing.assert_array_equal(decode(parts[3]["image_url"]["url"])[1], noise)

    assert gen.text == "echo: which?"
    assert (gen.prompt_tokens, gen.completion_tokens) == (11, 3)
    assert gen.latency.preprocess_s > 0 and gen.latency.generate_s > 0


def test_jpeg_keeps_rgb_order_and_max_image_side(server, backend_for):
    b = backend_for(image_format="jpeg", jpeg_quality=95, max_image_side=12)
    b.generate([ask("look", two_colour_image(16, 24)), ask("look", two_colour_image(32, 48))])
    for post in server.posts():
        mime, img = decode(post["body"]["messages"][0]["content"][1]["image_url"]["url"])
        assert mime == "image/jpeg" and img.shape == (8, 12, 3)
        left, right = img[:, :4].reshape(-1, 3).mean(0), img[:, -4:].reshape(-1, 3).mean(0)
        assert left[0] > 200 and left[2] < 60, left  # still red, not blue
        assert right[2] > 200 and right[0] < 60, right


def test_batch_order_and_concurrency_limit(server, backend_for):
    server.default_delay = 0.15
    b = backend_for(max_concurrency=3)
    gens = b.generate([ask(f"q{i}") for i in range(8)])
    assert [g.text for g in gens] == [f"echo: q{i}" for i in range(8)]
    assert server.max_in_flight == 3
    assert b.generate([]) == []


# ----- structured output -----

SCHEMA = {"title": "Decision", "type": "object", "properties": {"action": {"type": "string"}}}


def test_json_modes(server, backend_for):
    auto = backend_for(json_mode="auto")
    auto.generate([ask("a", json_schema=SCHEMA)])  # one at a time: concurrent posts may arrive in any order
    auto.generate([ask("plain")])
    backend_for(json_mode="object").generate([ask("a", json_schema=SCHEMA)])
    backend_for(json_mode="off").generate([ask("a", json_schema=SCHEMA)])
    bodies = [p["body"] for p in server.posts()]
    assert bodies[0]["response_format"] == {"type": "json_schema", "json_schema": {"name": "Decision",
                                                                                   "schema": SCHEMA}}
    assert "response_format" not in bodies[1]  # the request did not ask for JSON
    assert bodies[2]["response_format"] == {"type": "json_object"}
    assert "response_format" not in bodies[3]


def test_auto_falls_back_when_response_format_is_rejected(server, backend_for):
    b = backend_for(json_mode="auto")
    assert b.describe()["json_mode_resolved"] == "schema"
    server.script.append({"status": 400, "body": {"error": {"message": "response_format is not supported"}}})
    [gen] = b.generate([ask("a", json_schema=SCHEMA)])
    b.generate([ask("b", json_schema=SCHEMA)])
    assert gen.text == "echo: a"
    bodies = [p["body"] for p in server.posts()]
    assert len(bodies) == 3 and "response_format" in bodies[0]
    assert "response_format" not in bodies[1] and "response_format" not in bodies[2]  # remembered
    assert b.describe()["json_mode_resolved"] == "off"


def test_explicit_schema_mode_rejected_is_config_error(server, backend_for):
    server.script.append({"status": 400, "body": {"detail": "unknown field response_format"}})
    with pytest.raises(ConfigError, match="json_mode 'schema'"):
        backend_for(json_mode="schema").generate([ask("a", json_schema=SCHEMA)])


# ----- retries -----

def test_500_then_success_is_retried(server, backend_for):
    server.script.append({"status": 500, "body": {"error": "boom"}})
    [gen] = backend_for(retries=2).generate([ask("x")])
    assert gen.text == "echo: x" and len(server.posts()) == 2


def test_5xx_until_retries_run_out(server, backend_for):
    server.script.extend({"status": 503, "body": {"error": "overloaded"}} for _ in range(3))
    with pytest.raises(BackendError, match=r"^HTTP 503.*3 attempt") as err:
        backend_for(retries=2).generate([ask("x")])
    assert server.url in str(err.value) and len(server.posts()) == 3


def test_429_honours_retry_after(server, backend_for):
    server.script.append({"status": 429, "body": {"error": "slow down"}, "headers": {"Retry-After": "1"}})
    [gen] = backend_for(retries=1).generate([ask("x")])
    first, second = server.posts()
    assert gen.text == "echo: x"
    assert second["t"] - first["t"] >= 0.95


def test_timeout_retried_then_reported(server, backend_for):
    server.script.append({"delay": 1.0})
    [gen] = backend_for(timeout_s=0.3, retries=1).generate([ask("x")])
    assert gen.text == "echo: x" and len(server.posts()) == 2

    server.script.extend([{"delay": 1.0}, {"delay": 1.0}])
    t0 = time.monotonic()
    with pytest.raises(BackendError, match="timed out") as err:
        backend_for(timeout_s=0.3, retries=1).generate([ask("y")])
    assert server.url in str(err.value) and time.monotonic() - t0 < 2.0


def test_seeded_backoff_repeats(server, backend_for):
    a = backend_for(seed=7, backoff_s=1.0, backoff_max_s=100.0)
    b = backend_for(seed=7, backoff_s=1.0, backoff_max_s=100.0)
    delays = [a._backoff(k, None) for k in range(4)]
    assert delays == [b._backoff(k, None) for k in range(4)]
    assert all(0.5 * 2 ** k <= d <= 2 ** k for k, d in enumerate(delays))
    assert a._backoff(0, 5.0) == 5.0


# ----- errors a user must fix -----

def test_api_key_from_env_only_and_never_shown(server, backend_for, monkeypatch):
    monkeypatch.setenv("CITYSEEKER_TEST_KEY", SECRET)
    b = backend_for(api_key_env="CITYSEEKER_TEST_KEY")
    b.generate([ask("x")])
    assert all(r["headers"].get("Authorization") == f"Bearer {SECRET}" for r in server.requests)
    assert SECRET not in json.dumps(b.describe()) and SECRET not in repr(b) and SECRET not in str(vars(b))

    server.script.append({"status": 401, "body": {"error": "bad key"}})
    with pytest.raises(BackendError, match=r"\$CITYSEEKER_TEST_KEY was rejected") as err:
        b.generate([ask("x")])
    assert SECRET not in str(err.value)
    assert len(server.posts()) == 2  # a rejected key is not retried

    server.requests.clear()
    backend_for(api_key_env=None).generate([ask("x")])
    assert all("Authorization" not in r["headers"] for r in server.requests)


def test_404_model_is_config_error(server, backend_for):
    server.script.append({"status": 404, "body": {"error": {"message": "The model `tiny-vlm` does not exist."}}})
    with pytest.raises(ConfigError, match="model 'tiny-vlm'"):
        backend_for(retries=3).generate([ask("x")])
    assert len(server.posts()) == 1


def test_malformed_replies(server, backend_for):
    b = backend_for()
    server.script.append({"body": "{not json"})
    with pytest.raises(BackendError, match="not JSON"):
        b.generate([ask("x")])
    server.script.append({"body": {"choices": []}})
    with pytest.raises(BackendError, match="malformed chat completion"):
        b.generate([ask("x")])


def test_start_up_check(server, backend_for):
    b = backend_for()
    assert b.check() == [MODEL]
    assert server.requests[0]["path"] == "/v1/models"
    server.models = {"data": [{"id": "other-model"}]}
    with pytest.raises(ConfigError, match="'tiny-vlm' is not served.*other-model"):
        backend_for()
    server.models_status = 404
    with pytest.raises(ConfigError, match="/v1"):
        backend_for()
    server.models_status, server.models = 200, {"data": []}
    backend_for()  # a server that lists nothing is taken at its word
    assert backend_for(check_on_start=False, retries=0) is not None


def test_unreachable_server_fails_fast():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    t0 = time.monotonic()
    with pytest.raises(BackendError) as err:
        OpenAIBackend(url, MODEL, retries=2, **FAST)
    # The cause first, in words; then what was asked and how often.
    assert str(err.value).startswith(f"cannot reach the server at {url}: connection refused (GET {url}/models, "
                                     "3 attempt(s))"), err.value
    b = OpenAIBackend(url, MODEL, retries=1, check_on_start=False, **FAST)
    with pytest.raises(BackendError, match=url):
        b.generate([ask("x")])
    b.close()
    assert time.monotonic() - t0 < 3.0


def test_registry_and_describe(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    b = make_backend("openai", base_url=server.url + "/", model=MODEL, image_format="png")
    try:
        d = b.describe()
        assert d["name"] == "openai" and d["base_url"] == server.url and d["model"] == MODEL
        assert d["json_mode"] == "auto" and d["image_format"] == "png" and d["authenticated"] is True
        assert SECRET not in json.dumps(d)
    finally:
        b.close()
    with pytest.raises(ConfigError, match="bad parameters"):
        make_backend("openai", base_url=server.url, model=MODEL, api_key=SECRET)
    with pytest.raises(ConfigError, match="json_mode"):
        OpenAIBackend(server.url, MODEL, json_mode="strict")
    with pytest.raises(ConfigError, match="base_url"):
        OpenAIBackend("localhost:8000", MODEL)


# ----- a real server -----

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_real_transformers_serve(tiny_checkpoints, tmp_path):
    """`transformers serve` pinned to a local LLaVA folder, CPU only, offline, on loopback.

    It lists the Hugging Face cache at /v1/models (and answers 500 when the cache folder is
    missing), so HF_HOME points at an empty cache: the start-up check then sees an empty list.
    It accepts and ignores response_format."""
    import httpx

    model_dir = Path(tiny_checkpoints["llava"])
    (tmp_path / "hf" / "hub").mkdir(parents=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "CUDA_VISIBLE_DEVICES": "", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("OPENAI_API_KEY", None)
    port = _free_port()
    cmd = [sys.executable, "-m", "transformers.cli.transformers", "serve", "--host", "127.0.0.1",
           "--port", str(port), "--device", "cpu", str(model_dir)]
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        t0, deadline = time.monotonic(), time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"server exited {proc.returncode}:\n{log_path.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"server not ready in 60 s:\n{log_path.read_text()[-3000:]}"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        start_s = time.monotonic() - t0

        b = OpenAIBackend(f"http://127.0.0.1:{port}/v1", str(model_dir), max_concurrency=2, timeout_s=30, retries=1)
        try:
            rng = np.random.default_rng(0)
            views = [rng.integers(0, 256, (32, 48, 3), dtype=np.uint8) for _ in range(2)]
            reqs = [ask("Which view shows the cafe?", *views, max_new_tokens=8),
                    ask("Answer in JSON.", *views, max_new_tokens=8, json_schema=SCHEMA)]
            t1 = time.monotonic()
            gens = b.generate(reqs)
            gen_s = time.monotonic() - t1
        finally:
            b.close()
        for g in gens:
            assert g.text, gens
            assert g.completion_tokens is not None and 1 <= g.completion_tokens <= 8
            assert g.prompt_tokens is not None and g.prompt_tokens > 5
            assert g.latency.generate_s > 0
        assert b.describe()["json_mode_resolved"] == "schema"  # accepted, not rejected
        print(f"transformers serve ready in {start_s:.1f} s; 2 requests x 2 images in {gen_s:.2f} s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
