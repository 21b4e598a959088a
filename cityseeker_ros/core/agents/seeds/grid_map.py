"""CityEQA's object-centric cognitive map: a square 2D grid centred on the agent's start (400 m
at 1 m by default) that records which cells each landmark object covers, merges what is seen of
one object at different steps into one entry, and answers the questions the PMA Manager asks of
it: which object of a class lies north, east, south or west of a landmark, and where to go to
reach or search that side.

Coordinates are metres east (x) and north (y) of the start. An object's id is `id_prefix`, its
class and a running number ("building_1"; PMA's map uses the prefix "map_" so that its ids never
name what the planner's "building_1" names in the same prompt). The Navigator's path is A* over
the cells (`path`), the paper's Section 4.3. Cells are (column, row)
indices, column 0 at the west edge and row 0 at the south edge.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional

from cityseeker_ros.core.tasks.landmarks.relations import polar_xy
from cityseeker_ros.core.tasks.questions.answers import bearing_xy, cardinal

CARDINALS: tuple[str, ...] = ("north", "east", "south", "west")  # the paper's four relations
_UNIT: dict[str, tuple[int, int]] = {"north": (0, 1), "east": (1, 0), "south": (0, -1), "west": (-1, 0)}
Cell = tuple[int, int]
Point = tuple[float, float]


def relation_word(direction: str) -> str:
    """"north" -> "north of"; an unknown direction fails naming the four."""
    if direction not in _UNIT:
        raise ValueError(f"unknown direction {direction!r}; one of {', '.join(CARDINALS)}")
    return f"{direction} of"


def direction_of(text: str) -> Optional[str]:
    """The cardinal word in `text` ("north of", "to the West", "N"), or None."""
    s = text.strip().lower()
    for d in CARDINALS:
        if s == d[0] or d in s:
            return d
    return None


def labels_match(a: str, b: str) -> bool:
    """Two names for one place: equal or one inside the other, ignoring case and quotes."""
    x, y = (s.strip().strip("\"'").casefold() for s in (a, b))
    return bool(x and y) and (x in y or y in x)


@dataclass(frozen=True)
class MapObject:
    id: str
    cls: str
    cells: frozenset[Cell]
    resolution_m: float
    half_m: float
    label: str = ""  # a name read on it, if any
    seen: int = 1  # how many sightings were merged into it

    def cell_centre(self, cell: Cell) -> Point:
        return (-self.half_m + (cell[0] + 0.5) * self.resolution_m, -self.half_m + (cell[1] + 0.5) * self.resolution_m)

    @property
    def centre(self) -> Point:
        """The mean of its cells' centres, in metres east and north of the start."""
        xs, ys = zip(*(self.cell_centre(c) for c in self.cells))
        return sum(xs) / len(xs), sum(ys) / len(ys)

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """(west, south, east, north) edges of the cells it covers, in metres."""
        cols = [c[0] for c in self.cells]
        rows = [c[1] for c in self.cells]
        r, h = self.resolution_m, self.half_m
        return -h + min(cols) * r, -h + min(rows) * r, -h + (max(cols) + 1) * r, -h + (max(rows) + 1) * r

    def describe(self) -> str:
        x, y = self.centre
        w, s, e, n = self.extent
        name = f' "{self.label}"' if self.label else ""
        return f"{self.id}{name}: centre {_metres(x, 'east', 'west')}, {_metres(y, 'north', 'south')}; " \
               f"{e - w:.0f} x {n - s:.0f} m"


def _metres(v: float, positive: str, negative: str) -> str:
    return f"{abs(v):.0f} m {positive if v >= 0 else negative}"


