"""Loader for the CitySeeker release format: one folder per city with connections.json
(directed edges, no coordinates) and question.json (episodes with ground-truth routes).

Node coordinates exist only on route nodes; the rest are recovered by walking edges
(bearing plus length) out from them. Lengths in the files are Web-Mercator units.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cityseeker_ros.core.datasets.problems import Problems
from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.infra.files import sha256_file
from cityseeker_ros.core.infra.jsonfile import read_json_file
from cityseeker_ros.core.streets.geodesy import destination, geodesic_m, mercator_units_to_metres, normalize_heading
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph, same_edge
from cityseeker_ros.core.tasks.episode import CATEGORY_NAMES, DIFFICULTIES, Episode, World

CONNECTIONS = "connections.json"
QUESTIONS = "question.json"
EDGE_FIELDS = ("start_filename", "start_heading", "start_walkable_headings", "end_filename",
               "end_heading", "end_walkable_headings", "edge_azimuth", "edge_distance")
EPISODE_FIELDS = ("folder", "question", "question_idx", "from", "to", "complete_route",
                  "difficulty", "category")
# Route coordinates that disagree by more than this are reported (they should be identical).
COORD_CONFLICT_M = 1.0
_MISSING = object()


def is_city_folder(path: Path) -> bool:
    return (path / CONNECTIONS).is_file() and (path / QUESTIONS).is_file()


def node_id(filename: str) -> str:
    """Panorama file name -> node id ('00003406.jpg' -> '00003406')."""
    return filename[:-4] if filename.lower().endswith(".jpg") else filename


def read_json_list(path: Path, problems: Problems) -> list[Any]:
    try:
        data = read_json_file(path)
    except DataError as exc:
        problems.error(exc.file, exc.detail)
        return []
    if not isinstance(data, list):
        problems.error(path, f"expected a JSON array of records, got {type(data).__name__}")
        return []
    return data


class _Record:
    """Typed field access that reports the file, record index and field on failure."""

    def __init__(self, path: Path, index: int, raw: Any, problems: Problems) -> None:
        self.path, self.index, self.raw, self.problems = path, index, raw, problems
        self.ok = isinstance(raw, dict)
        if not self.ok:
            problems.error(path, f"expected an object, got {type(raw).__name__}", index)

    def _fail(self, field: str, message: str) -> None:
        self.ok = False
        self.problems.error(self.path, message, self.index, field)

    def get(self, field: str, container: dict | None = None, within: str = "") -> Any:
        """`within` names the nested object holding `field`, e.g. 'stage1_route'."""
        src = self.raw if container is None else container
        if not isinstance(src, dict) or field not in src:
            self._fail(f"{within}{field}", "missing")
            return _MISSING
        return src[field]

    def number(self, field: str, container: dict | None = None, within: str = "") -> float:
        v = self.get(field, container, within)
        if v is _MISSING:
            return math.nan
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            self._fail(f"{within}{field}", f"expected a finite number, got {v!r}")
            return math.nan
        return float(v)

    def string(self, field: str, container: dict | None = None, within: str = "") -> str:
        v = self.get(field, container, within)
        if v is _MISSING:
            return ""
        if not isinstance(v, str) or not v:
            self._fail(f"{within}{field}", f"expected a non-empty string, got {v!r}")
            return ""
        return v

    def numbers(self, field: str) -> tuple[float, ...]:
        v = self.get(field)
        if v is _MISSING:
            return ()
        if not isinstance(v, list) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
            self._fail(field, f"expected a list of finite numbers, got {v!r}")
            return ()
        return tuple(float(x) for x in v)

    def route(self, field: str, container: dict | None = None, within: str = "") -> list[tuple[str, float, float]]:
        v = self.get(field, container, within)
        if v is _MISSING:
            return []
        if not isinstance(v, list) or not v:
            self._fail(f"{within}{field}", "expected a non-empty list of route points")
            return []
        out = []
        for i, point in enumerate(v):
            name = f"{within}{field}[{i}]"
            if not isinstance(point, dict):
                self._fail(name, "expected an object with filename, latitude, longitude")
                return []
            fn = self.string("filename", point, f"{name}.")
            lat = self.number("latitude", point, f"{name}.")
            lon = self.number("longitude", point, f"{name}.")
            if not self.ok:
                return []
            if not (-90 <= lat <= 90 and -180 <= lon <= 180):
                self._fail(f"{name}.latitude", f"coordinates out of range ({lat}, {lon})")
                return []
            out.append((node_id(fn), lat, lon))
        return out


def _records(path: Path, required: tuple[str, ...], problems: Problems) -> Iterator[_Record]:
    """The file's records that are objects holding every required field."""
    for i, raw in enumerate(read_json_list(path, problems)):
        rec = _Record(path, i, raw, problems)
        for f in required if rec.ok else ():
            rec.get(f)
        if rec.ok:
            yield rec


