"""Decision summaries, with every number worked out by hand."""
from __future__ import annotations

from cityseeker_ros.core.evaluation.decisions import summarize_decisions


def test_rates_and_latency_percentiles():
    step = {"retries": 0, "fallback": False, "problems": [], "latency_s": {"generate": 1.0, "total": 1.5}}
    records = [
        {"end_reason": "stopped", "decisions": [step, {**step, "retries": 1, "problems": ["confidence clamped"],
                                                      "latency_s": {"generate": 3.0, "total": 3.5}}]},
        {"end_reason": "error", "decisions": [{**step, "retries": 1, "fallback": True,
                                               "latency_s": {"generate": 2.0, "total": 2.5}}]},
        {"end_reason": "budget_exhausted"},  # a policy without decision records
    ]
    s = summarize_decisions(records)
    assert s["count"] == 3 and s["fallbacks"] == 1 and s["parse_error_rate"] == 33.33
    assert s["retried"] == 2 and s["retry_rate"] == 66.67 and s["repaired"] == 1
    assert s["episodes_ended_by_error"] == 1
    assert s["latency_s"]["generate"] == {"mean": 2.0, "p50": 2.0, "p95": 2.9}
    assert s["latency_s"]["total"]["p50"] == 2.5


def test_no_decisions():
    assert summarize_decisions([{"end_reason": "stopped"}])["parse_error_rate"] == 0.0


def test_tokens_per_decision_are_summarised_where_the_backend_counted_them():
    steps = [{"tokens": {"prompt": 500, "completion": 40}}, {"tokens": {"prompt": 700, "completion": None}},
             {"tokens": {"prompt": None, "completion": None}}]
    summary = summarize_decisions([{"decisions": steps, "end_reason": "stopped"}])
    assert summary["tokens"] == {"prompt": {"mean": 600.0, "total": 1200}, "completion": {"mean": 40.0, "total": 40}}
    assert "tokens" not in summarize_decisions([{"decisions": [{"tokens": {"prompt": None}}], "end_reason": "x"}])


def test_a_seed_agents_replies_are_counted_one_by_one_not_as_fallen_back_steps():
    """prep's summary read 100% parse errors while every action was read: one unusable reply of k
    per step marked the whole step. The rate is now the one-reply policies'; seed agents' replies
    are counted as replies."""
    steps = [{"agent": "prep", "fallback": True, "fallbacks": 1,
              "calls": [{"role": "perception", "parse_error": "no JSON"}, {"role": "action"}]} for _ in range(3)]
    s = summarize_decisions([{"decisions": steps, "end_reason": "stopped"}])
    assert s["parse_error_rate"] == 0.0 and s["replies"] == 6 and s["unusable_replies"] == 3
    assert s["fallbacks"] == 3  # the steps that used a counted fallback, as the records say
