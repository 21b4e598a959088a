"""A small street-grid world generated from a seed, written in the CitySeeker release format.

The product cannot ship the release's panoramas, so the default world is generated here: the
same files (`connections.json`, `question.json`) with the same fields, units and quirks, read by
the normal loader, plus a `world.json` that marks the folder as synthetic. Nothing is
downloaded; the same arguments always give the same bytes.

Release conventions copied on purpose (checked against HongKong_6):
- `edge_distance` and `total_weight` are Web-Mercator units (metres / cos(latitude)).
- Walkable headings are unsorted, jittered off the street azimuths, sometimes negative.
- Single-stage `total_steps` counts route NODES (len(complete_route)); two-stage `total_steps`
  counts hops (stage1 steps + stage2 steps) and `complete_route` is stage 1's route followed
  by stage 2's without repeating the stage-1 target.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.files import check_replaceable, replace_folder
from cityseeker_ros.core.streets.geodesy import destination, geodesic_m, initial_bearing_deg, metres_to_mercator_units
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.episode import CATEGORY_NAMES, DIFFICULTIES, difficulty_of

GENERATOR = "cityseeker_ros.core.datasets.synthetic"
GENERATOR_VERSION = 1
WORLD_FILES = ("connections.json", "question.json", "world.json")

COORD_DECIMALS = 8  # ~1 mm, like the release; everything is computed from the rounded values
ROTATION_DEG = (3.0, 12.0)  # grid rotation magnitude, so no street runs along a meridian
REMOVED_STREET_FRACTION = 0.1
HEADING_JITTER_DEG = 3.0
NEGATIVE_HEADING_RATE = 0.15  # of nodes with a near-north heading, which write it below 0
MIN_STEPS, MAX_STEPS = 5, 24
PLACEMENT_ATTEMPTS = 20
DIFFICULTY_CYCLE = ("easy", "medium", "easy", "hard")

Pools = dict[str, list[list[list[str]]]]  # difficulty -> routes, each a list of stage paths

# Shops placed in a world of SHOP_BLOCKS x SHOP_BLOCKS blocks, with how many of each; bigger or
# smaller worlds scale the counts with their area so routes stay within MAX_STEPS.
SHOP_BLOCKS = 6
SHOPS: dict[str, int] = {
    "convenience store": 3,
    "pharmacy": 3,
    "bank": 3,
    "Starbucks": 2,
    "McDonald's": 2,
    "bus stop": 3,
    "metro station": 2,
    "public restroom": 1,
    "wheelchair accessible restroom": 2,
    "quiet cafe": 2,
}


@dataclass(frozen=True)
class Request:
    """A release `folder`: each stage is the set of shop kinds that satisfy it."""

    folder: str
    category: str
    question: str
    stages: tuple[tuple[str, ...], ...]

    @property
    def two_stage(self) -> bool:
        return len(self.stages) > 1


def _nearest(folder: str, category: str, kinds: tuple[str, ...] | None = None) -> Request:
    return Request(folder, category, f"Please find the nearest {folder}.", (kinds or (folder,),))


def _in_order(first: str, second: str) -> Request:
    folder = f"{first} and {second}"
    return Request(folder, "question2", f"Please find the nearest {folder} in order.",
                   ((first,), (second,)))


REQUESTS: tuple[Request, ...] = (
    _nearest("convenience store", "question1"),
    _nearest("pharmacy", "question1"),
    _nearest("bank", "question1"),
    _nearest("Starbucks", "question4"),
    _nearest("McDonald's", "question4"),
    _nearest("bus stop", "question5"),
    _nearest("metro station", "question5"),
    _nearest("restroom", "question6",
             ("public restroom", "wheelchair accessible restroom", "McDonald's", "Starbucks")),
    Request("somewhere to get a drink", "question7",
            "I'm thirsty and would like something to drink. Could you help me find a nearby place?",
            (("convenience store", "Starbucks", "McDonald's", "quiet cafe"),)),
    Request("I need cash", "question7",
            "I need to withdraw some cash. Could you help me find a nearby place?",
            (("bank",),)),
    _nearest("wheelchair accessible restroom", "question8"),
    _nearest("quiet cafe to read", "question9", ("quiet cafe",)),
    _in_order("pharmacy", "bank"),
    _in_order("convenience store", "bank"),
)


def synthesize_world(out_dir: Path, *, seed: int = 0, city: str = "gridtown", blocks: int = 6,
                     block_nodes: int = 5, spacing_m: float = 20.0,
                     origin: tuple[float, float] = (43.7384, 7.4246),
                     episodes_per_category: int = 4) -> Path:
    """Write a synthetic world into `out_dir` (replacing a previous synthetic one) and return it."""
    out_dir = Path(out_dir)
    params = {"city": city, "blocks": blocks, "block_nodes": block_nodes, "spacing_m": spacing_m,
              "origin": [float(origin[0]), float(origin[1])],
              "episodes_per_category": episodes_per_category}
    _check_params(city, blocks, block_nodes, spacing_m, origin, episodes_per_category)
    check_replaceable(out_dir, is_synthetic_world, "a synthetic world")

    rng = np.random.default_rng(seed)
    coords, hops = _layout(rng, blocks, block_nodes, spacing_m, origin)
    connections, graph = _connections(rng, coords, hops)
    shops, pools = _route_pools(rng, graph, blocks, episodes_per_category)
    questions = _episodes(rng, graph, pools, city, episodes_per_category)
    world = {"format": "cityseeker-release", "synthetic": True, "generator": GENERATOR,
             "generator_version": GENERATOR_VERSION, "seed": seed, "params": params,
             "note": "procedurally generated street grid; no real imagery",
             # Ground truth the release lacks: which nodes satisfy each request.
             "shops": {kind: sorted(nodes) for kind, nodes in shops.items()},
             "requests": {r.folder: [list(kinds) for kinds in r.stages] for r in REQUESTS}}
    replace_folder(out_dir, {"connections.json": connections, "question.json": questions, "world.json": world},
                   is_synthetic_world, "a synthetic world")
    return out_dir


def _check_params(city: str, blocks: int, block_nodes: int, spacing_m: float,
                  origin: tuple[float, float], episodes_per_category: int) -> None:
    if not city.strip():
        raise ConfigError("city must be a non-empty name")
    if blocks < 2:
        raise ConfigError(f"blocks must be at least 2, got {blocks}")
    if block_nodes < 1:
        raise ConfigError(f"block_nodes must be at least 1, got {block_nodes}")
    if not 0.0 < spacing_m <= 100.0:
        raise ConfigError(f"spacing_m must be in (0, 100], got {spacing_m}")
    if not (-80.0 <= origin[0] <= 80.0 and -180.0 <= origin[1] <= 180.0):
        raise ConfigError(f"origin must be (lat, lon) with |lat| <= 80, got {origin}")
    if episodes_per_category < 1:
        raise ConfigError(f"episodes_per_category must be at least 1, got {episodes_per_category}")


def is_synthetic_world(folder: Path) -> bool:
    """True if `folder` holds only what this generator writes, so replacing it loses nothing."""
    folder = Path(folder)
    try:
        names = {p.name for p in folder.iterdir()}
        meta = json.loads((folder / "world.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (names <= set(WORLD_FILES) and isinstance(meta, dict)
            and meta.get("synthetic") is True and meta.get("generator") == GENERATOR)


def _layout(rng: np.random.Generator, blocks: int, block_nodes: int, spacing_m: float,
            origin: tuple[float, float]) -> tuple[list[tuple[float, float]], list[tuple[int, int]]]:
    """Node (lat, lon) and undirected hops of a rotated street grid with a few streets removed.

    A street here is one block side between two intersections. Removal keeps the intersection
    graph connected, so with every edge two-way the street graph stays strongly connected.
    """
    side = blocks + 1
    corners = [(r, c) for r in range(side) for c in range(side)]
    streets = [((r, c), (r, c + 1)) for r in range(side) for c in range(blocks)]
    streets += [((r, c), (r + 1, c)) for r in range(blocks) for c in range(side)]

    junctions = nx.Graph(streets)
    n_remove = round(REMOVED_STREET_FRACTION * len(streets))
    for k in rng.permutation(len(streets)):
        if n_remove == 0:
            break
        junctions.remove_edge(*streets[k])
        if nx.is_connected(junctions):
            n_remove -= 1
        else:
            junctions.add_edge(*streets[k])
    kept = [s for s in streets if junctions.has_edge(*s)]

    # Grid coordinates in units of `spacing_m`, intersections first, then street interiors.
    points: list[tuple[float, float]] = [(float(c * block_nodes), float(r * block_nodes))
                                         for r, c in corners]
    index = {rc: i for i, rc in enumerate(corners)}
    hops: list[tuple[int, int]] = []
    for (r0, c0), (r1, c1) in kept:
        chain = [index[(r0, c0)]]
        for k in range(1, block_nodes):
            chain.append(len(points))
            points.append((c0 * block_nodes + k * (c1 - c0), r0 * block_nodes + k * (r1 - r0)))
        chain.append(index[(r1, c1)])
        hops += list(zip(chain, chain[1:]))

    theta = math.radians(rng.uniform(*ROTATION_DEG) * rng.choice([-1.0, 1.0]))
    centre = blocks * block_nodes / 2.0
    coords = []
    for gx, gy in points:
        x, y = (gx - centre) * spacing_m, (gy - centre) * spacing_m
        east = x * math.cos(theta) - y * math.sin(theta)
        north = x * math.sin(theta) + y * math.cos(theta)
        lat, lon = destination(origin[0], origin[1], math.degrees(math.atan2(east, north)),
                               math.hypot(east, north))
        coords.append((round(lat, COORD_DECIMALS), round(lon, COORD_DECIMALS)))
    return coords, hops


def _filename(i: int) -> str:
    return f"{i:08d}.jpg"


def _walkable_headings(rng: np.random.Generator, azimuths: Sequence[float]) -> list[float]:
    """Street azimuths as a street-view provider reports them: jittered, shuffled, and now and
    then one near-north heading written below zero (e.g. -3 for 357)."""
    jitter = HEADING_JITTER_DEG
    headings = [(a + rng.uniform(-jitter, jitter)) % 360.0 for a in azimuths]
    headings = [headings[i] for i in rng.permutation(len(headings))]
    if rng.random() < NEGATIVE_HEADING_RATE:
        near_north = [i for i, h in enumerate(headings) if h >= 340.0]
        if near_north:
            headings[near_north[0]] -= 360.0
    return headings


def _connections(rng: np.random.Generator, coords: list[tuple[float, float]],
                 hops: list[tuple[int, int]]) -> tuple[list[dict[str, Any]], StreetGraph]:
    """The release's directed edge records, plus the StreetGraph they describe."""
    directed: list[tuple[int, int, float, float]] = []  # source, target, azimuth, metres
    for a, b in hops:
        length = geodesic_m(*coords[a], *coords[b])  # one length per hop keeps both ways equal
        directed.append((a, b, initial_bearing_deg(*coords[a], *coords[b]), length))
        directed.append((b, a, initial_bearing_deg(*coords[b], *coords[a]), length))
    out: dict[int, list[float]] = {}
    for a, _, azimuth, _ in directed:
        out.setdefault(a, []).append(azimuth)

    ids = sorted(out)
    nodes = {}
    for i in ids:
        heading = out[i][int(rng.integers(len(out[i])))]  # the capture car drove along a street
        nodes[i] = Node(_filename(i), coords[i][0], coords[i][1], heading,
                        tuple(_walkable_headings(rng, out[i])))

    def side(prefix: str, n: Node) -> dict[str, Any]:
        return {f"{prefix}_filename": n.id,
                f"{prefix}_walkable_headings": list(n.walkable_headings),
                f"{prefix}_heading": n.heading}

    records = [{**side("start", nodes[a]), **side("end", nodes[b]), "edge_azimuth": azimuth,
                "edge_distance": metres_to_mercator_units(length, coords[a][0])}
               for a, b, azimuth, length in directed]
    graph = StreetGraph(nodes.values(), (Edge(nodes[a].id, nodes[b].id, az, length)
                                         for a, b, az, length in directed))
    return records, graph


