"""CityEQA-style questions on a built world: a start within 200 m of a target, a question that
names the target by a nearby named place and one of the four directions CityEQA uses, and an
answer the world's data fixes and the rendered views show.

Seven kinds, under CityEQA-EC's six task types (§2, Figure 2): a place's name, kind, facade colour
or storeys, a direction between two places, whether a kind of place stands on one side of another
(yes and no balanced), and how many of a kind stand between two named places.

Every question is kept only if its answer can be read: the target's board (and for a relation the
anchor's board too) must be legible, in the renderer's visible-sign lists of the views the
environment shows, at some node the agent can reach within the budget less the answer's step.
Every fact is checked against the map (OSM positions, every place of the scene signed or not, and
the raw extract's places when given) and against the world as built (the boards where the builder
drew them): a direction must hold at every pairing of the places' positions (places.MapPlace), and
a question whose words fit a second place (another place that could be called the target's kind on
that side, a name used twice nearby, a place near the edge of a stated radius or corridor) is
dropped; `world.dropped` counts why.
"""
from __future__ import annotations

import hashlib
import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import product
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
    CARDINALS,
    CATEGORIES,
    KINDS,
    YES_NO,
    bearing_xy,
    cardinal,
    category_words,
    corridor,
    fact,
    normalise,
    plural,
    sector,
    storeys_drawn,
)
from cityseeker_ros.core.tasks.questions.facts import facts_of
from cityseeker_ros.core.tasks.questions.legibility import SignSight
from cityseeker_ros.core.tasks.questions.places import MapPlace, merged
from cityseeker_ros.core.tasks.task_file import TASK_FILE_VERSION
from cityseeker_ros.core.worlds.scene import XY, Poi, Scene

FAMILY = "questions"
# CityEQA-EC's six task types (§2 and Figure 2 of the paper; the names are its released data's
# `category` field), all seven kinds made here fall under one of them (floors and counts both Counting).
CITYEQA_CATEGORIES: tuple[str, ...] = ("Object Recognition", "Attribute Recognition", "Counting",
                                       "Existence Judgement", "Spatial Reasoning", "World Knowledge")
TARGET_KINDS: tuple[str, ...] = ("name", "floors", "colour", "category", "relation")  # one target place each
DIRECTIONS = {d: 90.0 * i for i, d in enumerate(CARDINALS)}
MOVED = "a moved board (or a big area's centre) changes the direction the map gives"


@dataclass(frozen=True)
class QuestionSettings:
    """The paper's rules (a start within 200 m, 50 steps) and what makes a question fair here."""

    seed: int = 0
    budget: int = 50  # CityEQA's limit on navigation and exploration steps
    max_start_m: float = 200.0  # straight line from the start to the target, as the paper's
    min_start_m: float = 60.0  # beyond the 50 m within which the target's board can be read
    anchor_max_m: float = 60.0  # the named place the question starts from stands this near the target
    anchor_min_m: float = 8.0
    relation_tolerance_deg: float = 30.0  # the target lies within this of the stated direction, by map and board
    # No other place that could be called the target's kind on that side of the anchor this near: the
    # words name no distance, so the paper's neighbourhood (a start within 200 m of the target) is used.
    unique_radius_m: float = 200.0
    name_radius_m: float = 300.0  # names quoted in a question are used once this near
    margin_m: float = 10.0  # a place this near a stated limit (a radius, a corridor's edge) makes the words unsure
    margin_deg: float = 10.0  # ... and this near the edge of a stated side (45 degrees off its direction)
    exist_within_m: float = 100.0  # "is there a pharmacy within 100 m to the north of it?"
    corridor_m: float = 25.0  # counting "between A and B": within this of the straight line
    count_min_m: float = 40.0  # A and B this far apart at least ...
    count_max_m: float = 150.0  # ... and at most, so that walking from one to the other fits the budget
    per_kind: int = 30  # questions of each kind at most (existence: half yes, half no)
    dev_share: float = 0.2
    view: dict[str, Any] = field(default_factory=dict)  # the view source's fov_deg, width, height
    render: dict[str, Any] = field(default_factory=dict)  # RenderSettings fields (unsigned_fraction...)


@dataclass(frozen=True)
class _Place:
    poi: Poi
    word: str  # its kind in words: "pharmacy"
    latlon: tuple[float, float]  # the map's position
    at: MapPlace  # both positions, and every word it could be taken for

    @property
    def label(self) -> str:
        return self.poi.label.strip()


