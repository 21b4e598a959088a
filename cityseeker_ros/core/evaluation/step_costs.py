"""What a run's steps cost: model calls, tokens in and out, seconds, and unusable replies.

Policies record their steps in two shapes (episodes.jsonl `decisions`): the seed agents list
their named `calls` per step (core/agents/seeds/calls.py: role, tokens, seconds, and a
`parse_error` where the reply could not be used), the `vlm` policy one decision with its
replies (`raw`, retries included), `tokens` and `latency_s`. Perception agents (ocr-embed) record
only `latency_s`; heading-only baselines record nothing. One reader turns each into the same
StepCost, so a comparison shows every agent's cost in the same units, blank where a policy
records nothing.

An unusable reply is one the agent could not read: a seed agent's call with a parse error, or a
`vlm` reply that was retried or replaced by the fallback. A decision whose other calls failed
but whose action was read is not a fallback.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True)
class StepCost:
    """One step's cost; None where the record does not say."""

    calls: Optional[int]
    tokens_in: Optional[int]
    tokens_out: Optional[int]
    seconds: Optional[float]
    unusable: Optional[int]


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _seconds(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def call_parsed(call: Mapping[str, Any]) -> bool:
    """Whether a seed agent's call reply was usable: `parsed` where recorded, else no `parse_error`."""
    if isinstance(call.get("parsed"), bool):
        return bool(call["parsed"])
    return call.get("parse_error") is None


def step_cost(decision: Mapping[str, Any]) -> StepCost:
    """The cost of one decision record, whichever policy wrote it."""
    calls = decision.get("calls")
    if isinstance(calls, list):  # a seed agent: its named calls
        known_in = [_int(c.get("tokens_in")) for c in calls if isinstance(c, Mapping)]
        known_out = [_int(c.get("tokens_out")) for c in calls if isinstance(c, Mapping)]
        tokens_in = _int(decision.get("tokens_in"))
        tokens_out = _int(decision.get("tokens_out"))
        if tokens_in is None and any(v is not None for v in known_in):
            tokens_in = sum(v for v in known_in if v is not None)
        if tokens_out is None and any(v is not None for v in known_out):
            tokens_out = sum(v for v in known_out if v is not None)
        seconds = _seconds(decision.get("seconds"))
        if seconds is None:
            seconds = sum(_seconds(c.get("seconds")) or 0.0 for c in calls if isinstance(c, Mapping))
        unusable = sum(not call_parsed(c) for c in calls if isinstance(c, Mapping))
        return StepCost(len(calls), tokens_in, tokens_out, seconds, unusable)
    latency = decision.get("latency_s") if isinstance(decision.get("latency_s"), Mapping) else {}
    seconds = _seconds(latency.get("total"))
    if seconds is None and latency:
        parts = [_seconds(v) for v in latency.values()]
        seconds = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
    raw = decision.get("raw")
    if isinstance(raw, list):  # the vlm policy: one decision, its replies (retries included)
        tokens = decision.get("tokens") if isinstance(decision.get("tokens"), Mapping) else {}
        retries = _int(decision.get("retries")) or 0
        unusable = min(len(raw), retries + (1 if decision.get("fallback") else 0))
        return StepCost(len(raw), _int(tokens.get("prompt")), _int(tokens.get("completion")), seconds, unusable)
    return StepCost(None, None, None, seconds, None)


def _mean(values: Sequence[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class RunCost:
    """Per step, over a run's decision records: the mean calls, tokens in and out and seconds
    (each over the steps that record it), and the unusable replies of all calls."""

    steps: int
    calls_per_step: Optional[float]
    tokens_in_per_step: Optional[float]
    tokens_out_per_step: Optional[float]
    seconds_per_step: Optional[float]
    calls: int
    unusable: int

    @property
    def unusable_share(self) -> Optional[float]:
        """% of model replies the agent could not use (None: no model calls recorded)."""
        return 100.0 * self.unusable / self.calls if self.calls else None


def run_cost(records: Iterable[Mapping[str, Any]]) -> RunCost:
    """The RunCost of episode records (their `decisions`)."""
    costs = [step_cost(d) for r in records for d in (r.get("decisions") or ()) if isinstance(d, Mapping)]
    calls = [c.calls for c in costs if c.calls is not None]
    return RunCost(
        steps=len(costs),
        calls_per_step=_mean([float(v) for v in calls]),
        tokens_in_per_step=_mean([float(c.tokens_in) for c in costs if c.tokens_in is not None]),
        tokens_out_per_step=_mean([float(c.tokens_out) for c in costs if c.tokens_out is not None]),
        seconds_per_step=_mean([c.seconds for c in costs if c.seconds is not None]),
        calls=sum(calls),
        unusable=sum(c.unusable for c in costs if c.unusable is not None),
    )