def _parse_edges(path: Path, problems: Problems):
    nodes: dict[str, tuple[float, tuple[float, ...]]] = {}
    raw_edges: list[tuple[str, str, float, float]] = []
    seen: dict[tuple[str, str], tuple[int, float, float]] = {}  # edge -> its first record, azimuth, length
    inconsistent = repeated = 0
    for rec in _records(path, EDGE_FIELDS, problems):
        i = rec.index
        ends = []
        for side in ("start", "end"):
            nid = node_id(rec.string(f"{side}_filename"))
            heading = rec.number(f"{side}_heading")
            walkable = rec.numbers(f"{side}_walkable_headings")
            ends.append((nid, (normalize_heading(heading) if rec.ok else 0.0,
                               tuple(normalize_heading(h) for h in walkable))))
        azimuth = rec.number("edge_azimuth")
        dist = rec.number("edge_distance")
        if rec.ok and dist < 0:
            rec._fail("edge_distance", f"expected a length >= 0, got {dist}")
        if not rec.ok:
            continue
        if ends[0][0] == ends[1][0]:
            problems.warning(f"{path}: record {i}: self-loop at node {ends[0][0]} ignored")
            continue
        a, b, azimuth = ends[0][0], ends[1][0], normalize_heading(azimuth)
        if (a, b) in seen:
            j, az0, dist0 = seen[a, b]
            if same_edge(az0, dist0, azimuth, dist):
                repeated += 1
            else:
                field = "edge_distance" if same_edge(az0, 0.0, azimuth, 0.0) else "edge_azimuth"
                rec._fail(field, f"edge {a} -> {b} again, with azimuth {azimuth} and distance {dist}; "
                                 f"record {j} gives azimuth {az0} and distance {dist0}")
            continue
        for nid, attrs in ends:
            if nid in nodes and nodes[nid] != attrs:
                inconsistent += 1
            nodes.setdefault(nid, attrs)
        seen[a, b] = (i, azimuth, dist)
        raw_edges.append((a, b, azimuth, dist))
    if inconsistent:
        problems.warning(f"{path}: {inconsistent} edge records give a node different headings "
                         "than an earlier record; the first is used")
    if repeated:
        problems.warning(f"{path}: {repeated} edge records repeat an earlier edge exactly; they are dropped")
    return nodes, raw_edges


def _recover_coordinates(known: dict[str, tuple[float, float]],
                         raw_edges: list[tuple[str, str, float, float]]) -> dict[str, tuple[float, float]]:
    """Breadth-first from every node with known coordinates, so each recovered node is
    placed through the fewest hops (errors accumulate per hop)."""
    adj: dict[str, list[tuple[str, float, float]]] = {}
    for a, b, az, dist in raw_edges:
        adj.setdefault(a, []).append((b, az, dist))
        adj.setdefault(b, []).append((a, (az + 180.0) % 360.0, dist))
    coords = dict(known)
    queue = deque(sorted(known))
    while queue:
        v = queue.popleft()
        lat, lon = coords[v]
        for w, az, units in adj.get(v, ()):
            if w not in coords:
                coords[w] = destination(lat, lon, az, mercator_units_to_metres(units, lat))
                queue.append(w)
    return coords


