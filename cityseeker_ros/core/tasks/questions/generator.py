"""CityEQA-style questions on a built world: a start within 200 m of a target, a question that
names the target by a nearby named place and one of the four directions CityEQA uses, and an
answer the world's data fixes and the rendered views show.

Every question is kept only if its answer can be read: the target's board (and for a relation the
anchor's board too) must be legible, in the renderer's visible-sign lists of the views the
environment shows, at some node the agent can reach within the budget less the answer's step.
Questions whose target cannot be told apart (another place of the same kind on the same side of
the anchor, a name used twice nearby) are never made.
"""
from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Optional, TextIO

import numpy as np

from cityseeker_ros.core.infra.progress import Progress
from cityseeker_ros.core.render import RENDERER_VERSION
from cityseeker_ros.core.streets.geodesy import circular_difference, geodesic_m, initial_bearing_deg, path_length_m
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.episode import difficulty_of
from cityseeker_ros.core.tasks.family import GeneratedTasks
from cityseeker_ros.core.tasks.questions.answers import (
    CATEGORIES,
    KINDS,
    bearing_xy,
    cardinal,
    category_words,
    fact,
    normalise,
    storeys_drawn,
)
from cityseeker_ros.core.tasks.questions.legibility import SignSight
from cityseeker_ros.core.tasks.task_file import TASK_FILE_VERSION
from cityseeker_ros.core.worlds.scene import Poi, Scene

FAMILY = "questions"
# CityEQA-EC's six categories (its data's `category` field) for the five kinds of answer made
# here; "Existence Judgement" (yes/no) questions are not made.
CITYEQA_CATEGORIES: tuple[str, ...] = ("Object Recognition", "Attribute Recognition", "Counting",
                                       "Existence Judgement", "Spatial Reasoning", "World Knowledge")


@dataclass(frozen=True)
class QuestionSettings:
    """The paper's rules (a start within 200 m, 50 steps) and what makes a question fair here."""

    seed: int = 0
    budget: int = 50  # CityEQA's limit on navigation and exploration steps
    max_start_m: float = 200.0  # straight line from the start to the target, as the paper's
    min_start_m: float = 60.0  # beyond the 50 m within which the target's board can be read
    anchor_max_m: float = 60.0  # the named place the question starts from stands this near the target
    anchor_min_m: float = 8.0
    relation_tolerance_deg: float = 30.0  # the target lies within this of the stated direction from the anchor
    unique_radius_m: float = 100.0  # no other place of the target's kind on that side of the anchor this near
    name_radius_m: float = 300.0  # names quoted in a question are used once this near
    per_kind: int = 30  # questions of each kind at most
    dev_share: float = 0.2
    view: dict[str, Any] = field(default_factory=dict)  # the view source's fov_deg, width, height
    render: dict[str, Any] = field(default_factory=dict)  # RenderSettings fields (unsigned_fraction...)


@dataclass(frozen=True)
class _Place:
    poi: Poi
    word: str  # its kind in words: "pharmacy"
    latlon: tuple[float, float]


def generate_questions(name: str, graph: StreetGraph, scene: Scene, settings: QuestionSettings,
                       stream: Optional[TextIO] = None) -> GeneratedTasks:
    """The task file's document for one world, deterministic in the settings. Rendering views to
    check legibility takes minutes on a city: progress goes to `stream` (default stderr)."""
    rng = np.random.default_rng(settings.seed)
    actions = ActionModel(graph)
    sight = SignSight(scene, graph, settings.view, settings.render, actions=actions)
    places = [_Place(p, category_words(p.poi_class)[0], (p.lat, p.lon)) for p in scene.pois
              if p.signed and p.visible_nodes]
    buildings = {b.id: b for b in scene.buildings}
    legible: dict[str, tuple[str, ...]] = {}

    def legible_nodes(p: Poi) -> tuple[str, ...]:
        if p.id not in legible:
            legible[p.id] = sight.legible_from(p.id, p.visible_nodes)
        return legible[p.id]

    tasks: list[dict[str, Any]] = []
    counts = {k: 0 for k in KINDS}
    order = rng.permutation(len(places))
    named = [pl for pl in places if pl.poi.label.strip()]
    unique = _unique_names(named, settings.name_radius_m)
    with Progress("question tasks made", settings.per_kind * len(KINDS), unit="questions",
                  stream=stream) as progress:
        for i in order:
            target = places[int(i)]
            if all(counts[k] >= settings.per_kind for k in KINDS):
                break
            if not legible_nodes(target.poi):
                continue
            for kind in _kinds_for(target, buildings, rng):
                if counts[kind] >= settings.per_kind:
                    continue
                task = _question(kind, target, places, named, unique, scene, graph, actions, legible_nodes, settings,
                                 rng)
                if task is not None:
                    task["id"] = f"{name}-q{len(tasks):04d}"
                    tasks.append(task)
                    counts[kind] += 1
                    progress.advance()
                    break  # one question per target, so no place dominates
    for task in tasks:
        task["split"] = "dev" if _unit(settings.seed, task["id"]) < settings.dev_share else "test"
    document = {
        "version": TASK_FILE_VERSION,
        "family": FAMILY,
        "world": _world_facts(tasks, settings, sight),
        "settings": asdict(settings),
        "tasks": tasks,
    }
    by_category = {CATEGORIES[k]: n for k, n in counts.items() if n}
    return GeneratedTasks(document, by_category, None if tasks else _why_none(places, legible))