def _place_shops(rng: np.random.Generator, node_ids: list[str],
                 blocks: int) -> dict[str, frozenset[str]]:
    """Shop kind -> the nodes that hold one (one shop per node)."""
    scale = (blocks / SHOP_BLOCKS) ** 2
    counts = {kind: max(1, round(n * scale)) for kind, n in SHOPS.items()}
    total = sum(counts.values())
    if total > len(node_ids):
        raise ConfigError(f"world has {len(node_ids)} nodes, too few for {total} shops; "
                          "use more blocks or block_nodes")
    chosen = [node_ids[i] for i in rng.choice(len(node_ids), size=total, replace=False)]
    shops, start = {}, 0
    for kind, count in counts.items():
        shops[kind] = frozenset(chosen[start:start + count])
        start += count
    return shops


def _route_pools(rng: np.random.Generator, graph: StreetGraph, blocks: int, per_category: int
                 ) -> tuple[dict[str, frozenset[str]], dict[str, Pools]]:
    """Place shops, then collect every in-range route per request. A placement that cannot
    supply some request (say every bank far from every convenience store) is redrawn."""
    g = graph.to_networkx()
    for _ in range(PLACEMENT_ATTEMPTS):
        shops = _place_shops(rng, list(graph.nodes), blocks)
        # Streets are two-way with equal lengths, so paths out of the targets, reversed, are
        # the shortest paths into them: one search per shop-kind set serves every start.
        towards: dict[tuple[str, ...], dict[str, list[str]]] = {}
        for kinds in dict.fromkeys(kinds for r in REQUESTS for kinds in r.stages):
            # Sorted: set order follows the per-process string hash and would break ties.
            targets = sorted(set().union(*(shops[k] for k in kinds)))
            _, paths = nx.multi_source_dijkstra(g, targets, weight="length")
            towards[kinds] = {v: p[::-1] for v, p in paths.items()}
        pools = {r.folder: _candidate_routes(r, list(graph.nodes), towards) for r in REQUESTS}
        if all(sum(map(len, pools[r.folder].values())) >= _episodes_needed(r, per_category)
               for r in REQUESTS):
            return shops, pools
    raise ConfigError(f"world too small for {per_category} episodes per category with routes of "
                      f"{MIN_STEPS}-{MAX_STEPS} steps; use more blocks or fewer episodes")