@dataclass
class _Context:
    """What every question of one world is made from and checked against."""

    graph: StreetGraph
    scene: Scene
    settings: QuestionSettings
    actions: ActionModel
    rng: np.random.Generator
    everything: list[MapPlace]  # scene and raw map: what a question's words could mean
    unique: set[str]  # ids of the named places whose name is used once within name_radius_m
    legible_nodes: Any
    node_xy: dict[str, XY]
    dropped: Counter = field(default_factory=Counter)
    by_label: Optional[dict[str, list[MapPlace]]] = None  # the places of each normalised name, made once


def generate_questions(name: str, graph: StreetGraph, scene: Scene, settings: QuestionSettings,
                       stream: Optional[TextIO] = None,
                       map_places: Optional[Sequence[MapPlace]] = None) -> GeneratedTasks:
    """The task file's document for one world, deterministic in the settings. `map_places` are the
    raw extract's places (places.read_map_places): without them a question's words are checked
    against the scene's places only. Rendering views to check legibility takes minutes on a city:
    progress goes to `stream` (default stderr)."""
    rng = np.random.default_rng(settings.seed)
    actions = ActionModel(graph)
    sight = SignSight(scene, graph, settings.view, settings.render, actions=actions)
    everything = merged(scene, map_places)
    at = {p.id: p for p in everything}
    places = [_Place(p, category_words(p.poi_class)[0], (p.lat, p.lon), at[p.id]) for p in scene.pois
              if p.signed and p.visible_nodes]
    legible: dict[str, tuple[str, ...]] = {}

    def legible_nodes(p: Poi) -> tuple[str, ...]:
        if p.id not in legible:
            legible[p.id] = sight.legible_from(p.id, p.visible_nodes)
        return legible[p.id]

    ids = list(graph.nodes)
    xy = np.atleast_2d(scene.frame.to_xy([graph.nodes[n].lat for n in ids], [graph.nodes[n].lon for n in ids]))
    named = [pl for pl in places if pl.label and '"' not in pl.label]  # a quote inside quotes misreads
    ctx = _Context(graph, scene, settings, actions, rng, everything, _unique_names(named, everything,
                   settings.name_radius_m), legible_nodes, {n: (float(x), float(y)) for n, (x, y) in zip(ids, xy)})
    buildings = {b.id: b for b in scene.buildings}
    tasks: list[dict[str, Any]] = []
    counts = {k: 0 for k in KINDS}
    order = rng.permutation(len(places))
    with Progress("question tasks made", settings.per_kind * len(KINDS), unit="questions",
                  stream=stream) as progress:
        for i in order:
            target = places[int(i)]
            if all(counts[k] >= settings.per_kind for k in TARGET_KINDS):
                break
            if not legible_nodes(target.poi):
                continue
            for kind in _kinds_for(target, buildings, rng):
                if counts[kind] >= settings.per_kind:
                    continue
                task = _question(kind, target, named, ctx)
                if task is not None:
                    tasks.append(task)
                    counts[kind] += 1
                    progress.advance()
                    break  # one question per target, so no place dominates
        for task in _existence(places, named, ctx) + _counting(places, named, ctx):
            tasks.append(task)
            counts[task["details"]["kind"]] += 1
            progress.advance()
    for k, task in enumerate(tasks):
        task["id"] = f"{name}-q{k:04d}"
        task["split"] = "dev" if _unit(settings.seed, task["id"]) < settings.dev_share else "test"
    not_made = {k: _why_kind_none(k, places, buildings, ctx) for k in KINDS if not counts[k]}
    document = {
        "version": TASK_FILE_VERSION,
        "family": FAMILY,
        "world": _world_facts(tasks, settings, sight, ctx, not_made, map_places is not None),
        "settings": asdict(settings),
        "tasks": tasks,
    }
    by_category: dict[str, int] = {}
    for k, n in counts.items():
        if n:
            by_category[CATEGORIES[k]] = by_category.get(CATEGORIES[k], 0) + n
    return GeneratedTasks(document, by_category, None if tasks else _why_none(places, legible))


def _kinds_for(target: _Place, buildings: dict, rng: np.random.Generator) -> list[str]:
    """The kinds of question this place can be asked about, in a seeded order."""
    kinds = ["relation"]
    if target.label:
        kinds += ["name", "category"]
    building = buildings.get(target.poi.building_id)
    if building is not None and not building.inferred:
        kinds.append("colour")
        if storeys_drawn(building) is not None:
            kinds.append("floors")
    return [kinds[int(k)] for k in rng.permutation(len(kinds))]