def _kinds_for(target: _Place, buildings: dict, rng: np.random.Generator) -> list[str]:
    """The kinds of question this place can be asked about, in a seeded order."""
    kinds = ["relation"]
    if target.poi.label.strip():
        kinds += ["name", "category"]
    building = buildings.get(target.poi.building_id)
    if building is not None and not building.inferred:
        kinds.append("colour")
        if storeys_drawn(building) is not None:
            kinds.append("floors")
    return [kinds[int(k)] for k in rng.permutation(len(kinds))]


def _question(kind: str, target: _Place, places: Sequence[_Place], named: Sequence[_Place], unique: set[str],
              scene: Scene, graph: StreetGraph, actions: ActionModel, legible_nodes: Any, settings: QuestionSettings,
              rng: np.random.Generator) -> Optional[dict[str, Any]]:
    if kind != "name" and target.poi.id not in unique:
        return None
    anchors = []
    for a in named:
        if a.poi.id == target.poi.id or a.poi.id not in unique:
            continue
        if normalise(a.poi.label) == normalise(target.poi.label):
            continue
        d = _dist(a, target)
        if not settings.anchor_min_m <= d <= settings.anchor_max_m:
            continue
        bearing = bearing_xy(a.poi.anchor, target.poi.anchor)
        direction = cardinal(bearing)
        if abs(circular_difference(bearing, {"north": 0, "east": 90, "south": 180, "west": 270}[direction])) \
                > settings.relation_tolerance_deg:
            continue
        if kind == "name" and not _only_one_there(target, a, direction, places, settings.unique_radius_m):
            continue
        anchors.append((d, a.poi.id, a, direction))
    # The nearest anchor whose board can be read (rendering only as far down the list as needed).
    anchors.sort(key=lambda x: (x[0], x[1]))
    chosen = next((x for x in anchors if legible_nodes(x[2].poi)), None)
    if chosen is None:
        return None
    _, _, anchor, relation = chosen
    details: dict[str, Any] = {"kind": kind, "target_poi": target.poi.id, "anchor_poi": anchor.poi.id}
    try:
        scene_answer = fact(scene, details)
    except ValueError:
        return None
    # Where the answer can be read: the target's board; a relation needs the anchor's too.
    must_see = [legible_nodes(anchor.poi)] if kind == "relation" else []
    must_see.append(legible_nodes(target.poi))
    start = _start(target, must_see, graph, actions, settings, rng)
    if start is None:
        return None
    start_node, route = start
    route_latlon = graph.latlon(route)
    start_ll = (graph.nodes[start_node].lat, graph.nodes[start_node].lon)
    reach = actions.hops_from(start_node, settings.budget - 1)
    details.update({
        "answer": scene_answer[0],
        "accepted": list(scene_answer[1]),
        "relation": relation,
        "target_latlon": [round(target.latlon[0], 7), round(target.latlon[1], 7)],
        "start_distance_m": round(geodesic_m(*start_ll, *target.latlon), 1),
        "route_m": round(path_length_m(route_latlon), 1),
        "legible_from": sorted(n for n in must_see[-1] if n in reach),
    })
    if kind in ("floors", "colour"):
        details["building"] = target.poi.building_id
    intro = (f"There is {_a(anchor.word)} named \"{anchor.poi.label.strip()}\" to the "
             f"{cardinal(initial_bearing(start_ll, anchor.latlon))} of you.")
    text, parse = _wording(kind, target, anchor, relation)
    details["question"] = f"{intro} {text}"
    details["parse"] = {"kind": kind, "anchor": anchor.poi.label.strip(), "anchor_direction":
                        cardinal(initial_bearing(start_ll, anchor.latlon)), "relation": relation, **parse}
    return {
        "category": CATEGORIES[kind],
        "difficulty": difficulty_of(len(route) - 1),
        "instruction": details["question"],
        "request": text.split("Please tell me ", 1)[-1],
        "start": start_node,
        "target": route[-1],
        "reference_path": list(route),
        "budget": settings.budget,
        "details": details,
    }


def _wording(kind: str, target: _Place, anchor: _Place, relation: str) -> tuple[str, dict[str, Any]]:
    """The question after the landmark line, CityEQA's "Please tell me ..." form, and its parse:
    what the question itself says, structured (what PMA's Planner extracts), for agents."""
    word, label = target.word, target.poi.label.strip()
    if kind == "name":
        return (f"To the {relation} of it, there is {_a(word)}. Please tell me what is the name of the {word}?",
                {"target_kind": word, "target_class": target.poi.poi_class, "target_name": None})
    parse = {"target_kind": None, "target_class": None, "target_name": label}
    if kind == "relation":
        return (f"Nearby, there is {_a(word)} named \"{label}\". Please tell me in which direction (north, east, "
                f"south or west) the {word} is from the {anchor.word} named \"{anchor.poi.label.strip()}\"?",
                {**parse, "target_kind": word})
    there = f"To the {relation} of it, there is a place with a sign reading \"{label}\"."
    ask = {"category": "what kind of place is it?",
           "floors": "how many floors does the building with that sign have?",
           "colour": "what colour is the facade of the building with that sign?"}[kind]
    return f"{there} Please tell me {ask}", parse


