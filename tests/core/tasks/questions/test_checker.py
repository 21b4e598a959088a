"""Independent checks of the generated questions, sharing no code with the generator.

- The answer and legibility of each one-target question recomputed from the scene by reading the
  question's own words, from fresh renders of the views an agent can reach within the budget.
- `independent.Checker`: every fact against the raw OSM file and the world as built (scene.json),
  every answer unique within the question's words: 0 false facts and 0 non-unique answers on the
  high street, on a synthetic extract built to provoke each case (a moved board, two car parks, one
  only in the raw map), and on the packaged extracts; and on each provoking case a deliberately
  wrong question makes it fail.
"""
from __future__ import annotations

import copy
import dataclasses
import io
import json
import math
import re
from collections import deque

import pytest

from cityseeker_ros.core.render import Renderer, RenderSettings
from cityseeker_ros.core.render.palette import GLASS_STYLES, PLASTER_STYLES, facade_style_index
from cityseeker_ros.core.streets.geodesy import geodesic_m, initial_bearing_deg
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.questions.answers import KINDS, normalise
from cityseeker_ros.core.tasks.questions.generator import MOVED, QuestionSettings, _direction, generate_questions
from cityseeker_ros.core.tasks.questions.places import merged, read_map_places
from cityseeker_ros.core.worlds.folder import graph_to_json
from cityseeker_ros.core.worlds.osm_sources import PACKAGED_SOURCES
from cityseeker_ros.core.worlds.scene import Scene

from .conftest import provoking_street, write_osm
from .independent import Checker

DIRS = {"north": 0.0, "east": 90.0, "south": 180.0, "west": 270.0}
# Reference colours (common web colour values, not the renderer's palette) for the names answers use.
REFERENCE_RGB = {
    "beige": (245, 245, 220), "cream": (255, 253, 208), "peach": (255, 218, 185), "terracotta": (226, 114, 91),
    "grey": (128, 128, 128), "off white": (250, 249, 246), "sand": (194, 178, 128), "salmon": (250, 128, 114),
    "light blue": (173, 216, 230), "ochre": (204, 119, 34), "brick red": (203, 65, 84), "white": (255, 255, 255),
    "blue grey glass": (102, 153, 204), "green grey glass": (95, 158, 160),
}
NOUNS = {"amenity=cafe": "cafe", "amenity=pharmacy": "pharmacy", "amenity=bank": "bank", "shop=books": "bookshop",
         "tourism=hotel": "hotel", "amenity=restaurant": "restaurant", "shop=bakery": "bakery",
         "amenity=bar": "bar", "amenity=ice_cream": "ice cream parlour"}


def off(bearing: float, direction: str) -> float:
    return abs((bearing - DIRS[direction] + 180.0) % 360.0 - 180.0)


def xy_bearing(a, b) -> float:
    return math.degrees(math.atan2(b[0] - a[0], b[1] - a[1])) % 360.0


def by_label(scene, label):
    found = [p for p in scene.pois if p.label == label]
    assert len(found) == 1, f"{label!r} names {len(found)} places"
    return found[0]


