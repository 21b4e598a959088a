"""Compass words, rounded distances and their tolerances."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.tasks.landmarks.relations import (
    COMPASS,
    GOAL,
    Relation,
    compass_word,
    sentence,
    stated_distance,
    word_bearing,
)


@pytest.mark.parametrize("bearing, word", [(0, "north"), (22.4, "north"), (22.5, "north-east"), (67.4, "north-east"),
                                           (90, "east"), (180, "south"), (337.4, "north-west"), (337.5, "north"),
                                           (359.9, "north"), (-10, "north"), (225, "south-west")])
def test_the_nearest_of_eight_compass_points(bearing, word):
    assert compass_word(bearing) == word


def test_every_word_names_its_sector_centre_and_unknown_words_fail_listing_the_known():
    assert [word_bearing(w) for w in COMPASS] == [0, 45, 90, 135, 180, 225, 270, 315]
    with pytest.raises(ValueError, match="north-east"):
        word_bearing("northeast")


@pytest.mark.parametrize("true_m, stated, tolerance", [(23, 20, 5), (94, 90, 5), (96, 100, 25), (124, 100, 25),
                                                       (312, 300, 25), (988, 1000, 50), (1040, 1000, 50),
                                                       (2260, 2300, 50)])
def test_distances_round_to_a_step_that_grows_with_distance(true_m, stated, tolerance):
    """The tolerance is the stated number's (what a reader of the words knows)."""
    assert stated_distance(true_m) == (stated, tolerance)
    assert abs(true_m - stated) <= tolerance


def test_a_measured_relation_holds_for_its_own_truth_and_reads_as_prep_words():
    landmark = (48.0, 2.0)
    goal = destination(*landmark, 40.0, 310.0)
    rel = Relation.measure(GOAL, "The goal", "way/1", "St Nicholas Cathedral", landmark, goal)
    assert (rel.direction, rel.distance_m, rel.distance_tolerance_m) == ("north-east", 300, 25.0)
    assert rel.bearing_deg == pytest.approx(40.0, abs=0.01) and rel.true_distance_m == pytest.approx(310.0, abs=0.01)
    assert rel.holds(rel.bearing_deg, rel.true_distance_m)
    assert not rel.holds(rel.bearing_deg + 30.0, rel.true_distance_m)  # 70 degrees: past the sector
    assert not rel.holds(rel.bearing_deg, 330.0)
    assert rel.phrase() == "about 300 m north-east of St Nicholas Cathedral"
    assert Relation.from_json(rel.to_json()) == rel
    other = Relation.measure(GOAL, "The goal", "way/2", "Casino Tower", landmark, destination(*landmark, 180.0, 95.0))
    assert sentence("The goal", [rel, other]) == ("The goal is about 300 m north-east of St Nicholas Cathedral and "
                                                  "about 100 m south of Casino Tower.")


def test_a_relation_with_an_unknown_word_is_refused():
    doc = Relation.measure(GOAL, "The goal", "a", "A", (0.0, 0.0), (0.001, 0.0)).to_json()
    with pytest.raises(ValueError, match="unknown direction word"):
        Relation.from_json({**doc, "direction": "up"})
