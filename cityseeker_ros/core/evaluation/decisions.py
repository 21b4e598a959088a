"""Summaries of per-decision records: how often replies had to be repaired, retried or
replaced by the fallback (the paper reports 6.3% format errors for Qwen2.5-VL-32B), and
where decision time goes."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def summarize_decisions(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    steps = [d for r in records for d in r.get("decisions", ())]
    n = len(steps)
    fallbacks = sum(bool(d.get("fallback")) for d in steps)
    retried = sum(int(d.get("retries", 0)) > 0 for d in steps)
    out: dict[str, Any] = {
        "count": n,
        "fallbacks": fallbacks,
        # A decision that fell back is one whose replies could not be parsed, even after the retry.
        "parse_error_rate": round(100.0 * fallbacks / n, 2) if n else 0.0,
        "retried": retried,
        "retry_rate": round(100.0 * retried / n, 2) if n else 0.0,
        "repaired": sum(bool(d.get("problems")) for d in steps),
        # Replies longer than the parser's limit, of which only the head was read (runaway generations).
        "cut_replies": sum(int(d.get("cut_replies", 0)) for d in steps),
        "episodes_ended_by_error": sum(r.get("end_reason") == "error" for r in records),
    }
    keys = sorted({k for d in steps for k in (d.get("latency_s") or {})})
    latency = {}
    for key in keys:
        values = np.array([d["latency_s"][key] for d in steps if key in (d.get("latency_s") or {})], dtype=float)
        if values.size:
            latency[key] = {"mean": round(float(values.mean()), 4), "p50": round(float(np.percentile(values, 50)), 4),
                            "p95": round(float(np.percentile(values, 95)), 4)}
    if latency:
        out["latency_s"] = latency
    tokens = {}
    for kind in ("prompt", "completion"):  # per decision, over the decisions whose backend counted them
        counts = [d["tokens"][kind] for d in steps if isinstance((d.get("tokens") or {}).get(kind), int)]
        if counts:
            tokens[kind] = {"mean": round(float(np.mean(counts)), 1), "total": int(sum(counts))}
    if tokens:
        out["tokens"] = tokens
    return out
