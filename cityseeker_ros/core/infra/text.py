"""Valid Unicode at the boundary: text from models, data files and the network.

Python strings can hold what UTF-8 cannot encode: lone surrogates (U+D800..U+DFFF). They
arrive legally: JSON's "\\ud800" escape is valid JSON, a model's reply may carry one, and
Python decodes undecodable bytes in argv with surrogateescape. Every writer that encodes
UTF-8 (files, SQLite, ROS messages, JSON for pydantic) then fails on them, often far from
where they entered, so a report crashes on a reply read an hour earlier. Text is therefore
cleaned where it enters, and writers clean again before encoding so that none can fail.

Cleaning keeps valid surrogate pairs (joined into the character they encode) and replaces
every lone surrogate with U+FFFD, the replacement character, as a UTF-8 decoder does for a
malformed sequence: the text stays readable and the damage stays visible.
"""
from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """`text` as valid Unicode: lone surrogates become U+FFFD, surrogate pairs their character."""
    if text.isascii() or is_clean(text):
        return text
    # UTF-16 can carry surrogates with "surrogatepass"; decoding joins the pairs and
    # replaces the lone ones, exactly what a lenient UTF-16 reader would show.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def is_clean(text: str) -> bool:
    """Whether `text` encodes as UTF-8 as it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decode_utf8(data: bytes) -> str:
    """Bytes from outside as text; malformed UTF-8 sequences become U+FFFD."""
    return bytes(data).decode("utf-8", "replace")


def clean_json(value: Any) -> Any:
    """A JSON-like value (dicts, lists, tuples, strings, scalars) with every string, keys
    included, cleaned; values that need no cleaning are returned as they are (not copied)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        items = [(clean_json(k), clean_json(v)) for k, v in value.items()]
        if all(new is old for pair, old_pair in zip(items, value.items()) for new, old in zip(pair, old_pair)):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        cleaned = [clean_json(v) for v in value]
        if all(a is b for a, b in zip(cleaned, value)):
            return value
        return cleaned if isinstance(value, list) else tuple(cleaned)
    return value


def loads_json(data: str | bytes) -> Any:
    """json.loads of text from outside, cleaned: bytes are decoded leniently and escaped lone
    surrogates ("\\ud800", valid JSON) are replaced."""
    return clean_json(json.loads(decode_utf8(data) if isinstance(data, (bytes, bytearray)) else data))


def brand_key(text: str) -> str:
    """Names compared for brand lookup: lower-case, accents and punctuation dropped (McDonald's -> mcdonalds)."""
    folded = unicodedata.normalize("NFKD", text.lower())
    return re.sub(r"[\W_]+", "", "".join(ch for ch in folded if not unicodedata.combining(ch)))
