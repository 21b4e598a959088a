"""The page's messages: every malformed, oversized or out-of-range one is named and dropped."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from cityseeker_ros.core.ar.protocol import (
    MAX_FRAME_BYTES,
    Cancel,
    Fix,
    Heading,
    Malformed,
    Need,
    Shown,
    encode_frame,
    jpeg_size,
    parse_frame,
    parse_text,
    server_message,
)
from cityseeker_ros.core.ar.token import new_token, token_ok


def jpeg(width: int = 640, height: int = 480, progressive: bool = False) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.zeros((height, width, 3), np.uint8)).save(out, "JPEG", progressive=progressive)
    return out.getvalue()


@pytest.mark.parametrize("progressive", [False, True])
def test_a_frame_carries_its_capture_time_and_size(progressive):
    frame = parse_frame(encode_frame(jpeg(640, 480, progressive), 1234.5))
    assert (frame.width, frame.height, frame.captured_ms) == (640, 480, 1234.5)


@pytest.mark.parametrize("data, reason", [
    (b"\x00" * 6, "too_short"),
    (encode_frame(b"GIF89a" + b"\x00" * 100, 1.0), "not_jpeg"),
    (encode_frame(jpeg()[:-2] + b"\x00\x01", 1.0), "truncated_jpeg"),
    (encode_frame(b"\xff\xd8" + b"\x00" * (MAX_FRAME_BYTES + 10) + b"\xff\xd9", 1.0), "oversized"),
    (encode_frame(jpeg(), float("nan")), "bad_time"),
    (encode_frame(jpeg(), -5.0), "bad_time"),
    (encode_frame(jpeg(2000, 16), 1.0), "bad_size"),
    (encode_frame(b"\xff\xd8\xff\xda\x00\x02\xff\xd9", 1.0), "bad_jpeg"),
    (encode_frame(b"\xff\xd8\x00\x00\x00\x00\xff\xd9", 1.0), "bad_jpeg"),
])
def test_bad_frames_are_named(data, reason):
    with pytest.raises(Malformed) as exc:
        parse_frame(data)
    assert (exc.value.kind, exc.value.reason) == ("frame", reason)


def test_jpeg_size_reads_the_frame_header_without_decoding():
    assert jpeg_size(jpeg(320, 240)) == (320, 240)


def test_each_text_message():
    assert parse_text('{"type":"fix","lat":43.7,"lon":7.4,"accuracy_m":5}') == Fix(43.7, 7.4, 5.0, None)
    assert parse_text('{"type":"fix","lat":43.7,"lon":7.4,"accuracy_m":5,"heading_deg":90}').heading_deg == 90.0
    assert parse_text('{"type":"heading","heading_deg":359.5}') == Heading(359.5)
    assert parse_text('{"type":"need","text":"I am thirsty","max_steps":4}') == Need("I am thirsty", 4)
    assert parse_text('{"type":"cancel"}') == Cancel()
    assert parse_text('{"type":"shown","view_set_id":"a/b","latency_ms":120.5}') == Shown("a/b", 120.5)


@pytest.mark.parametrize("text, kind, reason", [
    ("{", "message", "not_json"),
    ("[1]", "message", "not_object"),
    ('{"type":"fly"}', "message", "unknown_type"),
    ("x" * 5000, "message", "oversized"),
    ('{"type":"fix","lat":91,"lon":7,"accuracy_m":5}', "fix", "bad_lat"),
    ('{"type":"fix","lat":43,"lon":-181,"accuracy_m":5}', "fix", "bad_lon"),
    ('{"type":"fix","lat":43,"lon":7}', "fix", "bad_accuracy_m"),
    ('{"type":"fix","lat":43,"lon":7,"accuracy_m":true}', "fix", "bad_accuracy_m"),
    ('{"type":"fix","lat":NaN,"lon":7,"accuracy_m":5}', "fix", "bad_lat"),
    ('{"type":"fix","lat":43,"lon":7,"accuracy_m":5,"heading_deg":400}', "fix", "bad_heading_deg"),
    ('{"type":"heading","heading_deg":"north"}', "heading", "bad_heading_deg"),
    ('{"type":"need","text":7}', "need", "bad_text"),
    ('{"type":"need","text":"x","max_steps":2.5}', "need", "bad_max_steps"),
    ('{"type":"shown","view_set_id":"","latency_ms":1}', "shown", "bad_view_set_id"),
])
def test_bad_text_messages_are_named(text, kind, reason):
    with pytest.raises(Malformed) as exc:
        parse_text(text)
    assert (exc.value.kind, exc.value.reason) == (kind, reason)


def test_server_messages_are_json_without_nan():
    body = json.loads(server_message("guidance", heading_deg=float("nan"), nested={"d": float("inf")}, n=[1.0]))
    assert body == {"type": "guidance", "heading_deg": None, "nested": {"d": None}, "n": [1.0]}


def test_the_token_is_checked_whole():
    token = new_token()
    assert len(token) >= 32 and token != new_token()
    assert token_ok(token, token)
    assert not token_ok(token, None) and not token_ok(token, "") and not token_ok(token, token[:-1])
    assert not token_ok(token, token + "x") and not token_ok("", "")
    assert not token_ok(token, "é" * 10)
