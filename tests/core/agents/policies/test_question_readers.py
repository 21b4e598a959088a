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
    # Existence: a board of the kind on that side within the radius says yes at once ...
    ("existence", {"anchor": "Bar Uno", "relation": "north", "target_kind": "bank", "within_m": 100},
     [("Bar Uno", (0, 0), ()), ("Banca", (5, 80), ("bank",))], "yes"),
    # ... one beyond the radius, on another side, or of another kind does not; nor is "no" said
    # before the agent has looked over that side.
    ("existence", {"anchor": "Bar Uno", "relation": "north", "target_kind": "bank", "within_m": 100},
     [("Bar Uno", (0, 0), ()), ("Banca", (0, 130), ("bank",)), ("Banca 2", (60, 0), ("bank",)),
      ("Hotel", (0, 40), ("hotel",))], None),
    # Counting: nothing until both ends are read and the agent stood at the far end.
    ("counting", {"anchor": "Bar Uno", "end": "Hotel Nord", "target_kind": "bank", "corridor_m": 25},
     [("Bar Uno", (0, 0), ()), ("Hotel Nord", (0, 100), ("hotel",)), ("Banca", (5, 50), ("bank",))], None),
])
def test_readings_settle_the_answer_only_when_they_suffice(world, kind, parse, readings, expected):
    agent = _scripted(world, kind, parse, readings)
    assert agent.settle() == expected


def _scripted(world, kind, parse, readings):
    import numpy as np

    agent = Scripted()
    agent.reset(world.episodes[0], np.random.default_rng(0), None)
    agent.kind, agent.parse = kind, parse
    for text, xy, kinds in readings:
        agent.note(Reading(text, (float(xy[0]), float(xy[1])), 10.0, kinds))
    return agent


def test_no_is_said_only_after_looking_over_the_side_asked_about(world):
    parse = {"anchor": "Bar Uno", "relation": "north", "target_kind": "bank", "within_m": 100}
    agent = _scripted(world, "existence", parse, [("Bar Uno", (0, 0), ()), ("Banca", (0, -30), ("bank",))])
    agent.visited = [(0.0, -60.0)]
    assert agent.settle() is None  # south of the anchor: the north side not seen yet
    agent.visited.append((3.0, 45.0))  # in the middle of the 100 m on the north side
    assert agent.settle() == "no"


def test_a_count_is_the_boards_of_the_kind_between_the_two_places(world):
    parse = {"anchor": "Bar Uno", "end": "Hotel Nord", "target_kind": "bank", "corridor_m": 25}
    agent = _scripted(world, "counting", parse, [
        ("Bar Uno", (0, 0), ()), ("Hotel Nord", (0, 100), ("hotel",)), ("Banca 1", (5, 20), ("bank",)),
        ("Banca 2", (-20, 70), ("bank",)), ("Banca 3", (40, 50), ("bank",)), ("Banca 4", (0, 120), ("bank",)),
        ("Cafe", (0, 50), ("cafe",))])
    agent.visited = [(0.0, 95.0)]
    assert agent.settle() == "2"  # Banca 3 is 40 m off the line, Banca 4 beyond the end


def test_the_ocr_agent_answers_within_the_budget_from_what_it_reads(world):
    pytest.importorskip("rapidocr")
    from cityseeker_ros.core.sensing.views import make_view_source

    views = make_view_source("rendered", world, {})
    ep = dataclasses.replace(world.episodes[0], budget=6)  # OCR costs a second a step on two cores
    r = run_episode(world, ep, make_policy("question-ocr"), seed=0, views=views)
    assert "error" not in r and r["end_reason"] == "answered" and r["answer"]
    assert r["steps"] <= 5  # it answers (a guess at worst) before the budget ends the episode
    assert all("read" in d for d in r["decisions"])