def _adjacent(a: frozenset[Cell], b: frozenset[Cell]) -> bool:
    """Whether two objects share a cell or have a pair of cells touching (8-neighbourhood),
    the paper's test for one object seen twice."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return any((i + di, j + dj) in large for i, j in small for di in (-1, 0, 1) for dj in (-1, 0, 1))


class GridMap:
    """The map: objects keyed by id; `add` is the paper's Construct (one sighting's cells) and
    Merge (joined with every same-class object it overlaps or touches, in rounds until none)."""

    def __init__(self, size_m: float = 400.0, resolution_m: float = 1.0, id_prefix: str = "") -> None:
        if not (resolution_m > 0 and size_m >= resolution_m):
            raise ValueError(f"grid map: need 0 < resolution_m <= size_m, got {resolution_m} and {size_m}")
        self.size_m, self.resolution_m = float(size_m), float(resolution_m)
        self.cells_per_side = int(round(size_m / resolution_m))
        self.half_m = self.cells_per_side * self.resolution_m / 2.0
        self.id_prefix = id_prefix
        self._objects: dict[str, MapObject] = {}
        self._counts: dict[str, int] = {}

    # --- cells ---------------------------------------------------------------------------------

    def cell_of(self, x: float, y: float) -> Optional[Cell]:
        """The cell holding (x, y), or None outside the map."""
        i = math.floor((x + self.half_m) / self.resolution_m)
        j = math.floor((y + self.half_m) / self.resolution_m)
        return (i, j) if 0 <= i < self.cells_per_side and 0 <= j < self.cells_per_side else None

    def inside(self, x: float, y: float) -> bool:
        return self.cell_of(x, y) is not None

    def footprint(self, x: float, y: float, extent_m: float) -> frozenset[Cell]:
        """The cells of a square of side `extent_m` centred on (x, y): those whose centres lie in
        it, and always the cell holding (x, y); cut to the map."""
        r, h, half = self.resolution_m, self.half_m, max(float(extent_m), 0.0) / 2.0
        lo_i, hi_i = math.ceil((x - half + h) / r - 0.5), math.floor((x + half + h) / r - 0.5)
        lo_j, hi_j = math.ceil((y - half + h) / r - 0.5), math.floor((y + half + h) / r - 0.5)
        n = self.cells_per_side
        cells = {(i, j) for i in range(max(lo_i, 0), min(hi_i, n - 1) + 1)
                 for j in range(max(lo_j, 0), min(hi_j, n - 1) + 1)}
        own = self.cell_of(x, y)
        if own is not None:
            cells.add(own)
        return frozenset(cells)

    # --- objects -------------------------------------------------------------------------------

    def add(self, cls: str, x: float, y: float, extent_m: float = 1.0, label: str = "") -> Optional[MapObject]:
        """One sighting of an object of class `cls` centred at (x, y): merged into the objects it
        overlaps or touches (same class, and names that do not differ), else a new object.
        Returns the object it became part of; None when it lies wholly outside the map."""
        cells = self.footprint(x, y, extent_m)
        if not cells:
            return None
        cls = cls.strip().lower() or "object"
        merged = MapObject("", cls, cells, self.resolution_m, self.half_m, label.strip())
        absorbed: list[MapObject] = []
        changed = True
        while changed:  # a merge can make the object touch another: judge again against all
            changed = False
            for obj in self.objects():  # in id order, so the same sightings give the same map
                if obj in absorbed or obj.cls != cls:
                    continue
                if merged.label and obj.label and not labels_match(merged.label, obj.label):
                    continue
                if _adjacent(merged.cells, obj.cells):
                    absorbed.append(obj)
                    merged = MapObject("", cls, merged.cells | obj.cells, self.resolution_m, self.half_m,
                                       obj.label or merged.label, merged.seen + obj.seen)
                    changed = True
        for obj in absorbed:
            del self._objects[obj.id]
        oid = min((o.id for o in absorbed), key=_id_order) if absorbed else self._new_id(cls)
        result = MapObject(oid, cls, merged.cells, self.resolution_m, self.half_m, merged.label, merged.seen)
        self._objects[oid] = result
        return result

    def add_seen(self, cls: str, at: Point, bearing_deg: float, distance_m: float, extent_m: float = 1.0,
                 label: str = "") -> Optional[MapObject]:
        """An object seen from `at` along `bearing_deg` (clockwise from north) at `distance_m`."""
        dx, dy = polar_xy(bearing_deg, distance_m)
        return self.add(cls, at[0] + dx, at[1] + dy, extent_m, label)

    def _new_id(self, cls: str) -> str:
        self._counts[cls] = self._counts.get(cls, 0) + 1
        return f"{self.id_prefix}{cls.replace(' ', '_')}_{self._counts[cls]}"

    def get(self, oid: str) -> Optional[MapObject]:
        return self._objects.get(oid)

    def objects(self, cls: Optional[str] = None) -> list[MapObject]:
        """Every object (of `cls` when given), in the order of their ids."""
        found = [o for o in self._objects.values() if cls is None or o.cls == cls.strip().lower()]
        return sorted(found, key=lambda o: _id_order(o.id))

    def __len__(self) -> int:
        return len(self._objects)

    # --- relations and retrieval ---------------------------------------------------------------

    @staticmethod
    def relation(a: MapObject, b: MapObject) -> str:
        """Where `a` lies seen from `b`, centre to centre: "north", "east", "south" or "west"."""
        return cardinal(bearing_xy(b.centre, a.centre))

    def named(self, label: str, cls: Optional[str] = None) -> Optional[MapObject]:
        """The first object whose name matches `label` (of `cls` when given)."""
        return next((o for o in self.objects(cls) if o.label and labels_match(o.label, label)), None)

    def find(self, cls: str, direction: str, landmark: MapObject, label: str = "") -> Optional[MapObject]:
        """The Manager's retrieval: the object of class `cls` that lies `direction` of `landmark`
        (and is named `label`, when given), nearest the landmark; None when the map holds none."""
        relation_word(direction)
        lx, ly = landmark.centre
        found = [o for o in self.objects(cls) if o.id != landmark.id and self.relation(o, landmark) == direction
                 and (not label or (o.label and labels_match(o.label, label)))]
        return min(found, key=lambda o: (math.hypot(o.centre[0] - lx, o.centre[1] - ly), _id_order(o.id)),
                   default=None)

    def navigation_point(self, landmark: MapObject, direction: str, offset_m: float = 10.0) -> Point:
        """The Navigator's goal for Navigation(landmark, direction): `offset_m` beyond the side of
        the landmark's extent that faces `direction`, on the landmark's centre line."""
        relation_word(direction)
        ux, uy = _UNIT[direction]
        cx, cy = landmark.centre
        w, s, e, n = landmark.extent
        edge = {"north": (cx, n), "south": (cx, s), "east": (e, cy), "west": (w, cy)}[direction]
        return edge[0] + ux * offset_m, edge[1] + uy * offset_m

    def exploration_points(self, landmark: MapObject, direction: str, spacing_m: float = 10.0,
                           depth_m: float = 50.0, near: Point = (0.0, 0.0)) -> list[Point]:
        """The Explorer's points for Exploration(landmark, direction, target): a lattice `spacing_m`
        apart over the band `depth_m` deep on that side of the landmark and as wide as it, inside
        the map, nearest `near` first."""
        relation_word(direction)
        ux, uy = _UNIT[direction]
        cx, cy = landmark.centre
        w, s, e, n = landmark.extent
        across = (e - w) / 2.0 if uy else (n - s) / 2.0  # half the landmark's width across the direction
        start = {"north": n, "south": s, "east": e, "west": w}[direction]
        points = []
        for b in range(1, int(depth_m // spacing_m) + 1):
            for a in range(-int(across // spacing_m), int(across // spacing_m) + 1):
                if uy:
                    p = (cx + a * spacing_m, start + uy * b * spacing_m)
                else:
                    p = (start + ux * b * spacing_m, cy + a * spacing_m)
                if self.inside(*p):
                    points.append(p)
        return sorted(points, key=lambda p: (math.hypot(p[0] - near[0], p[1] - near[1]), p))

    # --- paths --------------------------------------------------------------------------------

    def path(self, start: Point, goal: Point, avoid: Iterable[Cell] = (), avoid_cost: float = 5.0,
             max_expanded: int = 200_000) -> Optional[list[Point]]:
        """A* from `start` to `goal` over the map's cells (8 neighbours), as cell centres from
        start to goal. The map knows no streets, so nothing blocks: cells that objects cover and
        the `avoid` cells (where the agent has been) cost `avoid_cost` times as much, so the path
        goes round them where a way round exists. None when either end lies outside the map or
        the search gives up after `max_expanded` cells."""
        a, b = self.cell_of(*start), self.cell_of(*goal)
        if a is None or b is None:
            return None
        costly = {c for o in self._objects.values() if o.cls != "agent" for c in o.cells} | set(avoid)
        costly.discard(a)
        costly.discard(b)
        n = self.cells_per_side

        def h(c: Cell) -> float:
            dx, dy = abs(c[0] - b[0]), abs(c[1] - b[1])
            return max(dx, dy) + (math.sqrt(2) - 1) * min(dx, dy)

        best: dict[Cell, float] = {a: 0.0}
        parent: dict[Cell, Cell] = {}
        frontier = [(h(a), 0.0, a)]
        expanded = 0
        while frontier:
            _, g, c = heapq.heappop(frontier)
            if c == b:
                cells = [c]
                while c in parent:
                    c = parent[c]
                    cells.append(c)
                return [self._centre(x) for x in reversed(cells)]
            if g > best.get(c, math.inf):
                continue
            expanded += 1
            if expanded > max_expanded:
                return None
            for di in (-1, 0, 1):
                for dj in (-1, 0, 1):
                    nxt = (c[0] + di, c[1] + dj)
                    if (di or dj) and 0 <= nxt[0] < n and 0 <= nxt[1] < n:
                        step = (math.sqrt(2) if di and dj else 1.0) * (avoid_cost if nxt in costly else 1.0)
                        if g + step < best.get(nxt, math.inf):
                            best[nxt], parent[nxt] = g + step, c
                            heapq.heappush(frontier, (g + step + h(nxt), g + step, nxt))
        return None

    def cells_near(self, point: Point, radius_m: float) -> set[Cell]:
        """The cells whose centres lie within `radius_m` of `point`, inside the map."""
        r = max(int(math.ceil(radius_m / self.resolution_m)), 0)
        centre = self.cell_of(*point)
        if centre is None:
            return set()
        n = self.cells_per_side
        return {(centre[0] + i, centre[1] + j) for i in range(-r, r + 1) for j in range(-r, r + 1)
                if 0 <= centre[0] + i < n and 0 <= centre[1] + j < n
                and math.hypot(i, j) * self.resolution_m <= radius_m}

    def _centre(self, cell: Cell) -> Point:
        return (-self.half_m + (cell[0] + 0.5) * self.resolution_m, -self.half_m + (cell[1] + 0.5) * self.resolution_m)

    # --- output ----------------------------------------------------------------------------------

    def to_text(self, limit: int = 30) -> str:
        """The map as prompt lines, one per object (at most `limit`, the most seen first)."""
        shown = sorted(self.objects(), key=lambda o: -o.seen)[:limit]
        return "\n".join(o.describe() for o in sorted(shown, key=lambda o: _id_order(o.id))) or "(empty)"

    def to_dict(self) -> dict[str, Any]:
        """For records: each object's id, class, name, centre, extent and sightings (rounded)."""
        return {"size_m": self.size_m, "resolution_m": self.resolution_m,
                "objects": [{"id": o.id, "class": o.cls, "label": o.label, "seen": o.seen,
                             "centre": [round(v, 1) for v in o.centre],
                             "extent": [round(v, 1) for v in o.extent]} for o in self.objects()]}


def _id_order(oid: str) -> tuple[str, int]:
    stem, _, number = oid.rpartition("_")
    return (stem, int(number)) if number.isdigit() else (oid, 0)
