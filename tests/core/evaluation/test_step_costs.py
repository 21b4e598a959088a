"""One cost reader for every policy's step records: a seed agent's named calls, the vlm policy's
replies, a perception agent's latencies; unusable replies counted per call, not per step."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.evaluation.step_costs import StepCost, run_cost, step_cost


def seed_step(*calls: dict, **totals) -> dict:
    return {"step": 0, "agent": "prep", "calls": list(calls), "calls_n": len(calls), **totals}


PERCEPTION_FAILED = {"role": "perception", "tokens_in": 100, "tokens_out": 7, "seconds": 0.5, "parse_error": "no JSON"}
PLANNING_READ = {"role": "planning", "tokens_in": 300, "tokens_out": 20, "seconds": 1.5}


def test_a_seed_step_with_one_unreadable_call_has_one_unusable_reply_not_a_fallen_back_step():
    cost = step_cost(seed_step(PERCEPTION_FAILED, PLANNING_READ, tokens_in=400, tokens_out=27, seconds=2.0,
                               fallback=True))
    assert cost == StepCost(calls=2, tokens_in=400, tokens_out=27, seconds=2.0, unusable=1)


def test_totals_missing_from_a_step_are_summed_from_its_calls_and_parsed_wins_over_parse_error():
    cost = step_cost(seed_step(PERCEPTION_FAILED, {**PLANNING_READ, "parsed": False}))
    assert cost == StepCost(2, 400, 27, 2.0, 2)
    unknown = step_cost(seed_step({"role": "action", "tokens_in": None, "tokens_out": None, "seconds": 0.1,
                                   "parsed": True, "parse_error": "ignored: parsed says it was read"}))
    assert unknown == StepCost(1, None, None, 0.1, 0)


def test_a_vlm_decision_counts_its_replies_and_the_retried_or_fallen_back_ones():
    decision = {"raw": ["bad", "{\"action\": 1}"], "retries": 1, "fallback": False,
                "tokens": {"prompt": 900, "completion": 30}, "latency_s": {"generate": 1.0, "total": 1.25}}
    assert step_cost(decision) == StepCost(2, 900, 30, 1.25, 1)
    assert step_cost({**decision, "fallback": True}).unusable == 2
    assert step_cost({**decision, "raw": ["x"], "retries": 3, "fallback": True}).unusable == 1  # never above replies


def test_a_perception_agent_has_seconds_only_and_a_baseline_nothing():
    assert step_cost({"latency_s": {"ocr": 0.5, "embed": 0.25, "decide": 0.25}}) == StepCost(None, None, None,
                                                                                             1.0, None)
    assert step_cost({"action": 1}) == StepCost(None, None, None, None, None)
    assert step_cost({"latency_s": {"ocr": "n/a"}}).seconds is None


def test_run_cost_is_per_step_over_the_steps_that_record_each_field():
    records = [{"decisions": [seed_step(PERCEPTION_FAILED, PLANNING_READ, tokens_in=400, tokens_out=27, seconds=2.0),
                              seed_step(PLANNING_READ, tokens_in=300, tokens_out=20, seconds=1.0)]},
               {"decisions": [seed_step({"role": "action", "tokens_in": None, "tokens_out": None, "seconds": 3.0})]},
               {"path": ["A"]}]
    cost = run_cost(records)
    assert cost.steps == 3 and cost.calls == 4 and cost.unusable == 1
    assert cost.calls_per_step == pytest.approx(4 / 3)
    assert cost.tokens_in_per_step == pytest.approx(350.0) and cost.tokens_out_per_step == pytest.approx(23.5)
    assert cost.seconds_per_step == pytest.approx(2.0) and cost.unusable_share == pytest.approx(25.0)
    empty = run_cost([{"path": ["A"]}])
    assert (empty.steps, empty.calls_per_step, empty.seconds_per_step, empty.unusable_share) == (0, None, None, None)