def truth(scene, text: str):
    """(the answer the scene gives, the places whose boards must be read, the target) from the words."""
    anchor = by_label(scene, re.search(r'There is an? [\w\' -]+? named "([^"]+)" to the', text).group(1))
    if m := re.search(r"To the (\w+) of it, there is an? ([\w' -]+)\. Please tell me what is the name", text):
        direction, noun = m.groups()
        there = [p for p in scene.pois if p is not anchor and NOUNS.get(p.poi_class) == noun
                 and math.dist(p.anchor, anchor.anchor) <= 100.0 and off(xy_bearing(anchor.anchor, p.anchor),
                                                                        direction) <= 45.0]
        assert len(there) == 1, f"{text}: {len(there)} places fit"
        return there[0].label, [there[0]], there[0]
    if m := re.search(r'Nearby, there is an? [\w\' -]+? named "([^"]+)"\. Please tell me in which direction', text):
        target = by_label(scene, m.group(1))
        bearing = xy_bearing(anchor.anchor, target.anchor)
        direction = min(DIRS, key=lambda d: off(bearing, d))
        assert off(bearing, direction) <= 45.0
        return direction, [anchor, target], target
    m = re.search(r'To the (\w+) of it, there is a place with a sign reading "([^"]+)"\. Please tell me (.*)', text)
    direction, label, ask = m.groups()
    target = by_label(scene, label)
    assert off(xy_bearing(anchor.anchor, target.anchor), direction) <= 45.0, text
    building = next(b for b in scene.buildings if b.id == target.building_id)
    if ask.startswith("what kind of place"):
        return NOUNS[target.poi_class], [target], target
    if ask.startswith("how many floors"):
        assert 2.6 <= (building.height_m - 3.1) / (building.levels - 1) <= 4.5  # drawn as its levels
        return str(building.levels), [target], target
    assert ask.startswith("what colour")
    return building, [target], target


def reachable(actions: ActionModel, start: str, limit: int) -> set[str]:
    seen, queue = {start: 0}, deque([start])
    while queue:
        node = queue.popleft()
        if seen[node] < limit:
            for m in actions.moves(node):
                if m.edge.target not in seen:
                    seen[m.edge.target] = seen[node] + 1
                    queue.append(m.edge.target)
    return set(seen)


def test_every_answer_is_true_and_legible_within_the_budget(street, street_tasks):
    graph, scene = street
    renderer = Renderer(scene, graph, RenderSettings())
    actions = ActionModel(graph)
    legible: dict[str, set[str]] = {}

    def read_at(node: str) -> set[str]:
        if node not in legible:
            legible[node] = {s.text for m in actions.moves(node)
                             for s in renderer.perspective(node, m.heading, fov_deg=90.0, width=640,
                                                           height=480).signs
                             if s.legible and s.visible_fraction >= 0.5}
        return legible[node]

    tasks = [t for t in street_tasks.document["tasks"] if t["details"]["kind"] not in ("existence", "counting")]
    assert tasks
    for t in tasks:
        text, stated = t["instruction"], t["details"]["answer"]
        answer, must_read, target = truth(scene, text)
        if isinstance(answer, str):
            assert stated == answer, text
        else:  # a facade colour: the stated name is among the names nearest the wall's colour
            index = facade_style_index(answer.style, answer.height_m)
            wall = (PLASTER_STYLES + GLASS_STYLES)[index].wall
            nearest = sorted(REFERENCE_RGB, key=lambda k: math.dist(REFERENCE_RGB[k], wall))[:5]
            assert stated in nearest, f"{text}: {stated} for {wall}; nearest {nearest}"
        start = graph.nodes[t["start"]]
        assert geodesic_m(start.lat, start.lon, target.lat, target.lon) <= 200.0
        anchor_words = re.search(r"to the (\w+) of you", text).group(1)
        anchor = by_label(scene, re.search(r'named "([^"]+)" to the', text).group(1))
        assert off(initial_bearing_deg(start.lat, start.lon, anchor.lat, anchor.lon), anchor_words) <= 45.0
        near = [n for n in reachable(actions, t["start"], t["budget"] - 1)
                if geodesic_m(graph.nodes[n].lat, graph.nodes[n].lon, target.lat, target.lon) <= 80.0]
        for place in must_read:
            assert any(place.label in read_at(n) for n in sorted(near)), f"{place.label!r} never legible: {text}"


@pytest.mark.parametrize("kind", ["name", "floors", "colour", "category", "relation", "existence", "counting"])
def test_the_checker_sees_every_kind(street_tasks, kind):
    assert any(t["details"]["kind"] == kind for t in street_tasks.document["tasks"])



# --- against the raw map and the world as built ---------------------------------------------------------


def _checker(graph, scene, doc, osm_file):
    return Checker(osm_file, (scene.to_json(), graph_to_json(graph)), doc)


