"""The generator on the hand-made high street: every kind made, the paper's rules kept (a start
within 200 m, 50 steps), targets told apart, and nothing made where nothing can be read."""
from __future__ import annotations

import dataclasses

from cityseeker_ros.core.streets.geodesy import geodesic_m
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.family import get_family
from cityseeker_ros.core.tasks.questions.answers import KINDS
from cityseeker_ros.core.tasks.questions.generator import (
    CATEGORIES,
    CITYEQA_CATEGORIES,
    QuestionSettings,
    generate_questions,
)
from cityseeker_ros.core.worlds.scene import Scene


def test_every_kind_of_question_is_made_with_a_cityeqa_category(street_tasks):
    tasks = street_tasks.document["tasks"]
    assert {t["details"]["kind"] for t in tasks} == set(KINDS)
    assert set(CATEGORIES.values()) <= set(CITYEQA_CATEGORIES)
    assert all(t["category"] == CATEGORIES[t["details"]["kind"]] for t in tasks)
    assert sum(street_tasks.counts.values()) == len(tasks)
    assert street_tasks.why_none is None


def test_starts_are_within_200_m_of_the_target_and_the_answer_within_the_budget(street, street_tasks):
    graph, _ = street
    actions = ActionModel(graph)
    for t in street_tasks.document["tasks"]:
        d = t["details"]
        start = graph.nodes[t["start"]]
        straight = geodesic_m(start.lat, start.lon, *d["target_latlon"])
        assert 60.0 <= straight <= 200.0, t["id"]
        assert abs(straight - d["start_distance_m"]) < 0.1
        assert t["budget"] == 50
        assert t["reference_path"][0] == t["start"] and t["reference_path"][-1] == t["target"]
        assert actions.route_executable(t["reference_path"])
        assert len(t["reference_path"]) - 1 <= t["budget"] - 1  # room left for the answer
        assert t["target"] in d["legible_from"]
        assert d["route_m"] >= 0.0


def test_questions_name_the_target_by_a_place_and_a_direction_in_cityeqa_form(street_tasks):
    for t in street_tasks.document["tasks"]:
        text = t["instruction"]
        assert text.startswith("There is ") and " of you." in text and "Please tell me " in text, text
        assert t["details"]["parse"]["anchor"] in text
        assert t["request"] in text


def test_generation_repeats_and_follows_the_seed(street):
    graph, scene = street
    a = generate_questions("highstreet", graph, scene, QuestionSettings(seed=3))
    b = generate_questions("highstreet", graph, scene, QuestionSettings(seed=3))
    assert a.document == b.document


def test_the_world_block_states_counts_distances_and_the_views_checked(street_tasks):
    world = street_tasks.document["world"]
    assert world["questions"] == len(street_tasks.document["tasks"])
    assert world["budget"] == 50
    assert set(world["start_distance_m"]) == {"min", "median", "max"}
    assert world["legibility"]["view"] == {"fov_deg": 90.0, "width": 640, "height": 480}


def test_a_name_used_twice_nearby_is_never_quoted(street):
    graph, scene = street
    twin = dataclasses.replace(scene.pois[1], id="node/twin", anchor=(6.0, 30.0), lat=30.0 / 110574.3)
    doubled = Scene(scene.origin_lat, scene.origin_lon, scene.buildings, scene.pois + [twin])
    name = scene.pois[1].label
    doc = generate_questions("highstreet", graph, doubled, QuestionSettings(per_kind=50)).document
    assert doc["tasks"]
    assert all(f'"{name}"' not in t["instruction"] for t in doc["tasks"])


def test_a_world_without_readable_places_makes_none_and_says_why(street):
    graph, scene = street
    bare = Scene(scene.origin_lat, scene.origin_lon, scene.buildings, [])
    made = get_family("questions").generate("bare", graph, bare)
    assert made.document["tasks"] == [] and made.counts == {}
    assert "no signed place" in made.why_none
    unsigned = Scene(scene.origin_lat, scene.origin_lon, scene.buildings,
                     [dataclasses.replace(p, signed=False) for p in scene.pois])
    assert get_family("questions").generate("unsigned", graph, unsigned).why_none


def test_generation_shows_how_many_questions_are_made(street):
    """Rendering views to check legibility takes minutes on a city: the count is shown as it goes."""
    import io

    from cityseeker_ros.core.tasks.questions.generator import QuestionSettings, generate_questions

    graph, scene = street
    said = io.StringIO()
    made = generate_questions("street", graph, scene, QuestionSettings(seed=0), stream=said)
    total = QuestionSettings().per_kind * len(made.document["world"]["by_kind"])
    assert said.getvalue() == (f"question tasks made: done, {len(made.document['tasks'])}/{total} questions in "
                               f"{said.getvalue().split(' in ')[1]}")
    assert len(made.document["tasks"]) > 0


def test_a_quoted_name_borne_by_another_place_near_the_start_is_never_quoted_from_there(street):
    """A namesake 310 m south of Cafe Uno (so Cafe Uno's name is unique around the cafe) only the raw
    map holds: no question quoting "Cafe Uno" starts within 300 m of it, though some still are made."""
    import math

    from cityseeker_ros.core.tasks.questions.places import MapPlace

    graph, scene = street
    cafe = next(p for p in scene.pois if p.label == "Cafe Uno")
    twin_xy = (cafe.anchor[0], cafe.anchor[1] - 310.0)
    twin = MapPlace("node/twin", frozenset({"cafe"}), frozenset({"cafe"}), "cafe uno", twin_xy)
    settings = QuestionSettings(per_kind=60)
    doc = generate_questions("highstreet", graph, scene, settings, map_places=[twin]).document
    quoting = [t for t in doc["tasks"] if '"Cafe Uno"' in t["instruction"]]
    assert quoting
    for t in quoting:
        start = graph.nodes[t["start"]]
        start_xy = scene.frame.to_xy(start.lat, start.lon)
        assert math.dist((float(start_xy[0]), float(start_xy[1])), twin_xy) > 300.0, t["start"]
    # Without the namesake, starts that near it are used.
    free = generate_questions("highstreet", graph, scene, settings).document
    near = [t for t in free["tasks"] if '"Cafe Uno"' in t["instruction"]
            and math.dist(tuple(float(v) for v in scene.frame.to_xy(graph.nodes[t["start"]].lat,
                                                                     graph.nodes[t["start"]].lon)), twin_xy) <= 300.0]
    assert near