def episode_city(raw: dict[str, Any], city_hint: str) -> str:
    """A record's city as it appears in episode ids: its `city` field (else the folder name),
    lower case without spaces."""
    return str(raw.get("city") or city_hint).strip().lower().replace(" ", "")


def _parse_episodes(path: Path, city_hint: str, node_ids: set[str], problems: Problems):
    episodes: list[tuple[int, dict]] = []
    route_coords: dict[str, tuple[float, float]] = {}
    conflicts = 0
    first_city: tuple[str, int] | None = None  # the folder's city and the record it came from
    seen_ids: dict[str, tuple[int, Any]] = {}  # episode id -> (record, question_idx) that made it
    for rec in _records(path, EPISODE_FIELDS, problems):
        i, raw = rec.index, rec.raw
        qidx = rec.get("question_idx")
        if isinstance(qidx, bool) or not isinstance(qidx, (int, str)):
            rec._fail("question_idx", f"expected an integer or string id, got {qidx!r}")
            continue
        city = episode_city(raw, city_hint)
        if first_city is None:
            first_city = (city, i)
        elif city != first_city[0]:
            rec._fail("city", f"city {raw.get('city')!r} is {city!r}, but record {first_city[1]} makes this "
                              f"folder's city {first_city[0]!r}; one folder holds one city")
            continue
        # Ids are compared as written (text): question_idx 3 and "3" would be one episode.
        episode_id = f"{city}-{qidx}"
        if episode_id in seen_ids:
            j, other = seen_ids[episode_id]
            rec._fail("question_idx", f"episode id {episode_id!r} again: record {j} has question_idx {other!r}")
            continue
        seen_ids[episode_id] = (i, qidx)
        code = rec.string("category")
        if code and code not in CATEGORY_NAMES:
            rec._fail("category", f"unknown category code {code!r}; known: {', '.join(CATEGORY_NAMES)}")
        difficulty = rec.string("difficulty")
        if difficulty and difficulty not in DIFFICULTIES:
            rec._fail("difficulty", f"expected one of {', '.join(DIFFICULTIES)}, got {difficulty!r}")
        start, target = node_id(rec.string("from")), node_id(rec.string("to"))
        route = rec.route("complete_route")
        stage_goals: list[str] = []
        stage_routes = []
        if "stage1_route" in raw:
            for s in ("stage1_route", "stage2_route"):
                stage = rec.get(s)
                if rec.ok and not isinstance(stage, dict):
                    rec._fail(s, "expected an object with from, to, route")
                if not rec.ok:
                    break
                stage_routes.append(rec.route("route", stage, f"{s}."))
                stage_goals.append(node_id(rec.string("to", stage, f"{s}.")))
        if not rec.ok:
            continue
        for field_name, nid in [("from", start), ("to", target)] + [
                (f"complete_route[{k}].filename", p[0]) for k, p in enumerate(route)]:
            if nid not in node_ids:
                rec._fail(field_name, f"node {nid} is not in {CONNECTIONS}")
                break
        if rec.ok and (route[0][0] != start or route[-1][0] != target):
            rec._fail("complete_route", f"route runs {route[0][0]} -> {route[-1][0]}, "
                                        f"but from/to say {start} -> {target}")
        if not rec.ok:
            continue
        for nid, lat, lon in route + [p for r in stage_routes for p in r]:
            if nid in route_coords:
                plat, plon = route_coords[nid]
                if geodesic_m(lat, lon, plat, plon) > COORD_CONFLICT_M:
                    conflicts += 1
            else:
                route_coords[nid] = (lat, lon)
        episodes.append((i, dict(
            episode_id=episode_id, city=city, category=CATEGORY_NAMES[code], difficulty=difficulty,
            instruction=rec.string("question"), request=rec.string("folder"), start=start,
            target=target, reference_path=tuple(p[0] for p in route),
            # A two-stage episode's final goal is its target; only the intermediate ones are stages.
            stage_goals=tuple(stage_goals[:-1]))))
    if conflicts:
        problems.warning(f"{path}: {conflicts} route points give a node coordinates more than "
                         f"{COORD_CONFLICT_M} m from an earlier record; the first is used")
    return episodes, route_coords


