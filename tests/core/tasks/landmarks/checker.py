"""The independent checker of landmark goals: its own code, reading the raw OSM extract and the
built world's files (graph.json, scene.json, tasks.landmarks.json), never the generator.

What it holds true of every task, each a problem string when it is not:

- where: every landmark stands where the map puts it (the node, or the centroid of the area's
  outer ring) within POSITION_M, and its name is carried by no other map feature farther than
  SAME_PLACE_M away (else "north of X" names no one place);
- the words: the instruction parses wholly into "about D m WORD of NAME" phrases; each is true
  by the map (bearing within 22.5 degrees of the word, distance within half the step of D) and
  agrees with the structured details;
- PReP's description (section 3.1, Definition 2): the goal is related to every landmark the
  scene says it sees (from MIN_RELATION_M on) and to no other; every pair of landmarks once;
- pinned: the street nodes the goal's words fit (recomputed here over graph.json) lie within
  PIN_RADIUS_M of the goal, and are the ones the task records (up to nodes a hair from a
  boundary, where two positions of one landmark a centimetre apart may disagree).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import osmium
from pyproj import Geod

GEOD = Geod(ellps="WGS84")
WORDS = ("north", "north-east", "east", "south-east", "south", "south-west", "west", "north-west")
CENTRE = {w: 45.0 * k for k, w in enumerate(WORDS)}
HALF_SECTOR = 22.5
MIN_RELATION_M = 20.0
PIN_RADIUS_M = 50.0  # the rule as the project states it: checked here, not read from the world
POSITION_M = 1.0
SAME_PLACE_M = 150.0
BOUNDARY_DEG, BOUNDARY_M = 0.01, 0.01
PLACE_KEYS = ("building", "amenity", "man_made", "historic", "tourism", "railway", "leisure")


def step_for(metres: float) -> float:
    return 10.0 if metres < 100 else 50.0 if metres < 1000 else 100.0


def _ring_centroid(ring: list[tuple[float, float]]) -> tuple[float, float]:
    """Area centroid of a lat/lon ring, in a local equirectangular plane about its first point."""
    lat0, lon0 = ring[0]
    ky = 111_132.95 - 559.82 * math.cos(2 * math.radians(lat0))
    kx = 111_412.84 * math.cos(math.radians(lat0)) - 93.5 * math.cos(3 * math.radians(lat0))
    xy = np.array([((lon - lon0) * kx, (lat - lat0) * ky) for lat, lon in ring])
    if len(xy) < 3:
        return float(np.mean([p[0] for p in ring])), float(np.mean([p[1] for p in ring]))
    x, y = xy[:, 0], xy[:, 1]
    x1, y1 = np.roll(x, -1), np.roll(y, -1)
    cross = x * y1 - x1 * y
    area = cross.sum() / 2.0
    if abs(area) < 1e-9:
        cx, cy = x.mean(), y.mean()
    else:
        cx, cy = ((x + x1) * cross).sum() / (6 * area), ((y + y1) * cross).sum() / (6 * area)
    return lat0 + cy / ky, lon0 + cx / kx


class _Named(osmium.SimpleHandler):
    """Every named node and area of the extract: id -> (tags, (lat, lon))."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, tuple[dict[str, str], tuple[float, float]]] = {}

    def node(self, n: Any) -> None:
        if "name" in n.tags:
            self.found[f"node/{n.id}"] = ({t.k: t.v for t in n.tags}, (n.location.lat, n.location.lon))

    def area(self, a: Any) -> None:
        if "name" not in a.tags:
            return
        rings = [[(p.lat, p.lon) for p in ring] for ring in a.outer_rings()]
        if rings and rings[0]:
            kind = "way" if a.from_way() else "relation"
            self.found[f"{kind}/{a.orig_id()}"] = ({t.k: t.v for t in a.tags}, _ring_centroid(rings[0]))


def read_named(osm: Path) -> dict[str, tuple[dict[str, str], tuple[float, float]]]:
    handler = _Named()
    handler.apply_file(str(osm), locations=True)
    return handler.found


