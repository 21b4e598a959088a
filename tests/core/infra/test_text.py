"""core/infra/text.py: every string it returns encodes as UTF-8; valid text passes through untouched."""
from __future__ import annotations

import json
import random

import pytest

from cityseeker_ros.core.infra.text import REPLACEMENT, clean_json, clean_text, decode_utf8, is_clean, loads_json

BAD = ["\ud800", "a\udfffb", "\udc80\udcff", "x\ud83d", "\ude00y", "\ud800\ud800", "\udfff\ud800"]


@pytest.mark.parametrize("text", BAD)
def test_lone_surrogates_become_the_replacement_character(text):
    out = clean_text(text)
    out.encode("utf-8")  # the whole point: never raises
    assert is_clean(out) and not is_clean(text)
    assert len(out) == len(text) and out.count(REPLACEMENT) == sum(0xD800 <= ord(c) <= 0xDFFF for c in text)


def test_valid_text_is_returned_as_it_is():
    for text in ["", "plain", "café 東京 😀", "\ufffd", "\U0010ffff", "\x00nul"]:
        assert clean_text(text) is text


def test_a_surrogate_pair_becomes_its_character():
    assert clean_text("\ud83d\ude00") == "😀"
    assert clean_text("a\ud83d\ude00\ud800") == "a😀" + REPLACEMENT


def test_random_strings_always_come_out_encodable():
    rng = random.Random(4)
    alphabet = [chr(c) for c in (*range(0x20, 0x80), 0xE9, 0x6771, 0x1F600, *range(0xD7FE, 0xE002))]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        out = clean_text(text)
        out.encode("utf-8")
        assert len(out) <= len(text)
        # Every valid BMP character stays, in order (pairs join into characters beyond the BMP).
        def bmp(s: str) -> list[str]:
            return [c for c in s if ord(c) < 0x10000 and not 0xD800 <= ord(c) <= 0xDFFF and c != REPLACEMENT]
        assert bmp(out) == bmp(text)


def test_clean_json_cleans_keys_and_values_at_any_depth_and_keeps_clean_values():
    value = {"a\ud800": ["ok", {"deep": ("t\udfff", 1, 2.5, None, True)}], "n": 3}
    out = clean_json(value)
    json.dumps(out, ensure_ascii=False).encode("utf-8")
    assert out == {"a\ufffd": ["ok", {"deep": ("t\ufffd", 1, 2.5, None, True)}], "n": 3}
    clean = {"a": [1, "b", {"c": "d"}]}
    assert clean_json(clean) is clean


def test_decode_and_loads_replace_malformed_utf8_and_escaped_surrogates():
    assert decode_utf8(b"a\xffb\xe6\x9d") == "a\ufffdb\ufffd"
    assert loads_json('{"t": "x\\ud800y"}') == {"t": "x\ufffdy"}
    assert loads_json(b'{"t": "x\xff\\udfffy"}') == {"t": "x\ufffd\ufffdy"}
    assert loads_json('"\\ud83d\\ude00"') == "😀"  # an escaped pair is one valid character
    with pytest.raises(json.JSONDecodeError):
        loads_json(b"{not json")
