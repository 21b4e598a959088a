"""An independent checker of question task files: it reads the raw OSM file (osmium, its own
reading), the world's scene.json (where boards were drawn) and the task file, parses each
question's own words, and says which facts are false and which answers are not unique. It shares
no code with the generator (not its answers, places, facts or legibility modules, not its ids):
places are found by the names the words quote, kinds by its own noun table, positions by its own
projection.

How it reads the words (the rules a reader would apply):
- "There is a K named "A" to the D of you": the only place named A within 300 m of the start
  (narrowed by D when two are); D must hold (within 45 degrees) by the map and as built.
- "To the D of it" with no distance: within 200 m (CityEQA's neighbourhood: the start lies within
  200 m of the target); a name question's kind must fit exactly one place there, named or not.
- "within R m to the D of it": yes iff something of the kind stands there, by the map and as built.
- "between A and B, within W m of the straight line": the places of the kind whose position falls
  between A and B and within W m of the line, by the map and as built.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import osmium

from cityseeker_ros.core.render.palette import GENERIC_WORDS

DIRS = {"north": 0.0, "east": 90.0, "south": 180.0, "west": 270.0}
SIDE_M = 200.0
NAME_M = 300.0
KEYS = ("amenity", "shop", "tourism", "leisure", "healthcare", "public_transport", "railway", "highway", "office",
        "craft", "historic")
# What people call places of these OSM values (this checker's own list).
NOUNS = {"parking": ("car park", "parking"), "books": ("bookshop", "bookstore"), "ice_cream": ("ice cream parlour",),
         "fast_food": ("fast-food restaurant", "fast food"), "bus_stop": ("bus stop",), "atm": ("cash machine",),
         "doctors": ("doctor's surgery", "doctor"), "convenience": ("convenience store",), "car": ("car dealer",),
         "clothes": ("clothes shop",), "shoes": ("shoe shop",), "jewelry": ("jeweller",),
         "chemist": ("pharmacy", "chemist"), "pharmacy": ("pharmacy", "chemist"), "subway_entrance": ("metro",),
         "artwork": ("artwork",), "hairdresser": ("hairdresser",)}


def metres_per_degree(lat: float) -> tuple[float, float]:
    """(metres per degree of latitude, of longitude) at `lat` on the WGS84 ellipsoid (the usual
    series): 110.6 km per degree of latitude at the equator, 111.4 km at 60 degrees north."""
    phi = math.radians(lat)
    return (111132.92 - 559.82 * math.cos(2 * phi) + 1.175 * math.cos(4 * phi),
            111412.84 * math.cos(phi) - 93.5 * math.cos(3 * phi))


@dataclass
class Obj:
    id: str
    tags: dict[str, str]
    lat: float
    lon: float

    @property
    def label(self) -> str:
        return (self.tags.get("name") or self.tags.get("name:en") or self.tags.get("brand") or "").strip()

    def words(self) -> set[str]:
        out = set()
        for k in KEYS:
            v = self.tags.get(k, "").strip().lower()
            if v in ("", "yes", "no"):
                continue
            plain = v.replace("_", " ")
            out |= {plain, f"{plain} shop", GENERIC_WORDS.get(v, plain).lower(), *NOUNS.get(v, ())}
        return out


def read_osm(path: Path) -> list[Obj]:
    """Every object with a kind tag: a node at its location, a way or multipolygon at the mean of its vertices."""
    found: dict[str, Obj] = {}
    for o in osmium.FileProcessor(str(path)).with_locations().with_areas():
        tags = dict(o.tags)
        if not any(tags.get(k, "no") not in ("", "yes", "no") for k in KEYS):
            continue
        if o.is_node() and o.location.valid():
            found[f"node/{o.id}"] = Obj(f"node/{o.id}", tags, o.location.lat, o.location.lon)
        elif o.is_way():
            pts = [(n.lat, n.lon) for n in o.nodes if n.location.valid()]
            if len(pts) > 1 and pts[0] == pts[-1]:
                pts = pts[:-1]
            if pts:
                found[f"way/{o.id}"] = Obj(f"way/{o.id}", tags, sum(p[0] for p in pts) / len(pts),
                                           sum(p[1] for p in pts) / len(pts))
        elif o.is_area() and not o.from_way():
            pts = [(n.lat, n.lon) for r in o.outer_rings() for n in r]
            if pts:
                found[f"relation/{o.orig_id()}"] = Obj(f"relation/{o.orig_id()}", tags,
                                                       sum(p[0] for p in pts) / len(pts),
                                                       sum(p[1] for p in pts) / len(pts))
    return list(found.values())


class Checker:
    def __init__(self, osm_file: Path, folder_or_docs: Any, tasks_doc: Optional[dict] = None,
                 require_facts: bool = True) -> None:
        """`require_facts`: a question must record where its facts come from (False: a task file
        written before they were recorded is checked for its facts alone)."""
        self.require_facts = require_facts
        if isinstance(folder_or_docs, (str, Path)):  # a world folder (its task file unless one is given)
            folder = Path(folder_or_docs)
            scene = json.loads((folder / "scene.json").read_text())
            graph = json.loads((folder / "graph.json").read_text())
            if tasks_doc is None:
                tasks_doc = json.loads((folder / "tasks.questions.json").read_text())
        else:  # (scene.json's document, graph.json's document) and the task document
            scene, graph = folder_or_docs
        self.objs = read_osm(osm_file)
        self.nodes = {n["id"]: (n["lat"], n["lon"]) for n in graph["nodes"]}
        self.origin = (scene["origin"]["lat"], scene["origin"]["lon"])
        self.signs = {p["id"]: self._unproject(p["anchor"]) for p in scene["pois"]}
        self.buildings = {b["id"]: b for b in scene["buildings"]}
        self.tasks = tasks_doc["tasks"]

    def _unproject(self, xy: list[float]) -> tuple[float, float]:
        lat0, lon0 = self.origin
        m_lat, m_lon = metres_per_degree(lat0)
        return lat0 + xy[1] / m_lat, lon0 + xy[0] / m_lon

    # -- geometry (own projection, around the first point) --------------------------------------------

    @staticmethod
    def xy(origin: tuple[float, float], p: tuple[float, float]) -> tuple[float, float]:
        m_lat, m_lon = metres_per_degree(origin[0])
        return (p[1] - origin[1]) * m_lon, (p[0] - origin[0]) * m_lat

    def bearing_dist(self, a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
        x, y = self.xy(a, b)
        return math.degrees(math.atan2(x, y)) % 360.0, math.hypot(x, y)

    def positions(self, o: Obj) -> list[tuple[float, float]]:
        """The map's position, and the board's as built when the world draws it."""
        return [(o.lat, o.lon)] + ([self.signs[o.id]] if o.id in self.signs else [])

    def off(self, a: tuple[float, float], b: tuple[float, float], direction: str) -> tuple[float, float]:
        bearing, d = self.bearing_dist(a, b)
        return abs((bearing - DIRS[direction] + 180.0) % 360.0 - 180.0), d

    def on_side(self, anchor: Obj, o: Obj, direction: str, radius: float, every: bool) -> bool:
        """`o` within `radius` on `direction`'s side of `anchor`: at every pairing of positions
        (`every`), or at any."""
        fits = [off <= 45.0 and d <= radius for a in self.positions(anchor) for p in self.positions(o)
                for off, d in (self.off(a, p, direction),)]
        return all(fits) if every else any(fits)

    # -- reading the words -----------------------------------------------------------------------------

    def named(self, label: str, start: tuple[float, float], direction: Optional[str], noun: str = "") -> Obj:
        """The one place the words "a <noun> named <label>" (seen to the <direction>) can mean."""
        near = [o for o in self.objs if o.label == label and self.bearing_dist(start, (o.lat, o.lon))[1] <= NAME_M]
        if len(near) > 1 and noun:  # a street named like the bus stop on it is not "a bus stop named ..."
            near = [o for o in near if noun in o.words()]
        if len(near) > 1 and direction:
            near = [o for o in near if self.off(start, (o.lat, o.lon), direction)[0] <= 45.0]
        if len(near) != 1:
            raise Problem("non-unique", f"{label!r} names {len(near)} places near the start")
        return near[0]

    def check(self) -> list[tuple[str, str, str]]:
        """(task id, "false" or "non-unique", what) for every problem found."""
        problems = []
        for t in self.tasks:
            try:
                self.check_task(t)
            except Problem as p:
                problems.append((t["id"], p.what, p.why))
        return problems

    def check_task(self, t: dict[str, Any]) -> None:
        text, d = t["instruction"], t["details"]
        stated = d["answer"]
        start = self.nodes[t["start"]]
        m = re.match(r'There is an? ([\w\' -]+?) named "([^"]+)" to the (\w+) of you\. (.*)$', text)
        if m is None:
            raise Problem("false", f"unreadable question: {text}")
        anchor = self.named(m.group(2), start, m.group(3), m.group(1))
        for p in self.positions(anchor):
            if self.off(start, p, m.group(3))[0] > 45.0:
                raise Problem("false", f"{anchor.label!r} is not {m.group(3)} of the start")
        rest = m.group(4)
        renderer = {"colour", "floors"}
        made = {f["source"] for f in d.get("facts", [])}
        says_renderer = bool(re.search(r"what colour|how many floors", rest))
        if self.require_facts and (not made or ("renderer" in made) != says_renderer):
            raise Problem("false", f"facts record {sorted(made)} does not say which facts the renderer made")
        if q := re.match(r"To the (\w+) of it, there is an? ([\w' -]+)\. Please tell me what is the name", rest):
            direction, noun = q.groups()
            fits = [o for o in self.objs if o is not anchor and noun in o.words()
                    and self.on_side(anchor, o, direction, SIDE_M, every=False)]
            if len(fits) != 1:
                raise Problem("non-unique", f"{len(fits)} places could be the {noun} {direction} of {anchor.label!r}: "
                              f"{[o.label or o.id for o in fits]}")
            if fits[0].label != stated:
                raise Problem("false", f"the {noun} is {fits[0].label!r}, not {stated!r}")
            return
        if q := re.match(r'Nearby, there is an? ([\w\' -]+?) named "([^"]+)"\. Please tell me in which direction',
                         rest):
            target = self.named(q.group(2), start, None, q.group(1))
            for a in self.positions(anchor):
                for p in self.positions(target):
                    if self.off(a, p, stated)[0] > 45.0:
                        raise Problem("false", f"{target.label!r} is not {stated} of {anchor.label!r} "
                                      f"({self.bearing_dist(a, p)[0]:.0f} deg)")
            return
        if q := re.match(r"Please tell me whether there is an? ([\w' -]+) within ([\d.]+) m to the (\w+) of it", rest):
            noun, radius, direction = q.group(1), float(q.group(2)), q.group(3)
            kin = [o for o in self.objs if o is not anchor and noun in o.words()]
            if stated == "yes" and not any(self.on_side(anchor, o, direction, radius, every=True) for o in kin):
                raise Problem("false", f"no {noun} within {radius:g} m {direction} of {anchor.label!r}")
            if stated == "no" and any(self.on_side(anchor, o, direction, radius, every=False) for o in kin):
                raise Problem("false", f"there is a {noun} within {radius:g} m {direction} of {anchor.label!r}")
            return
        if q := re.match(r'There is also an? ([\w\' -]+?) named "([^"]+)" nearby\. Please tell me how many '
                         r'([\w\' -]+?) there are between .* within ([\d.]+) m of the straight line', rest):
            end = self.named(q.group(2), start, None, q.group(1))
            plural, width = q.group(3), float(q.group(4))
            kin = [o for o in self.objs if o not in (anchor, end) and any(_plural(w) == plural for w in o.words())]
            def built(o: Obj) -> tuple[float, float]:
                return self.positions(o)[-1]

            by_map = sum(self.between((anchor.lat, anchor.lon), (end.lat, end.lon), (o.lat, o.lon), width) for o in kin)
            as_built = sum(self.between(built(anchor), built(end), built(o), width) for o in kin)
            if str(by_map) != stated or str(as_built) != stated:
                raise Problem("false", f"{by_map} {plural} between {anchor.label!r} and {end.label!r} by the map "
                              f"({as_built} as built), not {stated}")
            return
        q = re.match(r'To the (\w+) of it, there is a place with a sign reading "([^"]+)"\. Please tell me (.*)', rest)
        if q is None:
            raise Problem("false", f"unreadable question: {text}")
        direction, label, ask = q.groups()
        target = self.named(label, start, None)
        for a in self.positions(anchor):
            for p in self.positions(target):
                if self.off(a, p, direction)[0] > 45.0:
                    raise Problem("false", f"{label!r} is not {direction} of {anchor.label!r}")
        if ask.startswith("what kind of place"):
            if stated not in target.words():
                raise Problem("false", f"{label!r} is not a {stated} by its tags")
            return
        if ask.startswith("how many floors") or ask.startswith("what colour"):
            assert renderer  # the renderer's facts: checked against what it draws, by test_checker
            return
        raise Problem("false", f"unreadable question: {text}")

    def between(self, a: tuple[float, float], b: tuple[float, float], p: tuple[float, float], width: float) -> bool:
        bx, by = self.xy(a, b)
        px, py = self.xy(a, p)
        length = math.hypot(bx, by)
        along = (px * bx + py * by) / length
        return 0.0 <= along <= length and abs(px * by - py * bx) / length <= width


class Problem(Exception):
    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")
        self.what, self.why = what, why


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"