def _direction(anchor: MapPlace, target: MapPlace, s: QuestionSettings) -> tuple[Optional[str], str]:
    """(the direction of `target` from `anchor`, "") when the map positions and the boards as built
    both put it within the tolerance of one cardinal direction, else (None, why)."""
    by_map = bearing_xy(anchor.map_xy, target.map_xy)
    direction = cardinal(by_map)
    if abs(circular_difference(by_map, DIRECTIONS[direction])) > s.relation_tolerance_deg:
        return None, "direction unclear on the map"
    for a, t in product(anchor.positions, target.positions):
        if abs(circular_difference(bearing_xy(a, t), DIRECTIONS[direction])) > s.relation_tolerance_deg:
            return None, MOVED
    return direction, ""


def _near(anchor: MapPlace, target: MapPlace, s: QuestionSettings, far_m: Optional[float] = None) -> bool:
    """Within the anchor distance (or anchor_min_m..`far_m`) by the map and as built."""
    return all(s.anchor_min_m <= math.dist(a, t) <= (s.anchor_max_m if far_m is None else far_m)
               for a, t in product(anchor.positions, target.positions))


def _on_side(centre: MapPlace, other: MapPlace, direction: str, radius_m: float, s: QuestionSettings) -> bool:
    """Could `other` be read as "to the `direction` of `centre`, within `radius_m`" by either's
    positions, allowing the margins (so near-misses count as fits)."""
    for c in centre.positions:
        for p in other.positions:
            d, off = sector(c, p, direction)
            if d <= radius_m + s.margin_m and off <= 45.0 + s.margin_deg:
                return True
    return False


def _question(kind: str, target: _Place, named: Sequence[_Place], ctx: _Context) -> Optional[dict[str, Any]]:
    s = ctx.settings
    if kind != "name" and target.poi.id not in ctx.unique:
        ctx.dropped["target's name also used by another place within the name radius"] += 1
        return None
    anchors, why = [], Counter()
    for a in named:
        if a.poi.id == target.poi.id or a.poi.id not in ctx.unique:
            continue
        if normalise(a.label) == normalise(target.label) or not _near(a.at, target.at, s):
            continue
        direction, reason = _direction(a.at, target.at, s)
        if direction is None:
            why[reason] += 1
            continue
        if kind == "name" and not _only_one_there(target, a, direction, ctx):
            why["another place that could be the target's kind on that side (named or not, drawn or not)"] += 1
            continue
        anchors.append((math.dist(a.at.map_xy, target.at.map_xy), a.poi.id, a, direction))
    # The nearest anchor whose board can be read (rendering only as far down the list as needed).
    anchors.sort(key=lambda x: (x[0], x[1]))
    chosen = next((x for x in anchors if ctx.legible_nodes(x[2].poi)), None)
    if chosen is None:
        if why and not anchors:
            ctx.dropped[why.most_common(1)[0][0]] += 1
        return None
    _, _, anchor, relation = chosen
    details: dict[str, Any] = {"kind": kind, "target_poi": target.poi.id, "anchor_poi": anchor.poi.id}
    try:
        scene_answer = fact(ctx.scene, details)
    except ValueError:
        return None
    if kind == "relation" and scene_answer[0] != relation:
        ctx.dropped[MOVED] += 1
        return None
    # Where the answer can be read: the target's board; a relation needs the anchor's too.
    must_see = [ctx.legible_nodes(anchor.poi)] if kind == "relation" else []
    must_see.append(ctx.legible_nodes(target.poi))
    text, parse = _wording(kind, target, anchor, relation)
    details.update({"answer": scene_answer[0], "accepted": list(scene_answer[1]), "relation": relation})
    if kind in ("floors", "colour"):
        details["building"] = target.poi.building_id
    return _task(kind, details, text, parse, anchor, target.latlon, must_see, ctx,
                 quoted=() if kind == "name" else (target,))


