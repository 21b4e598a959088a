"""What a VLM is asked to return, and what the tolerant parser hands the policy.

The pydantic models are the contract the prompts spell out and the JSON schema that
structured-output backends enforce; the parser validates its repaired result against them,
so a decision that reaches the policy always satisfies them.
"""
from __future__ import annotations

import copy
import json
import string
from dataclasses import dataclass, field
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

LETTERS = string.ascii_uppercase  # view labels: A is the first view, Z the 26th
STOP_WORD = "STOP"
MAX_ANSWER_CHARS = 200  # a longer answer is a runaway, not an answer: parsed as invalid
SHORT_REASON_CHARS = 80  # the short replies' reason (VlmPolicy's short_replies)


class ViewObservation(BaseModel):
    view: str  # the view's letter, or "all" for the stop prompt's whole-scene observation
    description: str


class DecisionReply(BaseModel):
    """The choice prompt's reply (action a letter) and the single prompt's (a letter or STOP).
    Its JSON schema keeps the title "Decision" that the prompts and constrained decoding show."""

    model_config = ConfigDict(title="Decision")

    observations: list[ViewObservation]
    thoughts: str
    action: str = Field(pattern=r"^(?:[A-Z]|STOP)$")
    confidence: float = Field(ge=0.0, le=1.0)


class StopDecision(BaseModel):
    """The stop prompt's reply: is the place that satisfies the request right here?"""

    observation: str
    thoughts: str
    stop: bool
    confidence: float = Field(ge=0.0, le=1.0)


@dataclass
class ParsedDecision:
    """A reply read as an action. Read `error` first: when it is set the reply could not be
    used and `action_index` is None without meaning stop.

    `action_index` is the position in the prompt's view list (A = 0), or None for stop. For the
    stop prompt it is None (stop) or 0 (continue), the paper's -1/0 encoding shifted to ours.
    """

    action_index: Optional[int]
    confidence: float
    thoughts: str = ""
    observations: list[ViewObservation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what was repaired to read the reply
    error: Optional[str] = None  # why the reply is unusable; the policy retries or falls back
    cut: bool = False  # the reply was longer than parsing.MAX_CHARS: only its head was read
    answer: Optional[str] = None  # a stop's answer, for families whose stop answers a question

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def is_stop(self) -> bool:
        return self.error is None and self.action_index is None


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Some servers reject `$ref`; the models are shallow, so inlining them is cheap."""
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(copy.deepcopy(defs[ref.rsplit("/", 1)[1]]))
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    return resolve(schema)


def decision_schema(n_views: int, allow_stop: bool) -> dict[str, Any]:
    """DecisionReply's JSON schema with `action` narrowed to this node's letters (and STOP), so
    constrained decoding cannot produce an out-of-range view."""
    schema = _inline_refs(DecisionReply.model_json_schema())
    choices = list(LETTERS[:n_views]) + ([STOP_WORD] if allow_stop else [])
    schema["properties"]["action"] = {"title": "Action", "type": "string", "enum": choices}
    return schema


def stop_schema() -> dict[str, Any]:
    return _inline_refs(StopDecision.model_json_schema())


ANSWER_FIELD = {"title": "Answer", "type": "string", "maxLength": MAX_ANSWER_CHARS}


def with_answer(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the `answer` field a family that answers a question asks for (empty unless
    stopping); required, so constrained decoding always writes it."""
    schema = copy.deepcopy(schema)
    schema["properties"]["answer"] = dict(ANSWER_FIELD)
    schema["required"] = [*schema.get("required", []), "answer"]
    return schema


class ShortDecision(BaseModel):
    """The short reply to the choice and single prompts: the action, a confidence and a short reason
    (the parser reads `reason` as the thoughts; the observations are not asked for)."""

    model_config = ConfigDict(title="Decision")

    action: str = Field(pattern=r"^(?:[A-Z]|STOP)$")
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str = Field(max_length=SHORT_REASON_CHARS)


class ShortStop(BaseModel):
    """The short reply to the stop prompt."""

    stop: bool
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str = Field(max_length=SHORT_REASON_CHARS)


def short_decision_schema(n_views: int, allow_stop: bool) -> dict[str, Any]:
    schema = _inline_refs(ShortDecision.model_json_schema())
    schema.pop("description", None)  # the docstring speaks to us, not to the model
    choices = list(LETTERS[:n_views]) + ([STOP_WORD] if allow_stop else [])
    schema["properties"]["action"] = {"title": "Action", "type": "string", "enum": choices}
    return schema


def short_stop_schema() -> dict[str, Any]:
    schema = _inline_refs(ShortStop.model_json_schema())
    schema.pop("description", None)
    return schema


REPLY_SLACK_TOKENS = 8  # spaces, a newline, the end-of-sequence token


def reply_budget(schema: dict[str, Any]) -> int:
    """Tokens enough for the longest reply `schema` allows (every string at its maxLength, the longest
    choice, a confidence written with 2 decimals), counted as one token a character: a bound for
    tokenizers whose tokens cover a character or more, which a model's tokens do for Latin text.
    The fields of a short schema are all bounded; a field without a bound is refused."""
    longest: dict[str, Any] = {}
    for name, field_schema in schema["properties"].items():
        if "enum" in field_schema:
            longest[name] = max((str(v) for v in field_schema["enum"]), key=len)
        elif field_schema.get("type") == "string":
            if "maxLength" not in field_schema:
                raise ValueError(f"reply_budget: field {name!r} has no maxLength")
            longest[name] = "x" * int(field_schema["maxLength"])
        elif field_schema.get("type") == "boolean":
            longest[name] = False
        elif field_schema.get("type") == "number":
            longest[name] = 0.55
        else:
            raise ValueError(f"reply_budget: field {name!r} of type {field_schema.get('type')!r} is unbounded")
    return len(json.dumps(longest)) + REPLY_SLACK_TOKENS
