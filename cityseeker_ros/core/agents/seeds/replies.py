"""Each seed-agent call's reply, declared once: the JSON schema a structured-output server is
sent (`response_format`, through GenerationRequest.json_schema) and the one reader of the reply
that the same schema drives: the object holding the schema's fields, each field checked and
coerced to the schema's type (a "true" string to true, "30 m" to 30, an enum case-insensitively).
A reply that misses a required field or holds a field of the wrong type is unusable: the call's
`parse_error`, the agent's counted fallback (calls.py). With the agent's `json_schema` switch off
no schema is sent (the papers' free-text protocol) and the same reader reads the reply.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from cityseeker_ros.core.agents.vlm.parsing import read_object
from cityseeker_ros.core.agents.vlm.schema import LETTERS, MAX_ANSWER_CHARS, STOP_WORD

_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_TRUE, _FALSE = ("true", "yes", "1", "found"), ("false", "no", "0", "not found")
FieldSchema = dict[str, Any]


def text_field(max_length: Optional[int] = None) -> FieldSchema:
    return {"type": "string"} if max_length is None else {"type": "string", "maxLength": max_length}


def number_field() -> FieldSchema:
    return {"type": "number"}


def flag_field() -> FieldSchema:
    return {"type": "boolean"}


def enum_field(*choices: str) -> FieldSchema:
    return {"type": "string", "enum": list(choices)}


def list_field(items: FieldSchema) -> FieldSchema:
    return {"type": "array", "items": items}


def object_field(properties: dict[str, FieldSchema], required: tuple[str, ...] = ()) -> FieldSchema:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


ANSWER = text_field(MAX_ANSWER_CHARS)


def choice_enum(n_views: int) -> FieldSchema:
    """A view letter (A, B, ...) or STOP."""
    return enum_field(*LETTERS[:n_views], STOP_WORD)


@dataclass(frozen=True)
class ReplySchema:
    """One call's reply: a JSON object named `name` with `properties`, of which `required`
    must be there. `read(text)` is the reader every seed agent uses."""

    name: str
    properties: dict[str, FieldSchema]
    required: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        missing = [k for k in self.required if k not in self.properties]
        if missing:
            raise ValueError(f"reply schema {self.name}: required field(s) {', '.join(missing)} not declared")

    def json_schema(self) -> dict[str, Any]:
        """What the backend sends as response_format: every field required at every level, so
        constrained decoding writes all of them (strict servers demand it); the reader still
        accepts a free-text reply without the optional ones."""
        return {"title": self.name, **_all_required(object_field(self.properties, self.required))}

    def read(self, text: Any) -> FieldsRead:
        """The reply's fields as the schema types them; unknown fields are dropped."""
        found = read_object(text, tuple(self.properties))
        if not found.ok or found.fields is None:
            return FieldsRead(None, found.error or "no JSON object")
        out: dict[str, Any] = {}
        for key, spec in self.properties.items():
            if key.lower() not in found.fields:
                if key in self.required:
                    return FieldsRead(None, f"{self.name}: the field {key!r} is missing")
                continue
            value, error = coerce(found.fields[key.lower()], spec, key)
            if error is not None:
                if key in self.required:
                    return FieldsRead(None, f"{self.name}: {error}"[:300])
                continue  # an optional field that cannot be read is left out, not fatal
            out[key] = value
        return FieldsRead(out)


@dataclass(frozen=True)
class FieldsRead:
    fields: Optional[dict[str, Any]]
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _all_required(schema: FieldSchema) -> FieldSchema:
    if schema.get("type") == "object":
        props = {k: _all_required(v) for k, v in schema.get("properties", {}).items()}
        return {**schema, "properties": props, "required": list(props)}
    if schema.get("type") == "array":
        return {**schema, "items": _all_required(schema.get("items", {}))}
    return dict(schema)


def _enum_choice(text: str, choices: list[str]) -> Optional[str]:
    """The one choice `text` names: equal to it (any case), else the only choice that appears in
    it as a word ("Keep: no change needed" is keep; "revised" is revise); None when none or two do."""
    def squeeze(x: str) -> str:
        return re.sub(r"[\s_-]+", "", x).casefold()

    exact = [c for c in choices if squeeze(c) == squeeze(text)]  # "Turn Left" is TurnLeft
    if exact:
        return exact[0]
    named = [c for c in choices
             if re.search(rf"(?<![\w]){re.escape(c)}{'[a-z]*' if len(c) > 3 else ''}(?![\w])", text, re.IGNORECASE)]
    return named[0] if len(named) == 1 else None


def coerce(value: Any, spec: FieldSchema, key: str) -> tuple[Any, Optional[str]]:
    """`value` as the field's schema types it, or (None, why not)."""
    kind = spec.get("type")
    if kind == "string":
        if isinstance(value, (dict, list)) or value is None:
            return None, f"the field {key!r} is not text"
        text = value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
        text = text.strip()
        if "enum" in spec:
            match = _enum_choice(text, spec["enum"])
            if match is None:
                return None, f"the field {key!r} is {text[:40]!r}, not one of {', '.join(spec['enum'])}"
            return match, None
        if "maxLength" in spec and len(text) > spec["maxLength"]:
            return None, f"the field {key!r} is {len(text)} characters long; at most {spec['maxLength']}"
        return text, None
    if kind == "number":
        if isinstance(value, bool):
            return None, f"the field {key!r} is not a number"
        if isinstance(value, str):
            numbers = _NUMBER.findall(value)
            value = float(numbers[0]) if numbers else None
        if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            return None, f"the field {key!r} is not a finite number"
        return float(value), None
    if kind == "boolean":
        if isinstance(value, bool):
            return value, None
        s = str(value).strip().lower()
        if s in _TRUE or s in _FALSE:
            return s in _TRUE, None
        return None, f"the field {key!r} is not true or false"
    if kind == "array":
        if not isinstance(value, list):
            return None, f"the field {key!r} is not a list"
        items, out = spec.get("items", {}), []
        for k, item in enumerate(value):
            got, error = coerce(item, items, f"{key}[{k}]")
            if error is None:
                out.append(got)  # an unreadable item is dropped, the rest kept
        return out, None
    if kind == "object":
        if not isinstance(value, dict):
            return None, f"the field {key!r} is not an object"
        lowered = {str(k).strip().lower(): v for k, v in value.items()}
        out_obj: dict[str, Any] = {}
        for name, sub in spec.get("properties", {}).items():
            if name.lower() not in lowered:
                if name in spec.get("required", []):
                    return None, f"the field {key}.{name} is missing"
                continue
            got, error = coerce(lowered[name.lower()], sub, f"{key}.{name}")
            if error is not None:
                if name in spec.get("required", []):
                    return None, error
                continue
            out_obj[name] = got
        return out_obj, None
    return value, None
