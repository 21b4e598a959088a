"""The recording backend and the trace folder: every request kept in order, each distinct image once,
a crash leaving whole lines, and bad folders or lines named."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from cityseeker_ros.core.agents.vlm.backend import BACKENDS, GenerationRequest, Message, make_backend
from cityseeker_ros.core.agents.vlm.trace import REQUESTS, load_trace
from cityseeker_ros.core.infra.errors import ConfigError
from tests.core.agents.vlm.test_policy import Scripted


@pytest.fixture
def scripted(monkeypatch):
    made = []

    def factory(**params):
        made.append(Scripted(["one", "two", "three", "four"], **params))
        return made[-1]

    monkeypatch.setitem(BACKENDS._entries, "scripted-trace", factory)
    return made


def request(*images, text="Which way?", max_new=32):
    content = []
    for i, image in enumerate(images):
        content += [f"View {i}:", image]
    return GenerationRequest((Message("system", ("Choose.",)), Message("user", (*content, text))),
                             max_new_tokens=max_new, json_schema={"type": "object"})


def test_requests_come_back_in_order_with_their_images_stored_once(scripted, tmp_path):
    rng = np.random.default_rng(1)
    a, b = (rng.integers(0, 256, (6, 8, 3), dtype=np.uint8) for _ in range(2))
    backend = make_backend("recording", inner="scripted-trace", trace_out=str(tmp_path / "t"), model="m")
    sent = [request(a, b), request(b, a, text="Stop?", max_new=8), request(a)]
    replies = backend.generate(sent[:2]) + backend.generate(sent[2:])
    backend.close()
    assert [g.text for g in replies] == ["one", "two", "three"] and scripted[0].params == {"model": "m"}
    assert scripted[0].closed and backend.describe()["recorded_to"] == str(tmp_path / "t")
    assert len(list((tmp_path / "t" / "images").iterdir())) == 2  # a revisited view is stored once
    back = load_trace(tmp_path / "t")
    assert [r.max_new_tokens for r in back] == [32, 8, 32] and back[1].json_schema == {"type": "object"}
    for got, want in zip(back, sent):
        assert [m.role for m in got.messages] == [m.role for m in want.messages]
        for g, w in zip(got.messages[1].content, want.messages[1].content):
            assert (g == w) if isinstance(w, str) else np.array_equal(g, w) and g.dtype == w.dtype


def test_a_folder_in_use_and_a_missing_inner_backend_are_refused(scripted, tmp_path):
    make_backend("recording", inner="scripted-trace", trace_out=str(tmp_path / "t")).close()
    with pytest.raises(ConfigError, match=f"{REQUESTS} exists; give an empty or new folder"):
        make_backend("recording", inner="scripted-trace", trace_out=str(tmp_path / "t"))
    with pytest.raises(ConfigError, match="name the backend to record with inner=...; known: openai, .*transformers"):
        make_backend("recording", trace_out=str(tmp_path / "u"))
    with pytest.raises(ConfigError, match="give the trace folder with trace_out"):
        make_backend("recording", inner="scripted-trace")


def test_a_bad_line_or_a_missing_image_is_named(scripted, tmp_path):
    backend = make_backend("recording", inner="scripted-trace", trace_out=str(tmp_path / "t"))
    backend.generate([request(np.zeros((2, 2, 3), np.uint8))])
    backend.close()
    lines = (tmp_path / "t" / REQUESTS).read_text()
    (tmp_path / "t" / REQUESTS).write_text(lines + '{"messages": [}\n')
    with pytest.raises(ConfigError, match=rf"{REQUESTS} line 2: JSONDecodeError"):
        load_trace(tmp_path / "t")
    (tmp_path / "t" / REQUESTS).write_text(lines)
    for image in (tmp_path / "t" / "images").iterdir():
        image.unlink()
    with pytest.raises(ConfigError, match=rf"{REQUESTS} line 1: FileNotFoundError"):
        load_trace(tmp_path / "t")
    with pytest.raises(ConfigError, match="does not exist"):
        load_trace(tmp_path / "nothing")


def test_a_process_killed_while_recording_leaves_whole_lines(tmp_path):
    """Every request line is written whole and flushed: a kill mid-run loses only what was not yet sent."""
    script = f"""
import numpy as np, os, signal
from cityseeker_ros.core.agents.vlm.backend import BACKENDS, Generation, GenerationRequest, Message, make_backend
class Echo:
    def __init__(self, **_): pass
    def generate(self, requests): return [Generation("ok") for _ in requests]
    def close(self): pass
BACKENDS._entries["echo"] = Echo
backend = make_backend("recording", inner="echo", trace_out={str(tmp_path / "t")!r})
for i in range(40):
    image = np.full((64, 64, 3), i, np.uint8)
    backend.generate([GenerationRequest((Message("user", ("view", image, "q" * 5000)),))])
    if i == 25:
        os.kill(os.getpid(), signal.SIGKILL)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    back = load_trace(tmp_path / "t")
    assert len(back) == 26 and all(r.messages[0].content[1][0, 0, 0] == i for i, r in enumerate(back))
    assert not list((tmp_path / "t" / "images").glob("*.part"))
    assert all(json.loads(line) for line in (tmp_path / "t" / REQUESTS).read_text().splitlines())