def _task(kind: str, details: dict[str, Any], text: str, parse: dict[str, Any], anchor: _Place,
          target_latlon: tuple[float, float], must_see: list[tuple[str, ...]], ctx: _Context,
          quoted: Sequence[_Place] = ()) -> Optional[dict]:
    """The task for a question whose answer is settled: a start, the reference walk, the words."""
    s, graph = ctx.settings, ctx.graph
    start = _start(target_latlon, anchor, must_see, ctx, (anchor, *quoted))
    if start is None:
        return None
    start_node, route = start
    route_latlon = graph.latlon(route)
    start_ll = (graph.nodes[start_node].lat, graph.nodes[start_node].lon)
    reach = ctx.actions.hops_from(start_node, s.budget - 1)
    seen_from = cardinal(initial_bearing(start_ll, anchor.latlon))
    details.update({
        "target_latlon": [round(target_latlon[0], 7), round(target_latlon[1], 7)],
        "start_distance_m": round(geodesic_m(*start_ll, *target_latlon), 1),
        "route_m": round(path_length_m(route_latlon), 1),
        "legible_from": sorted(n for n in must_see[-1] if n in reach),
        "facts": facts_of(kind),
    })
    intro = f"There is {_a(anchor.word)} named \"{anchor.label}\" to the {seen_from} of you."
    details["question"] = f"{intro} {text}"
    details["parse"] = {"kind": kind, "anchor": anchor.label, "anchor_direction": seen_from,
                        "relation": details.get("relation"), **parse}
    return {
        "category": CATEGORIES[kind],
        "difficulty": difficulty_of(len(route) - 1),
        "instruction": details["question"],
        "request": text.split("Please tell me ", 1)[-1],
        "start": start_node,
        "target": route[-1],
        "reference_path": list(route),
        "budget": s.budget,
        "details": details,
    }


def _existence(places: Sequence[_Place], named: Sequence[_Place], ctx: _Context) -> list[dict[str, Any]]:
    """CityEQA's Existence Judgement: "is there a pharmacy within 100 m to the north of it?", as
    many yes as no. Yes: a signed place of the kind stands there by the map and as built (its board
    the walk ends at). No: nothing that could be taken for the kind stands anywhere near that side,
    drawn or not (the walk ends at the anchor's board)."""
    s, half = ctx.settings, ctx.settings.per_kind // 2
    far_m = s.exist_within_m - s.margin_m  # a yes stands clearly inside the stated radius
    kinds = sorted({p.word for p in places})
    made: dict[str, list[dict[str, Any]]] = {"yes": [], "no": []}
    for i in ctx.rng.permutation(len(places)):
        target = places[int(i)]
        if len(made["yes"]) >= half:
            break
        for a in sorted(named, key=lambda a: (math.dist(a.at.map_xy, target.at.map_xy), a.poi.id)):
            if a.poi.id == target.poi.id or a.poi.id not in ctx.unique or not _near(a.at, target.at, s, far_m):
                continue
            direction, _ = _direction(a.at, target.at, s)
            if direction is None or not ctx.legible_nodes(a.poi) or not ctx.legible_nodes(target.poi):
                continue
            task = _yes_no("yes", target.word, a, direction, target.latlon,
                           [ctx.legible_nodes(a.poi), ctx.legible_nodes(target.poi)], ctx)
            if task is not None:
                made["yes"].append(task)
                break
    for i in ctx.rng.permutation(len(named)):
        if len(made["no"]) >= half:
            break
        a = named[int(i)]
        if a.poi.id not in ctx.unique:
            continue
        options = [(d, k) for d in CARDINALS for k in kinds]
        for j in ctx.rng.permutation(len(options)):
            direction, word = options[int(j)]
            if any(word in o.could_be and _on_side(a.at, o, direction, s.exist_within_m, s)
                   for o in ctx.everything if o.id != a.poi.id):
                continue
            if not ctx.legible_nodes(a.poi):
                break
            task = _yes_no("no", word, a, direction, a.latlon, [ctx.legible_nodes(a.poi)], ctx)
            if task is not None:
                made["no"].append(task)
            break
    n = min(len(made["yes"]), len(made["no"]))
    if len(made["yes"]) != len(made["no"]):
        ctx.dropped["existence: kept as many yes as no"] += abs(len(made["yes"]) - len(made["no"]))
    return [t for pair in zip(made["yes"][:n], made["no"][:n]) for t in pair]


