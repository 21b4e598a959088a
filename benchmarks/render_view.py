"""Milliseconds per rendered view on a city-sized scene, against the 35 ms per 640x480 target.

By default builds a seeded synthetic city (a grid of ~1300 buildings with ~10k wall segments,
~600 POIs, a street graph with a node every ~12 m), then times perspective views at random
nodes and headings and a few 2048x1024 panoramas. With --world, renders a world folder instead.
Timings include everything a caller waits for (sign textures are made on first sight).

    python benchmarks/render_view.py [--views 200] [--panoramas 5] [--world PATH] [--clutter 0.3]
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from pyproj import Transformer

from cityseeker_ros.core.render import Renderer, RenderSettings, save_png
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.worlds.scene import Building, Poi, Scene

TARGET_MS = 35.0
ORIGIN = (43.7384, 7.4246)
BLOCKS = 18  # per side
BLOCK_M, STREET_M = 60.0, 14.0
NODE_STEP_M = 12.0
NAMES = ["Le Corner", "Solis Bio", "Cafe Uno", "Bella Vista", "Golden Dragon", "Nordic Bakery", "La Piazza",
         "Blue Note", "Casa Verde", "Pharmacie du Port", "Hotel Miramar", "Sunrise Mart", "霸王茶姬", "周大福",
         "大家乐", "Le coin du Fromager", "Chez Marcel", "Kebab House", "Bookworm", "Studio 54"]
BRANDS = ["Starbucks", "McDonald's", "7-Eleven", "KFC", "Circle K", "Spar", "Costa", "Burger King"]
CLASSES = ["amenity=cafe", "amenity=restaurant", "amenity=fast_food", "amenity=bar", "shop=convenience",
           "shop=supermarket", "shop=clothes", "amenity=pharmacy", "amenity=bank", "tourism=hotel",
           "amenity=toilets", "highway=bus_stop", "amenity=fuel", "amenity=post_office"]


def synthetic_city(seed: int = 0) -> tuple[Scene, StreetGraph]:
    """A Manhattan grid: four buildings per block, each side split once (8 edges), a node every ~12 m."""
    rng = np.random.default_rng(seed)
    pitch = BLOCK_M + STREET_M
    to_lonlat = Transformer.from_crs(
        f"+proj=aeqd +lat_0={ORIGIN[0]} +lon_0={ORIGIN[1]} +ellps=WGS84 +units=m", "EPSG:4326", always_xy=True)
    buildings = []
    for bi in range(BLOCKS):
        for bj in range(BLOCKS):
            x0, y0 = bi * pitch + STREET_M / 2, bj * pitch + STREET_M / 2
            for qi in range(2):
                for qj in range(2):
                    bx, by = x0 + qi * BLOCK_M / 2, y0 + qj * BLOCK_M / 2
                    w = BLOCK_M / 2 - (0.0 if rng.random() < 0.7 else 2.0)
                    ring = _split_box(bx, by, bx + w, by + w, rng)
                    tall = rng.random() < 0.05
                    levels = int(rng.integers(15, 35)) if tall else int(rng.integers(3, 9))
                    height = 3.1 + (levels - 1) * 3.2
                    buildings.append(Building(f"b{bi}_{bj}_{qi}{qj}", ring, height, levels, int(rng.integers(0, 48))))
    pois = []
    for k in range(600):
        b = buildings[int(rng.integers(len(buildings)))]
        ring = b.footprint
        e = int(rng.integers(len(ring)))
        (ax, ay), (cx, cy) = ring[e], ring[(e + 1) % len(ring)]
        f = rng.uniform(0.3, 0.7)
        x, y = ax + f * (cx - ax), ay + f * (cy - ay)
        normal = math.degrees(math.atan2(cy - ay, -(cx - ax))) % 360.0  # outward for a CCW ring: (dy, -dx)
        cls = CLASSES[int(rng.integers(len(CLASSES)))]
        brand = BRANDS[int(rng.integers(len(BRANDS)))] if rng.random() < 0.2 else None
        name = brand or (NAMES[int(rng.integers(len(NAMES)))] if rng.random() < 0.9 else "")
        lon, lat = to_lonlat.transform(x, y)
        pois.append(Poi(f"poi{k}", name, brand, cls, {}, lat, lon, (x, y), normal, b.id, ()))
    nodes, edges = _street_graph(to_lonlat, pitch)
    return Scene(ORIGIN[0], ORIGIN[1], buildings, pois), StreetGraph(nodes, edges, name="synthetic-city")


def _split_box(x0: float, y0: float, x1: float, y1: float, rng: np.random.Generator) -> tuple:
    corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    ring = []
    for a, b in zip(corners, corners[1:] + corners[:1]):
        f = rng.uniform(0.3, 0.7)
        ring += [a, (a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]))]
    return tuple(ring)


def _street_graph(to_lonlat: Transformer, pitch: float) -> tuple[list[Node], list[Edge]]:
    size = BLOCKS * pitch
    steps = int(size // NODE_STEP_M)
    ids: dict[tuple[int, int], str] = {}
    nodes, edges = [], []

    def node(x: float, y: float) -> str:
        key = (round(x * 10), round(y * 10))
        if key not in ids:
            lon, lat = to_lonlat.transform(x, y)
            ids[key] = f"n{len(ids)}"
            nodes.append(Node(ids[key], lat, lon, 0.0, (0.0, 90.0, 180.0, 270.0)))
        return ids[key]

    for line in range(BLOCKS + 1):
        c = line * pitch
        for vertical in (True, False):
            prev = None
            for k in range(steps + 1):
                a = k * size / steps
                x, y = (c, a) if vertical else (a, c)
                cur = node(x, y)
                if prev is not None:
                    az = 0.0 if vertical else 90.0
                    length = size / steps
                    edges += [Edge(prev, cur, az, length), Edge(cur, prev, (az + 180.0) % 360.0, length)]
                prev = cur
    return nodes, edges


def _load(world: Path | None, seed: int) -> tuple[Scene, StreetGraph, str]:
    if world is None:
        scene, graph = synthetic_city(seed)
        return scene, graph, f"synthetic city (seed {seed})"
    try:
        from cityseeker_ros.core.worlds.folder import load_scene_and_graph
    except ImportError:
        sys.exit("--world needs cityseeker_ros.core.worlds.folder.load_scene_and_graph, not available here")
    scene, graph = load_scene_and_graph(world)
    return scene, graph, str(world)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None, help="world folder (default: synthetic city)")
    parser.add_argument("--views", type=int, default=200)
    parser.add_argument("--panoramas", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clutter", type=float, default=0.0)
    parser.add_argument("--save", type=Path, default=None, help="write the first few views as PNG here")
    args = parser.parse_args()

    t0 = time.perf_counter()
    scene, graph, label = _load(args.world, args.seed)
    t1 = time.perf_counter()
    renderer = Renderer(scene, graph, RenderSettings(clutter=args.clutter))
    t2 = time.perf_counter()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"command: python {' '.join(sys.argv)}")
    print(f"machine: {platform.processor() or platform.machine()}, {cores} usable cores (os.cpu_count()="
          f"{os.cpu_count()}), python {platform.python_version()}, numpy {np.__version__}")
    print(f"world: {label}: {len(scene.buildings)} buildings, {len(renderer.walls)} wall segments, "
          f"{len(scene.pois)} POIs, {len(graph)} nodes; clutter {args.clutter}")
    print(f"setup: world {1e3 * (t1 - t0):.0f} ms, renderer {1e3 * (t2 - t1):.0f} ms")

    rng = np.random.default_rng(args.seed + 1)
    ids = sorted(graph.nodes)
    times, signs = [], 0
    for k in range(args.views):
        node = ids[int(rng.integers(len(ids)))]
        heading = float(rng.uniform(0.0, 360.0))
        t = time.perf_counter()
        view = renderer.perspective(node, heading)
        times.append(1e3 * (time.perf_counter() - t))
        signs += len(view.signs)
        if args.save is not None and k < 8:
            save_png(args.save / f"view{k}_{node}_h{heading:.0f}.png", view.image)
    _report("perspective 640x480", times, TARGET_MS)
    print(f"  signs listed per view: {signs / max(1, len(times)):.1f}")
    pano = []
    for k in range(args.panoramas):
        node = ids[int(rng.integers(len(ids)))]
        t = time.perf_counter()
        view = renderer.panorama(node)
        pano.append(1e3 * (time.perf_counter() - t))
        if args.save is not None and k < 2:
            save_png(args.save / f"pano{k}_{node}.png", view.image)
    if pano:
        _report("panorama 2048x1024", pano, None)
    ok = float(np.median(times)) <= TARGET_MS if times else False
    print(f"RESULT: {'PASS' if ok else 'FAIL'} (median perspective view {np.median(times):.1f} ms vs "
          f"{TARGET_MS:.0f} ms target)")
    return 0 if ok else 1


def _report(name: str, ms: list[float], target: float | None) -> None:
    a = np.array(ms)
    line = (f"{name}: n={len(a)} median {np.median(a):.1f} ms, p90 {np.percentile(a, 90):.1f} ms, "
            f"min {a.min():.1f}, max {a.max():.1f}")
    if target is not None:
        line += f" (target {target:.0f} ms)"
    print(line)


if __name__ == "__main__":
    sys.exit(main())