@pytest.fixture(scope="module")
def provoked(tmp_path_factory):
    """The provoking extract, its raw map file and its questions (every kind, the raw map given)."""
    graph, scene, raw = provoking_street()
    osm = write_osm(tmp_path_factory.mktemp("osm") / "provoking.osm", raw)
    doc = generate_questions("provoking", graph, scene, QuestionSettings(), stream=io.StringIO(),
                             map_places=read_map_places(osm, scene)).document
    return graph, scene, osm, doc


def test_the_high_street_has_no_false_fact_and_no_unsure_answer(street, street_tasks, tmp_path):
    graph, scene = street
    osm = write_osm(tmp_path / "street.osm", [(f"node/{k}", {**p.tags, "name": p.name}, p.lat, p.lon)
                                              for k, p in enumerate(scene.pois, 1)])
    renamed = Scene(scene.origin_lat, scene.origin_lon, scene.buildings,
                    [dataclasses.replace(p, id=f"node/{k}") for k, p in enumerate(scene.pois, 1)])
    assert _checker(graph, renamed, street_tasks.document, osm).check() == []


def test_the_provoking_extract_has_no_false_fact_and_no_unsure_answer(provoked):
    graph, scene, osm, doc = provoked
    assert {t["details"]["kind"] for t in doc["tasks"]} >= {"name", "category", "existence", "counting"}
    assert _checker(graph, scene, doc, osm).check() == []
    world = doc["world"]
    assert world["existence_answers"]["yes"] == world["existence_answers"]["no"] > 0
    assert world["checked_against"] == "the scene's places and the raw extract's"


def test_the_moved_board_is_caught_by_the_generator(provoked):
    """By its board Fermata Posta is north of Hotel Alpina (22 deg), by the map east (70 deg): no
    direction is stated between them, whatever the seed."""
    graph, scene, osm, _ = provoked
    places = {p.label: p for p in merged(scene, read_map_places(osm, scene))}
    hotel, stop = places[normalise("Hotel Alpina")], places[normalise("Fermata Posta")]
    assert _direction(hotel, stop, QuestionSettings()) == (None, MOVED)
    for seed in range(4):
        doc = generate_questions("p", graph, scene, QuestionSettings(seed=seed, per_kind=60), stream=io.StringIO(),
                                 map_places=read_map_places(osm, scene)).document
        assert not [t for t in doc["tasks"] if "Hotel Alpina" in t["instruction"]
                    and "Fermata Posta" in t["instruction"] and t["details"]["kind"] == "relation"]
        assert _checker(graph, scene, doc, osm).check() == []


def _wrong(doc, kind, **changes):
    """A copy of the first generated question of `kind` with its words and answer replaced (where the
    seed made none of that kind, a map-only question made into one: the checker reads the words)."""
    t = copy.deepcopy(next((t for t in doc["tasks"] if t["details"]["kind"] == kind), None)
                      or next(t for t in doc["tasks"] if t["details"]["kind"] in ("name", "category")))
    t["details"]["kind"] = kind
    for key, value in changes.items():
        if key in ("instruction", "start"):
            t[key] = value
        else:
            t["details"][key] = value
    return t