def truth(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """Bearing (degrees from north) and distance (m) from a to b, (lat, lon) each."""
    az, _, dist = GEOD.inv(a[1], a[0], b[1], b[0])
    return az % 360.0, dist


def word_off(bearing: float, word: str) -> float:
    return abs((bearing - CENTRE[word] + 180.0) % 360.0 - 180.0)


def fact_problems(where: tuple[float, float], subject: tuple[float, float], metres: int, word: str) -> list[str]:
    bearing, dist = truth(where, subject)
    out = []
    if word_off(bearing, word) > HALF_SECTOR:
        out.append(f"{word}: the map's bearing is {bearing:.1f}")
    if abs(dist - metres) > step_for(metres) / 2.0:
        out.append(f"{metres} m: the map's distance is {dist:.1f}")
    return out


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    tasks: int = 0
    facts: int = 0
    consistent: list[int] = field(default_factory=list)
    radius_m: list[float] = field(default_factory=list)
    landmarks_per_goal: list[int] = field(default_factory=list)


def _phrase(names: list[str]) -> re.Pattern[str]:
    words = "|".join(sorted(map(re.escape, WORDS), key=len, reverse=True))
    alts = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    return re.compile(rf"about (\d+) m ({words}) of ({alts})")


def check_world(folder: Path, osm: Path) -> Report:
    """Every problem of the world's landmark goals, by the map and the world's own files."""
    folder = Path(folder)
    report = Report()
    nodes = {n["id"]: (n["lat"], n["lon"]) for n in json.loads((folder / "graph.json").read_text())["nodes"]}
    scene = json.loads((folder / "scene.json").read_text())
    tasks_file = folder / "tasks.landmarks.json"  # absent on a world without landmark goals: landmarks still checked
    doc = json.loads(tasks_file.read_text()) if tasks_file.is_file() else {}
    named = read_named(osm)
    landmarks = {m["id"]: m for m in scene.get("landmarks", [])}
    by_name = {m["name"]: m for m in landmarks.values()}
    if len(by_name) != len(landmarks):
        report.problems.append("two landmarks of the scene share a name")
    at: dict[str, tuple[float, float]] = {}
    for lid, m in landmarks.items():
        if lid not in named:
            report.problems.append(f"landmark {lid} ({m['name']}): no named feature of that id in the map")
            continue
        tags, where = named[lid]
        at[m["name"]] = where
        if tags.get("name") != m["name"]:
            report.problems.append(f"landmark {lid}: named {m['name']!r}, the map says {tags.get('name')!r}")
        moved = truth(where, (m["lat"], m["lon"]))[1]
        if moved > POSITION_M:
            report.problems.append(f"landmark {m['name']}: {moved:.1f} m from where the map puts it")
        others = [truth(where, p)[1] for oid, (t, p) in named.items()
                  if oid != lid and t.get("name") == m["name"] and any(k in t for k in PLACE_KEYS)]
        far = [d for d in others if d > SAME_PLACE_M]
        if far:
            report.problems.append(f"landmark {m['name']}: the name is also carried by {len(far)} other map "
                                   f"feature(s) up to {max(far):.0f} m away; it names no one place")
    world = doc.get("world", {})
    stated_radius = world.get("goal_ambiguity", {}).get("pin_radius_m")
    if doc.get("tasks") and stated_radius != PIN_RADIUS_M:
        report.problems.append(f"the world states a pin radius of {stated_radius!r} m, the rule is {PIN_RADIUS_M:g}")
    phrase = _phrase(list(by_name))
    pairs_wanted = {frozenset((a, b)) for a in by_name for b in by_name if a < b
                    and a in at and b in at and truth(at[a], at[b])[1] >= MIN_RELATION_M}
    ids, latlon = list(nodes), np.array(list(nodes.values()))
    for task in doc.get("tasks", []):
        report.tasks += 1
        tid, goal_id = task["id"], task["target"]
        goal = nodes[goal_id]
        goal_text, _, pair_text = task["instruction"].partition(" Landmarks: ")
        goal_facts = [(int(d), w, n) for d, w, n in phrase.findall(goal_text)]
        if not re.fullmatch(r"The goal is X((, X)* and X)?\.", phrase.sub("X", goal_text)):
            report.problems.append(f"{tid}: the goal sentence holds words that are no relation: {goal_text!r}")
        details = [(r["distance_m"], r["direction"], r["landmark_name"]) for r in task["details"]["goal_relations"]]
        if details != goal_facts:
            report.problems.append(f"{tid}: the text says {goal_facts}, the details {details}")
        for metres, word, name in goal_facts:
            report.facts += 1
            report.problems += [f"{tid} goal vs {name}: {p}" for p in fact_problems(at[name], goal, metres, word)]
        # PReP's R1: every landmark seen from the goal, none other.
        seen = {m["name"] for m in landmarks.values() if goal_id in m.get("visible_nodes", ())
                and m["name"] in at and truth(at[m["name"]], goal)[1] >= MIN_RELATION_M}
        named_here = [n for _, _, n in goal_facts]
        if len(set(named_here)) != len(named_here):
            report.problems.append(f"{tid}: a landmark is named twice in the goal sentence")
        if set(named_here) - seen:
            report.problems.append(f"{tid}: names {sorted(set(named_here) - seen)}, not seen from the goal")
        if seen - set(named_here):
            report.problems.append(f"{tid}: leaves out {sorted(seen - set(named_here))}, seen from the goal")
        # PReP's R2: every pair of landmarks, once.
        pairs: list[frozenset[str]] = []
        for clause in pair_text.rstrip(".").split("; ") if pair_text else []:
            subject, _, rest = clause.partition(" is ")
            found = phrase.findall(rest)
            if subject not in at or len(found) != 1 or phrase.sub("X", rest) != "X":
                report.problems.append(f"{tid}: not a landmark relation: {clause!r}")
                continue
            ((metres, word, name),) = found
            report.facts += 1
            pairs.append(frozenset((subject, name)))
            report.problems += [f"{tid} {subject} vs {name}: {p}"
                                for p in fact_problems(at[name], at[subject], int(metres), word)]
        if len(set(pairs)) != len(pairs) or set(pairs) != pairs_wanted:
            missing = sorted(tuple(sorted(p)) for p in pairs_wanted - set(pairs))
            report.problems.append(f"{tid}: landmark pairs not related once each (missing {missing[:3]})")
        # Pinned: what the words fit, over every street node.
        ok = np.ones(len(ids), dtype=bool)
        edge = np.zeros(len(ids), dtype=bool)
        for metres, word, name in goal_facts:
            lat, lon = at[name]
            az, _, dist = GEOD.inv(np.full(len(ids), lon), np.full(len(ids), lat), latlon[:, 1], latlon[:, 0])
            off = np.abs((np.asarray(az) % 360.0 - CENTRE[word] + 180.0) % 360.0 - 180.0)
            slack = np.abs(np.asarray(dist) - metres) - step_for(metres) / 2.0
            ok &= (off <= HALF_SECTOR) & (slack <= 0)
            edge |= (np.abs(off - HALF_SECTOR) < BOUNDARY_DEG) | (np.abs(slack) < BOUNDARY_M)
        fit = [ids[i] for i in np.flatnonzero(ok)]
        far = [(n, truth(goal, nodes[n])[1]) for n in fit]
        radius = max((d for _, d in far), default=0.0)
        report.consistent.append(len(fit))
        report.radius_m.append(radius)
        report.landmarks_per_goal.append(len(goal_facts))
        if goal_id not in fit:
            report.problems.append(f"{tid}: the goal does not fit its own words")
        if radius > PIN_RADIUS_M:
            report.problems.append(f"{tid}: the words fit {len(fit)} street nodes up to {radius:.0f} m from the goal "
                                   f"(the rule: within {PIN_RADIUS_M:g} m)")
        recorded = set(task["details"].get("consistent_nodes", ()))
        differ = recorded ^ set(fit)
        if any(not edge[ids.index(n)] for n in differ if n in nodes) or not recorded <= set(nodes):
            report.problems.append(f"{tid}: records {len(recorded)} nodes fitting its words, the map gives {len(fit)}")
    return report