def load_city(folder: Path, problems: Problems | None = None) -> World:
    """Load one city folder. Raises DataError on the first malformed record unless
    `problems` is non-strict, in which case bad records are skipped and reported."""
    problems = problems or Problems(strict=True)
    folder = Path(folder)
    conn_path, q_path = folder / CONNECTIONS, folder / QUESTIONS
    # An empty file would make a city of 0 episodes that "succeeds"; a file whose every record
    # was rejected has said so already.
    errors = len(problems.errors)
    node_attrs, raw_edges = _parse_edges(conn_path, problems)
    if not raw_edges and len(problems.errors) == errors:
        problems.error(conn_path, "no edges: the list is empty")
    errors = len(problems.errors)
    raw_episodes, route_coords = _parse_episodes(q_path, folder.name, set(node_attrs), problems)
    if not raw_episodes and len(problems.errors) == errors:
        problems.error(q_path, "no episodes: the list is empty")

    coords = _recover_coordinates(route_coords, raw_edges)
    lost = [n for n in node_attrs if n not in coords]
    if lost:
        problems.warning(f"{folder}: {len(lost)} of {len(node_attrs)} nodes are not connected to "
                         "any route node, so their coordinates cannot be recovered; they are dropped")
    nodes = [Node(n, coords[n][0], coords[n][1], h, wh) for n, (h, wh) in node_attrs.items() if n in coords]
    edges = [Edge(a, b, az, mercator_units_to_metres(d, coords[a][0]))
             for a, b, az, d in raw_edges if a in coords and b in coords]
    edge_set = {(a, b) for a, b, _, _ in raw_edges}
    missing_reverse = sum(1 for a, b in edge_set if (b, a) not in edge_set)
    if missing_reverse:
        problems.warning(f"{conn_path}: {missing_reverse} edges have no reverse edge")

    city = raw_episodes[0][1]["city"] if raw_episodes else folder.name.lower()
    episodes = [Episode(**e) for _, e in raw_episodes]
    off_route_hops = sum(1 for ep in episodes for a, b in zip(ep.reference_path, ep.reference_path[1:])
                         if (a, b) not in edge_set)
    if off_route_hops:
        problems.warning(f"{q_path}: {off_route_hops} ground-truth route hops are not edges "
                         f"in {CONNECTIONS}")
    targets: dict[str, set[str]] = {}
    for ep in episodes:
        targets.setdefault(ep.request, set()).add(ep.target)
    return World(
        city=city,
        graph=StreetGraph(nodes, edges, name=city),
        episodes=episodes,
        category_targets={k: frozenset(v) for k, v in targets.items()},
        source_files={str(p.resolve()): sha256_file(p) for p in (conn_path, q_path) if p.is_file()},
        synthetic=_is_synthetic(folder, problems),
    )


def _is_synthetic(folder: Path, problems: Problems) -> bool:
    """A world.json beside the release files marks a generated city; it is optional."""
    meta = folder / "world.json"
    if not meta.is_file():
        return False
    try:
        doc = read_json_file(meta)
    except DataError as exc:
        problems.error(exc.file, exc.detail)
        return False
    if not isinstance(doc, dict):
        problems.error(meta, f"expected a JSON object, got {type(doc).__name__}")
        return False
    return bool(doc.get("synthetic", False))