def _requests_of(category: str) -> list[Request]:
    return [r for r in REQUESTS if r.category == category]


def _episodes_needed(request: Request, per_category: int) -> int:
    """Episodes of a category take its requests in turn."""
    siblings = _requests_of(request.category)
    return len(range(siblings.index(request), per_category, len(siblings)))


def _episodes(rng: np.random.Generator, graph: StreetGraph, pools: dict[str, Pools],
              city: str, per_category: int) -> list[dict[str, Any]]:
    """Episodes in the release's order (grouped by category, question2 last); every route goes
    to the nearest satisfying node at each stage and is executable under the action model."""
    actions = ActionModel(graph)
    units = {(e.source, e.target): metres_to_mercator_units(e.length_m, graph.nodes[e.source].lat)
             for e in graph.edges}  # the same values connections.json holds
    records: list[dict[str, Any]] = []
    for category in CATEGORY_NAMES:
        requests = _requests_of(category)
        for k in range(per_category):
            request = requests[k % len(requests)]
            stages = _pick(rng, pools[request.folder], DIFFICULTY_CYCLE[k % len(DIFFICULTY_CYCLE)])
            full = _joined(stages)
            if not actions.route_executable(full):
                raise RuntimeError(f"bug: route {full} is not executable under the action model")
            records.append(_episode_record(graph, units, request, stages, len(records),
                                           k // len(requests), city))
    return records


def _joined(stages: Sequence[Sequence[str]]) -> list[str]:
    """The release's complete_route: each stage after the first drops its repeated start."""
    return [v for i, s in enumerate(stages) for v in (s if i == 0 else s[1:])]


def _release_steps(stages: Sequence[Sequence[str]]) -> int:
    """`total_steps` as the release counts it (see the module docstring)."""
    hops = sum(len(s) - 1 for s in stages)
    return hops if len(stages) > 1 else hops + 1


def _candidate_routes(request: Request, node_ids: list[str],
                      towards: dict[tuple[str, ...], dict[str, list[str]]]) -> Pools:
    """Stage paths from every start whose route fits the step range, by difficulty."""
    pools: Pools = {d: [] for d in DIFFICULTIES}
    for start in node_ids:
        here, stages = start, []
        for kinds in request.stages:
            path = towards[kinds].get(here)
            if path is None or len(path) < 2:
                break
            stages.append(path)
            here = path[-1]
        else:
            steps = _release_steps(stages)
            if MIN_STEPS <= steps <= MAX_STEPS:
                pools[difficulty_of(steps)].append(stages)
    return pools


def _pick(rng: np.random.Generator, pools: Pools, wanted: str) -> list[list[str]]:
    """Draw (and remove, so starts do not repeat) a route of the wanted difficulty, falling
    back to the nearest other difficulty when the world has none left; _route_pools made
    sure there are enough routes in all."""
    order = {"easy": ("easy", "medium", "hard"), "medium": ("medium", "easy", "hard"),
             "hard": ("hard", "medium", "easy")}[wanted]
    pool = next(pools[d] for d in order if pools[d])
    return pool.pop(int(rng.integers(len(pool))))


def _route_json(graph: StreetGraph, route: Sequence[str]) -> list[dict[str, Any]]:
    return [{"filename": v, "latitude": graph.nodes[v].lat, "longitude": graph.nodes[v].lon}
            for v in route]


def _route_weight(route: Sequence[str], edge_distance: dict[tuple[str, str], float]) -> float:
    return sum(edge_distance[a, b] for a, b in zip(route, route[1:]))


def _episode_record(graph: StreetGraph, units: dict[tuple[str, str], float], request: Request,
                    stages: list[list[str]], question_idx: int, idx: int,
                    city: str) -> dict[str, Any]:
    """One question.json record, with the release's keys in the release's order."""
    full = _joined(stages)
    steps = _release_steps(stages)
    record: dict[str, Any] = {
        "folder": request.folder, "question_idx": question_idx, "question": request.question,
        "idx": idx, "from": full[0], "to": full[-1],
        "total_weight": sum(_route_weight(s, units) for s in stages), "total_steps": steps,
    }
    if request.two_stage:
        for n, (route, kinds) in enumerate(zip(stages, request.stages), start=1):
            record[f"stage{n}_route"] = {
                "from": route[0], "to": route[-1], "service": " or ".join(kinds),
                "weight": _route_weight(route, units), "steps": len(route) - 1,
                "route": _route_json(graph, route)}
    record.update({"complete_route": _route_json(graph, full), "difficulty": difficulty_of(steps),
                   "category": request.category, "city": city})
    return record
