"""The synthetic extract (extract.py) through the project's builder, as `cityseeker world build
PATH --bbox ...` runs it: each provoking case is really in the built world, the independent
checker finds 0 false facts and 0 non-unique answers, it catches a question made to fall into each
trap, and land use far outside the box changes no question."""
from __future__ import annotations

import copy
import io
import json
import math
from pathlib import Path

import pytest

from cityseeker_ros.core.worlds.build import build_world

from .extract import M_LON, PARK_Y, TOWN_BBOX, block_y, hotel_xy, write_extract
from .independent import Checker


def _build(root: Path, far_away: bool) -> tuple[Path, Path]:
    osm = write_extract(root / f"town{'_far' if far_away else ''}.osm", far_away=far_away)
    out = root / f"town{'_far' if far_away else ''}"
    build_world(str(osm), out, name="town", bbox=TOWN_BBOX, families=["questions"], stream=io.StringIO())
    return osm, out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    return _build(tmp_path_factory.mktemp("extract"), far_away=True)


def _doc(folder: Path, name: str) -> dict:
    return json.loads((folder / name).read_text())


def test_each_case_is_in_the_world_as_built(built):
    _, folder = built
    pois = {p["name"]: p for p in _doc(folder, "scene.json")["pois"]}
    hotel = pois["Hotel Alpina"]
    # The builder moved the hotel's board 24 m from its map position onto the street wall.
    map_x = hotel["lon"] * M_LON
    assert map_x == pytest.approx(hotel_xy()[0], abs=0.5) and math.dist(hotel["anchor"], hotel_xy()) > 20.0
    # The named car park is drawn; the unnamed one (seen from no street node) is not in the scene.
    assert "Parcheggio Centro" in pois and "" not in pois
    world = _doc(folder, "tasks.questions.json")["world"]
    assert world["checked_against"] == "the scene's places and the raw extract's"
    assert world["dropped"]["a moved board (or a big area's centre) changes the direction the map gives"] > 0


def test_the_built_extract_has_no_false_fact_and_no_unsure_answer(built):
    osm, folder = built
    doc = _doc(folder, "tasks.questions.json")
    assert {"name", "category", "relation", "existence", "counting"} <= {t["details"]["kind"] for t in doc["tasks"]}
    assert Checker(osm, folder).check() == []
    # No question relates the hotel and the bus stop: their boards and the map disagree.
    assert not [t for t in doc["tasks"] if "Hotel Alpina" in t["instruction"] and "Fermata Posta" in t["instruction"]]


def _trap(doc: dict, instruction: str, answer: str) -> dict:
    t = copy.deepcopy(next(t for t in doc["tasks"] if t["details"]["kind"] == "name"))
    t["instruction"], t["details"]["answer"], t["start"] = instruction, answer, "n00000"
    return t


def test_the_checker_catches_each_trap_on_the_built_world(built):
    osm, folder = built
    doc = _doc(folder, "tasks.questions.json")
    graph = _doc(folder, "graph.json")
    south = min(graph["nodes"], key=lambda n: n["lat"])["id"]  # the street's south end
    cases = {
        # The board says north-east, the map east: "north" is the moved board's word.
        "false": ('There is a hotel named "Hotel Alpina" to the north of you. Nearby, there is a bus stop named '
                  '"Fermata Posta". Please tell me in which direction (north, east, south or west) the bus stop is '
                  'from the hotel named "Hotel Alpina"?', "north"),
        # West of Farmacia Centrale stand the named car park and the unnamed one only the raw map holds.
        "non-unique": ('There is a pharmacy named "Farmacia Centrale" to the north of you. To the west of it, there '
                       'is a car park. Please tell me what is the name of the car park?', "Parcheggio Centro"),
    }
    for what, (text, answer) in cases.items():
        wrong = _trap(doc, text, answer)
        wrong["start"] = south
        found = Checker(osm, folder, {"tasks": [wrong]}).check()
        assert [p[1] for p in found] == [what], (what, found)
    assert PARK_Y == block_y(1)  # both car parks level with Farmacia Centrale (east side, block 1)


def test_land_use_far_outside_the_box_changes_no_question(built, tmp_path):
    _, with_far = built
    _, without = _build(tmp_path, far_away=False)
    assert _doc(with_far, "tasks.questions.json")["tasks"] == _doc(without, "tasks.questions.json")["tasks"]
