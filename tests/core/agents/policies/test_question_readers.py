"""The reading question agents on the hand-made high street: the sign oracle answers from the
visible-sign lists along its own walk; the OCR agent from what it reads in the pixels."""
from __future__ import annotations

import dataclasses

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.policies.question_readers import QuestionReader, Reading
from cityseeker_ros.core.evaluation.episode_run import run_episode
from tests.core.tasks.questions.conftest import street_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return street_world(tmp_path_factory.mktemp("w") / "highstreet")


def test_the_sign_oracle_reads_its_way_to_every_answer_on_the_high_street(world):
    records = [run_episode(world, ep, make_policy("question-sign-oracle"), seed=0) for ep in world.episodes]
    assert all(r["end_reason"] == "answered" and "error" not in r for r in records)
    assert [r["metrics"]["accuracy"] for r in records] == [100.0] * len(records)
    # It answers from what it read: every step's readings are logged, and it stopped when settled.
    assert all(r["decisions"][-1]["reason"] == "settled" for r in records)


class Scripted(QuestionReader):
    """Readings placed by hand, to test the reasoning alone."""

    def read(self, obs, here):
        return []


@pytest.mark.parametrize(("kind", "parse", "readings", "expected"), [
    ("name", {"anchor": "Bar Uno", "relation": "east", "target_kind": "cafe"},
     [("Bar Uno", (0, 0), ()), ("Cafe Est", (20, 2), ("cafe",)), ("Cafe Ouest", (-20, 0), ("cafe",)),
      ("Hotel Est", (15, 0), ("hotel",))], "Cafe Est"),
    ("relation", {"anchor": "Bar Uno", "target_name": "Hotel Nord"},
     [("Bar Uno", (0, 0), ()), ("Hotel Nord", (3, 30), ("hotel",))], "north"),
    ("category", {"anchor": "Bar Uno", "target_name": "Luna"}, [("Luna", (3, 30), ("ice cream parlour",))],
     "ice cream parlour"),
    ("name", {"anchor": "Bar Uno", "relation": "east", "target_kind": "cafe"}, [("Cafe Est", (20, 2), ("cafe",))],
     None),  # the anchor is not read yet: nothing is settled
])
def test_readings_settle_the_answer_only_when_they_suffice(world, kind, parse, readings, expected):
    import numpy as np

    agent = Scripted()
    agent.reset(world.episodes[0], np.random.default_rng(0), None)
    agent.kind, agent.parse = kind, parse
    for text, xy, kinds in readings:
        agent.note(Reading(text, (float(xy[0]), float(xy[1])), 10.0, kinds))
    assert agent.settle() == expected


def test_the_ocr_agent_answers_within_the_budget_from_what_it_reads(world):
    pytest.importorskip("rapidocr")
    from cityseeker_ros.core.sensing.views import make_view_source

    views = make_view_source("rendered", world, {})
    ep = dataclasses.replace(world.episodes[0], budget=6)  # OCR costs a second a step on two cores
    r = run_episode(world, ep, make_policy("question-ocr"), seed=0, views=views)
    assert "error" not in r and r["end_reason"] == "answered" and r["answer"]
    assert r["steps"] <= 5  # it answers (a guess at worst) before the budget ends the episode
    assert all("read" in d for d in r["decisions"])
