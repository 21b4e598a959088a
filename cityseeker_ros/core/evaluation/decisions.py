"""Summaries of per-decision records: how often replies had to be repaired, retried or
replaced by the fallback (the paper reports 6.3% format errors for Qwen2.5-VL-32B), and
where decision time goes. Agents that make several named calls per step (the seed agents,
core/agents/seeds/calls.py) get their calls, tokens and seconds per step, per agent."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from cityseeker_ros.core.evaluation.step_costs import call_parsed


def summarize_decisions(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    steps = [d for r in records for d in r.get("decisions", ())]
    n = len(steps)
    fallbacks = sum(bool(d.get("fallback")) for d in steps)
    retried = sum(int(d.get("retries", 0)) > 0 for d in steps)
    # A decision of one reply (the vlm policy's) that fell back could not be parsed, even after the
    # retry. A seed agent's step makes several calls and keeps its action when the choosing call was
    # read: its replies are counted one by one instead (`unusable_replies` of `replies`).
    one_reply = [d for d in steps if not isinstance(d.get("calls"), list)]
    calls = [c for d in steps if isinstance(d.get("calls"), list) for c in d["calls"] if isinstance(c, dict)]
    out: dict[str, Any] = {
        "count": n,
        "fallbacks": fallbacks,
        "parse_error_rate": (round(100.0 * sum(bool(d.get("fallback")) for d in one_reply) / len(one_reply), 2)
                             if one_reply else 0.0),
        "retried": retried,
        "retry_rate": round(100.0 * retried / n, 2) if n else 0.0,
        "repaired": sum(bool(d.get("problems")) for d in steps),
        # Replies longer than the parser's limit, of which only the head was read (runaway generations).
        "cut_replies": sum(int(d.get("cut_replies", 0)) for d in steps),
        "episodes_ended_by_error": sum(r.get("end_reason") == "error" for r in records),
    }
    if calls:
        out["replies"] = len(calls)
        out["unusable_replies"] = sum(not call_parsed(c) for c in calls)
    keys = sorted({k for d in steps for k in (d.get("latency_s") or {})})
    latency = {}
    for key in keys:
        values = np.array([d["latency_s"][key] for d in steps if key in (d.get("latency_s") or {})], dtype=float)
        if values.size:
            latency[key] = {"mean": round(float(values.mean()), 4), "p50": round(float(np.percentile(values, 50)), 4),
                            "p95": round(float(np.percentile(values, 95)), 4)}
    if latency:
        out["latency_s"] = latency
    cached = [d["cache"] for d in steps if d.get("cache")]  # the local backend's fast path
    if cached:
        total: Counter[str] = Counter()
        for counts in cached:
            total.update(counts)  # update keeps zero counts, as the records do
        out["cache"] = dict(total)
    tokens = {}
    for kind in ("prompt", "completion"):  # per decision, over the decisions whose backend counted them
        counts = [d["tokens"][kind] for d in steps if isinstance((d.get("tokens") or {}).get(kind), int)]
        if counts:
            tokens[kind] = {"mean": round(float(np.mean(counts)), 1), "total": int(sum(counts))}
    if tokens:
        out["tokens"] = tokens
    agents = calls_per_agent(steps)
    if agents:
        out["agents"] = agents
    return out


def _mean(values: Sequence[float]) -> float | None:
    return round(float(np.mean(values)), 4) if values else None


def calls_per_agent(steps: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per agent (a step record's `agent`), over its steps that list their `calls`: the mean
    calls, tokens in and out, and seconds per step, the totals, and the calls per role. Tokens
    are averaged over the steps whose backend reported them."""
    out: dict[str, dict[str, Any]] = {}
    for agent in sorted({str(d.get("agent")) for d in steps if isinstance(d.get("calls"), list)}):
        mine = [d for d in steps if isinstance(d.get("calls"), list) and str(d.get("agent")) == agent]
        row: dict[str, Any] = {"steps": len(mine), "calls_per_step": _mean([len(d["calls"]) for d in mine]),
                               "calls": sum(len(d["calls"]) for d in mine),
                               "seconds_per_step": _mean([float(d.get("seconds") or 0.0) for d in mine]),
                               "seconds": round(sum(float(d.get("seconds") or 0.0) for d in mine), 4),
                               "failed_calls": sum("parse_error" in c for d in mine for c in d["calls"])}
        for key in ("tokens_in", "tokens_out"):
            counted = [d[key] for d in mine if isinstance(d.get(key), int)]
            row[f"{key}_per_step"] = _mean(counted)
            row[key] = int(sum(counted)) if counted else None
        roles: dict[str, int] = {}
        for d in mine:
            for c in d["calls"]:
                roles[str(c.get("role"))] = roles.get(str(c.get("role")), 0) + 1
        row["roles"] = dict(sorted(roles.items()))
        out[agent] = row
    return out