def _yes_no(answer: str, word: str, anchor: _Place, direction: str, target_latlon: tuple[float, float],
            must_see: list[tuple[str, ...]], ctx: _Context) -> Optional[dict[str, Any]]:
    within = ctx.settings.exist_within_m
    details: dict[str, Any] = {"kind": "existence", "target_poi": anchor.poi.id, "anchor_poi": anchor.poi.id,
                               "asked_kind": word, "within_m": within, "relation": direction}
    if fact(ctx.scene, details)[0] != answer:  # the map's positions, as the oracle reads them
        ctx.dropped["existence: the scene's answer differs from the map check"] += 1
        return None
    details.update({"answer": answer, "accepted": [answer]})
    text = (f"Please tell me whether there is {_a(word)} within {within:g} m to the {direction} of it: "
            "yes or no?")
    parse = {"target_kind": word, "target_class": None, "target_name": None, "within_m": within}
    return _task("existence", details, text, parse, anchor, target_latlon, must_see, ctx)


def _counting(places: Sequence[_Place], named: Sequence[_Place], ctx: _Context) -> list[dict[str, Any]]:
    """CityEQA's Counting from map facts: "how many bus stops are there between A and B?" (within
    corridor_m of the straight line from one named place to the other). Kept only when every place
    that could be the kind is clearly inside the corridor (then it is signed, of that kind, and its
    board legible) or clearly outside, by the map and as built."""
    s = ctx.settings
    anchors = [a for a in named if a.poi.id in ctx.unique]
    made: list[dict[str, Any]] = []
    order = ctx.rng.permutation(len(anchors))
    by_id = {p.poi.id: p for p in places}
    for i in order:
        if len(made) >= s.per_kind:
            break
        a = anchors[int(i)]
        ends = sorted((b for b in anchors if b is not a and normalise(b.label) != normalise(a.label)
                       and all(s.count_min_m <= math.dist(p, q) <= s.count_max_m
                               for p, q in product(a.at.positions, b.at.positions))),
                      key=lambda b: (math.dist(a.at.map_xy, b.at.map_xy), b.poi.id))
        for b in ends[:8]:
            task = _count_between(a, b, by_id, ctx)
            if task is not None:
                made.append(task)
                break
    return made


def _count_between(a: _Place, b: _Place, by_id: dict[str, _Place], ctx: _Context) -> Optional[dict[str, Any]]:
    s = ctx.settings
    inside: dict[str, list[MapPlace]] = {}
    for o in ctx.everything:
        along, off = corridor(a.at.map_xy, b.at.map_xy, o.map_xy)
        if o.id not in (a.poi.id, b.poi.id) and 0.0 <= along <= math.dist(a.at.map_xy, b.at.map_xy) \
                and off <= s.corridor_m:
            for word in o.nouns:
                inside.setdefault(word, []).append(o)
    for word in sorted(inside):
        if word in a.at.could_be or word in b.at.could_be:
            continue  # would "between" count the ends themselves?
        counted, unsure = [], False
        for o in ctx.everything:
            if o.id in (a.poi.id, b.poi.id) or word not in o.could_be:
                continue
            where = _corridor_place(a.at, b.at, o, s)
            if where == "out":
                continue
            if where != "in" or word not in o.nouns or o.id not in by_id:
                unsure = True  # near an edge, or not drawn with a board: the words do not settle it
                break
            counted.append(by_id[o.id])
        if unsure or not counted or not all(ctx.legible_nodes(p.poi) for p in counted):
            continue
        if not ctx.legible_nodes(a.poi) or not ctx.legible_nodes(b.poi):
            return None
        details: dict[str, Any] = {"kind": "counting", "target_poi": b.poi.id, "anchor_poi": a.poi.id,
                                   "end_poi": b.poi.id, "asked_kind": word, "corridor_m": s.corridor_m,
                                   "counted_pois": sorted(p.poi.id for p in counted)}
        answer = fact(ctx.scene, details)
        if answer[0] != str(len(counted)):
            ctx.dropped["counting: the scene's count differs from the map check"] += 1
            continue
        details.update({"answer": answer[0], "accepted": list(answer[1]), "relation": None})
        counted.sort(key=lambda p: corridor(a.at.map_xy, b.at.map_xy, p.at.map_xy)[0])
        must_see = [ctx.legible_nodes(a.poi)] + [ctx.legible_nodes(p.poi) for p in counted] + \
            [ctx.legible_nodes(b.poi)]
        text = (f"There is also {_a(b.word)} named \"{b.label}\" nearby. Please tell me how many "
                f"{plural(word)} there are between the {a.word} named \"{a.label}\" and the {b.word} named "
                f"\"{b.label}\", within {s.corridor_m:g} m of the straight line from one to the other?")
        parse = {"target_kind": word, "target_class": None, "target_name": None, "end": b.label,
                 "corridor_m": s.corridor_m}
        middle = ((a.latlon[0] + b.latlon[0]) / 2.0, (a.latlon[1] + b.latlon[1]) / 2.0)
        task = _task("counting", details, text, parse, a, middle, must_see, ctx, quoted=(b,))
        if task is not None:
            return task
    return None


