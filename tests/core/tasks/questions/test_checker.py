"""An independent checker: every question's answer recomputed from the scene by reading the
question's own words (the places it quotes, the kind and direction it states), and its legibility
from fresh renders of the views an agent can reach within the budget. It shares no code with the
generator: not its answers module, not its legibility module, not its stored ids."""
from __future__ import annotations

import math
import re
from collections import deque

import pytest

from cityseeker_ros.core.render import Renderer, RenderSettings
from cityseeker_ros.core.render.palette import GLASS_STYLES, PLASTER_STYLES, facade_style_index
from cityseeker_ros.core.streets.geodesy import geodesic_m, initial_bearing_deg
from cityseeker_ros.core.streets.transition import ActionModel

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

    tasks = street_tasks.document["tasks"]
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


@pytest.mark.parametrize("kind", ["name", "floors", "colour", "category", "relation"])
def test_the_checker_sees_every_kind(street_tasks, kind):
    assert any(t["details"]["kind"] == kind for t in street_tasks.document["tasks"])