WRONG = {
    # the board's direction, not the map's
    "moved board": ("relation", "false", dict(
        start="s00", answer="north",
        instruction='There is a hotel named "Hotel Alpina" to the north of you. Nearby, there is a bus stop named '
                    '"Fermata Posta". Please tell me in which direction (north, east, south or west) the bus stop is '
                    'from the hotel named "Hotel Alpina"?')),
    # a second, unnamed car park 83 m west that only the raw map holds
    "two car parks": ("name", "non-unique", dict(
        start="s00", answer="Parcheggio Centro",
        instruction='There is a cafe named "Cafe Uno" to the north of you. To the west of it, there is a car park. '
                    'Please tell me what is the name of the car park?')),
    # Banca Rossa stands 30 m north of Farmacia Centrale
    "existence said no": ("existence", "false", dict(
        start="s00", answer="no",
        instruction='There is a pharmacy named "Farmacia Centrale" to the north of you. Please tell me whether there '
                    'is a bank within 100 m to the north of it: yes or no?')),
    "existence said yes": ("existence", "false", dict(
        start="s00", answer="yes",
        instruction='There is a pharmacy named "Farmacia Centrale" to the north of you. Please tell me whether there '
                    'is a hotel within 100 m to the south of it: yes or no?')),
    # one bank between the pharmacy and the bookshop, not two
    "count": ("counting", "false", dict(
        start="s00", answer="2",
        instruction='There is a pharmacy named "Farmacia Centrale" to the north of you. There is also a bookshop '
                    'named "Libreria Dante" nearby. Please tell me how many banks there are between the pharmacy '
                    'named "Farmacia Centrale" and the bookshop named "Libreria Dante", within 25 m of the straight '
                    'line from one to the other?')),
    "renderer fact recorded as the map's": ("colour", "false", dict(
        facts=[{"fact": "facade colour", "source": "map", "from": "?"}])),
    "anchor on the other side": ("category", "false", dict()),  # the start moved past the anchor below
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_a_deliberately_wrong_question_makes_the_checker_fail(provoked, case):
    graph, scene, osm, doc = provoked
    kind, what, changes = WRONG[case]
    wrong = _wrong(doc, kind, **changes)
    if case == "anchor on the other side":  # the same words from a start at the street's far end
        anchor = next(p for p in scene.pois if p.id == wrong["details"]["anchor_poi"])
        stated = re.search(r"to the (\w+) of you", wrong["instruction"]).group(1)
        wrong["start"] = {"north": "s14", "south": "s00"}[stated]  # one north-south street
        lat = graph.nodes[wrong["start"]].lat
        assert (anchor.lat < lat) if stated == "north" else (anchor.lat > lat)
    found = _checker(graph, scene, {"tasks": [wrong]}, osm).check()
    assert [p[1] for p in found] == [what], found


def test_the_raw_map_is_what_catches_the_second_car_park(provoked):
    """Without the raw extract the generator sees one car park; the checker, reading the raw file,
    sees two: the wrong question passes a checker given only the scene's places."""
    graph, scene, osm, doc = provoked
    wrong = _wrong(doc, "name", **WRONG["two car parks"][2])
    scene_only = write_osm(osm.with_name("scene_only.osm"), [(p.id, {**p.tags, "name": p.name}, p.lat, p.lon)
                                                             for p in scene.pois])
    assert _checker(graph, scene, {"tasks": [wrong]}, scene_only).check() == []
    assert _checker(graph, scene, {"tasks": [wrong]}, osm).check() != []


@pytest.fixture(scope="module", params=sorted(PACKAGED_SOURCES))
def packaged(request, packaged_world):
    """Each packaged extract built by `cityseeker world build`'s code (the raw map handed to the
    question generator as the build does), read back from the world folder."""
    from cityseeker_ros.core.worlds.osm_sources import default_cache_dir, fetch_source

    name = request.param
    return name, packaged_world(name), fetch_source(name, default_cache_dir())


def test_a_packaged_world_has_no_false_fact_and_no_unsure_answer(packaged):
    name, folder, pbf = packaged
    doc = json.loads((folder / "tasks.questions.json").read_text())
    world = doc["world"]
    assert doc["tasks"], name
    assert world["checked_against"] == "the scene's places and the raw extract's"
    assert Checker(pbf, folder).check() == [], name
    # Every kind is made or the world says why it is not, in world.json too.
    made = {k for k, n in world["by_kind"].items() if n}
    assert made | set(world["kinds_not_made"]) == set(KINDS) and not made & set(world["kinds_not_made"])
    record = json.loads((folder / "world.json").read_text())["families"]["questions"]
    assert record.get("kinds_not_made", {}) == world["kinds_not_made"]
    assert world["existence_answers"]["yes"] == world["existence_answers"]["no"]