def _corridor_place(a: MapPlace, b: MapPlace, o: MapPlace, s: QuestionSettings) -> str:
    """"in" when every pairing of positions puts `o` clearly inside the corridor, "out" when every
    one puts it clearly outside, else "edge"."""
    seen = set()
    for pa, pb in product(a.positions, b.positions):
        for p in o.positions:
            along, off = corridor(pa, pb, p)
            length = math.dist(pa, pb)
            if s.margin_m <= along <= length - s.margin_m and off <= s.corridor_m - s.margin_m:
                seen.add("in")
            elif along < -s.margin_m or along > length + s.margin_m or off > s.corridor_m + s.margin_m:
                seen.add("out")
            else:
                seen.add("edge")
    return seen.pop() if len(seen) == 1 else "edge"


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


def _unique_names(named: Sequence[_Place], everything: Sequence[MapPlace], radius_m: float) -> set[str]:
    """Ids of the named places whose name no other place within `radius_m` shares: any place of
    the scene or the map, signed or not (by either's positions)."""
    groups: dict[str, list[MapPlace]] = {}
    for p in everything:
        if p.label:
            groups.setdefault(p.label, []).append(p)
    out = set()
    for pl in named:
        key = normalise(pl.label)
        if key and not any(o.id != pl.poi.id and _apart(o, pl.at) <= radius_m for o in groups.get(key, ())):
            out.add(pl.poi.id)
    return out


def _apart(a: MapPlace, b: MapPlace) -> float:
    return min(math.dist(p, q) for p in a.positions for q in b.positions)


def _only_one_there(target: _Place, anchor: _Place, direction: str, ctx: _Context) -> bool:
    """No other place that could be called the target's kind stands on the stated side of the
    anchor within unique_radius_m (margins allowed, either position): "the car park west of the
    hotel" must be one car park, named or not, drawn or not."""
    return not any(o.id not in (target.poi.id, anchor.poi.id) and target.word in o.could_be
                   and _on_side(anchor.at, o, direction, ctx.settings.unique_radius_m, ctx.settings)
                   for o in ctx.everything)


def _start(target_latlon: tuple[float, float], anchor: _Place, must_see: list[tuple[str, ...]], ctx: _Context,
           quoted: Sequence[_Place] = ()) -> Optional[tuple[str, tuple[str, ...]]]:
    """A seeded start between min_start_m and max_start_m of the target (straight line), from which
    the anchor lies in one clear direction by the map and as built, and from which a walk seeing each
    board of `must_see` in turn fits the budget less the answer's step; and that walk: the
    reference path, ending where the last board is read."""
    s, graph, actions = ctx.settings, ctx.graph, ctx.actions
    ring = [n for n in graph.nodes_within(target_latlon[0], target_latlon[1], s.max_start_m)
            if geodesic_m(graph.nodes[n].lat, graph.nodes[n].lon, *target_latlon) >= s.min_start_m]
    ring.sort()
    limit = s.budget - 1
    for k in ctx.rng.permutation(len(ring))[:40]:
        start = ring[int(k)]
        here_xy = ctx.node_xy[start]
        seen = {cardinal(bearing_xy(here_xy, p)) for p in anchor.at.positions}
        if len(seen) > 1:
            continue  # the board as built and the map put the anchor on different sides of the start
        if any(_namesake_near(q, here_xy, ctx) for q in quoted):
            continue  # a reader looks for a quoted name around the start: another place bears it there
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


def _namesake_near(place: _Place, xy: XY, ctx: _Context) -> bool:
    """Another place (scene or raw map) with `place`'s name within name_radius_m of `xy`."""
    if ctx.by_label is None:
        ctx.by_label = {}
        for p in ctx.everything:
            if p.label:
                ctx.by_label.setdefault(p.label, []).append(p)
    return any(o.id != place.poi.id and min(math.dist(xy, q) for q in o.positions) <= ctx.settings.name_radius_m
               for o in ctx.by_label.get(normalise(place.label), ()))