def initial_bearing(a: tuple[float, float], b: tuple[float, float]) -> float:
    return initial_bearing_deg(a[0], a[1], b[0], b[1])


def _a(word: str) -> str:
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _unique_names(named: Sequence[_Place], radius_m: float) -> set[str]:
    """Ids of the places whose name no other place within `radius_m` shares."""
    groups: dict[str, list[_Place]] = {}
    for p in named:
        groups.setdefault(normalise(p.poi.label), []).append(p)
    return {p.poi.id for key, group in groups.items() if key for p in group
            if not any(o is not p and _dist(o, p) <= radius_m for o in group)}


def _dist(a: _Place, b: _Place) -> float:
    return math.dist(a.poi.anchor, b.poi.anchor)


def _only_one_there(target: _Place, anchor: _Place, direction: str, places: Sequence[_Place],
                    radius_m: float) -> bool:
    """No other place of the target's kind within `radius_m` of the anchor on the same side."""
    centre = {"north": 0.0, "east": 90.0, "south": 180.0, "west": 270.0}[direction]
    for o in places:
        if o.poi.id in (target.poi.id, anchor.poi.id) or o.word != target.word:
            continue
        if _dist(o, anchor) > radius_m:
            continue
        if abs(circular_difference(bearing_xy(anchor.poi.anchor, o.poi.anchor), centre)) <= 45.0:
            return False
    return True


def _start(target: _Place, must_see: list[tuple[str, ...]], graph: StreetGraph, actions: ActionModel,
           settings: QuestionSettings, rng: np.random.Generator) -> Optional[tuple[str, tuple[str, ...]]]:
    """A seeded start between min_start_m and max_start_m of the target (straight line) from which a
    walk seeing each board of `must_see` in turn fits the budget less the answer's step, and that
    walk: the reference path, ending where the target's board is read."""
    ring = [n for n in graph.nodes_within(target.latlon[0], target.latlon[1], settings.max_start_m)
            if geodesic_m(graph.nodes[n].lat, graph.nodes[n].lon, *target.latlon) >= settings.min_start_m]
    ring.sort()
    limit = settings.budget - 1
    for k in rng.permutation(len(ring))[:40]:
        start = ring[int(k)]
        route, here, used = [start], start, 0
        for nodes in must_see:
            reach = actions.hops_from(here, limit - used)
            options = sorted((reach[n], n) for n in nodes if n in reach)
            if not options:
                break
            hops, goal = options[0]
            route += _node_path(actions, here, goal)[1:]
            here, used = goal, used + hops
        else:
            return start, tuple(route)
    return None


def _node_path(actions: ActionModel, start: str, goal: str) -> list[str]:
    path, here = [start], start
    for index in actions.action_path(start, goal) or []:
        here = actions.next_node(here, index)
        path.append(here)
    return path


def _unit(seed: int, key: str) -> float:
    digest = hashlib.sha256(f"{seed}/{key}".encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2 ** 64


def _world_facts(tasks: list[dict[str, Any]], settings: QuestionSettings, sight: SignSight) -> dict[str, Any]:
    """What to state beside every result: how many questions of each kind, how far the starts
    are (straight and walked), the budget, and the views legibility was checked in."""
    def spread(values: list[float]) -> dict[str, float]:
        if not values:
            return {}
        return {"min": round(min(values), 1), "median": round(statistics.median(values), 1),
                "max": round(max(values), 1)}

    return {
        "questions": len(tasks),
        "by_kind": {k: sum(t["details"]["kind"] == k for t in tasks) for k in KINDS},
        "start_distance_m": spread([t["details"]["start_distance_m"] for t in tasks]),
        "route_m": spread([t["details"]["route_m"] for t in tasks]),
        "reference_steps": spread([float(len(t["reference_path"]) - 1) for t in tasks]),
        "budget": settings.budget,
        "legibility": {**sight.describe(), "renderer_version": RENDERER_VERSION},
    }


def _why_none(places: Sequence[_Place], legible: dict[str, tuple[str, ...]]) -> str:
    if not places:
        return "the scene has no signed place seen from a street node, so no question can name or ask about one"
    read = sum(bool(v) for v in legible.values())
    if not read:
        return (f"none of the {len(places)} signed places has a board legible in the rendered views of the nodes "
                "it is seen from (boards too far, too oblique, or hidden)")
    return (f"{read} places have a legible board, but none has a uniquely named place within the anchor distance "
            "in a clear direction, or no start between the minimum and 200 m reaches its board within the budget")
