"""Share of task-start views with nothing above the horizon, and milliseconds per view, per world.

Renders, at every distinct start node of the test split (up to --nodes of them, evenly spread),
the 640x480 view along each walkable heading (what an agent sees first), and the same view in
the same world emptied of buildings, POIs, trees and landmarks (sky, backdrop and ground only).
A view is empty above the horizon when fewer than 2% of the pixels above the horizon differ
from the emptied render: a measure that needs nothing from the renderer but its pixels, so it
compares renderer versions (run an older tree with PYTHONPATH). Times are of the full render.

    python benchmarks/horizon_share.py WORLD [WORLD ...] [--nodes 40] [--size 640x480]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from cityseeker_ros.core.render import Renderer, RenderSettings
from cityseeker_ros.core.worlds.folder import load_scene_and_graph

EMPTY_BELOW = 0.02


def start_views(world: Path, nodes: int) -> list[tuple[str, float]]:
    tasks = json.loads((world / "tasks.json").read_text())["tasks"]
    starts = sorted({t["start"] for t in tasks if t["split"] == "test"})
    if len(starts) > nodes:
        starts = [starts[round(i * (len(starts) - 1) / (nodes - 1))] for i in range(nodes)]
    _, graph = load_scene_and_graph(world)
    return [(n, h) for n in starts for h in graph.nodes[n].walkable_headings]


def emptied(scene):
    """The scene without anything standing on the ground (fields that exist in this tree only)."""
    empty = {f.name: [] for f in dataclasses.fields(scene) if f.name in ("buildings", "pois", "landmarks", "trees")}
    return dataclasses.replace(scene, **empty)


def measure(world: Path, nodes: int, size: tuple[int, int]) -> dict:
    scene, graph = load_scene_and_graph(world)
    views = start_views(world, nodes)
    full = Renderer(scene, graph, RenderSettings())
    bare = Renderer(emptied(scene), graph, RenderSettings(signs=False))
    w, h = size
    horizon = h // 2
    empty, times = 0, []
    for node, heading in views:
        t0 = time.perf_counter()
        a = full.perspective(node, heading, width=w, height=h).image
        times.append(time.perf_counter() - t0)
        b = bare.perspective(node, heading, width=w, height=h).image
        differs = np.any(a[:horizon] != b[:horizon], axis=2).mean()
        empty += differs < EMPTY_BELOW
    return {"world": str(world), "views": len(views), "empty_above_horizon": int(empty),
            "share": round(empty / max(len(views), 1), 3), "ms_p50": round(1000 * float(np.median(times)), 1),
            "ms_mean": round(1000 * float(np.mean(times)), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("worlds", nargs="+", type=Path)
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument("--size", default="640x480")
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    for world in args.worlds:
        print(json.dumps(measure(world, args.nodes, size)), flush=True)


if __name__ == "__main__":
    main()