def _node_path(actions: ActionModel, start: str, goal: str) -> list[str]:
    path, here = [start], start
    for index in actions.action_path(start, goal) or []:
        here = actions.next_node(here, index)
        path.append(here)
    return path


def _unit(seed: int, key: str) -> float:
    digest = hashlib.sha256(f"{seed}/{key}".encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2 ** 64


def _world_facts(tasks: list[dict[str, Any]], settings: QuestionSettings, sight: SignSight, ctx: _Context,
                 not_made: dict[str, str], raw_map: bool) -> dict[str, Any]:
    """What to state beside every result: how many questions of each kind, which kinds could not be
    made and why, what was dropped by the checks against the map, where the facts come from, how far
    the starts are (straight and walked), the budget, and the views legibility was checked in."""
    def spread(values: list[float]) -> dict[str, float]:
        if not values:
            return {}
        return {"min": round(min(values), 1), "median": round(statistics.median(values), 1),
                "max": round(max(values), 1)}

    made_by = Counter("renderer" if any(f["source"] != "map" for f in t["details"]["facts"]) else "map"
                      for t in tasks)
    return {
        "questions": len(tasks),
        "by_kind": {k: sum(t["details"]["kind"] == k for t in tasks) for k in KINDS},
        "kinds_not_made": not_made,
        "dropped": dict(sorted(ctx.dropped.items())),
        "existence_answers": {a: sum(t["details"]["kind"] == "existence" and t["details"]["answer"] == a
                                     for t in tasks) for a in YES_NO},
        "facts": {"map": made_by["map"], "renderer": made_by["renderer"]},
        "checked_against": "the scene's places and the raw extract's" if raw_map else "the scene's places",
        "start_distance_m": spread([t["details"]["start_distance_m"] for t in tasks]),
        "route_m": spread([t["details"]["route_m"] for t in tasks]),
        "reference_steps": spread([float(len(t["reference_path"]) - 1) for t in tasks]),
        "budget": settings.budget,
        "legibility": {**sight.describe(), "renderer_version": RENDERER_VERSION},
    }


def _why_kind_none(kind: str, places: Sequence[_Place], buildings: dict, ctx: _Context) -> str:
    """Why a world has no question of `kind`, in terms of what its data lacks."""
    named = [p for p in places if p.label]
    if not places:
        return "no signed place seen from a street node"
    if kind in ("name", "category", "existence", "counting") and not named:
        return "no named place to start the question from"
    if kind == "colour" and not any(b is not None and not b.inferred for b in
                                    (buildings.get(p.poi.building_id) for p in places)):
        return "no signed place on a mapped (not inferred) building"
    if kind == "floors" and not any(b is not None and not b.inferred and storeys_drawn(b) is not None
                                    for b in (buildings.get(p.poi.building_id) for p in places)):
        return "no signed place on a mapped building whose storeys are drawn as its levels"
    if kind == "existence":
        return ("no balanced pair: needs a place of a kind in a clear direction within "
                f"{ctx.settings.anchor_max_m:g} m of a uniquely named place AND a side of a named place with "
                f"nothing of a kind within {ctx.settings.exist_within_m:g} m, each legible and reachable")
    if kind == "counting":
        return (f"no two uniquely named places {ctx.settings.count_min_m:g}-{ctx.settings.count_max_m:g} m apart "
                f"with signed places of one kind clearly within {ctx.settings.corridor_m:g} m of the line "
                "between them (none near its edges), all legible and walkable within the budget")
    dropped = ", ".join(f"{why} ({n})" for why, n in ctx.dropped.most_common(3))
    return ("no target with a uniquely named place in a clear direction (map and board agreeing), legible "
            "and reachable from a start within 200 m" + (f"; checks that dropped candidates: {dropped}"
                                                          if dropped else ""))


def _why_none(places: Sequence[_Place], legible: dict[str, tuple[str, ...]]) -> str:
    if not places:
        return "the scene has no signed place seen from a street node, so no question can name or ask about one"
    read = sum(bool(v) for v in legible.values())
    if not read:
        return (f"none of the {len(places)} signed places has a board legible in the rendered views of the nodes "
                "it is seen from (boards too far, too oblique, or hidden)")
    return (f"{read} places have a legible board, but none has a uniquely named place within the anchor distance "
            "in a clear direction, or no start between the minimum and 200 m reaches its board within the budget")
