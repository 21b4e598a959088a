"""World cost against graph size: building, task generation, peak memory and first steps.

Builds grid-like synthetic worlds of increasing size (a street every 20 m both ways, one POI
per POI_EVERY nodes drawn from the needs catalogue's classes) and, for each in its own
process (so peak memory is that size's alone), prints:

  build_s       the street graph and its action model
  tasks_s       generate_tasks (the paper's construction, worlds.tasks)
  peak_mb       the process's peak resident memory
  first_ms      mean time of an episode's first step from a start not seen before:
                World.solvable (the step budget's search) plus reset and one step
  cache_mb      growth of the process's memory over those episodes (the search cache)

Costs should follow the step budget's reach, not the graph: first_ms stays flat with size.

    python benchmarks/world_scale.py [--sizes 2000 10000 25000] [--episodes 200]
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

import numpy as np

from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.tasks.environment import Environment, move
from cityseeker_ros.core.tasks.episode import CATEGORY_NAMES, Episode, World
from cityseeker_ros.core.worlds.needs import NEEDS
from cityseeker_ros.core.worlds.scene import Poi
from cityseeker_ros.core.worlds.tasks import generate_tasks

SPACING_M = 20.0
POI_EVERY = 30  # nodes per POI (Monaco: ~4.5, a country extract's outskirts: far more)
MAX_STEPS = 35  # the benchmark's default step budget


def grid_world(n_nodes: int, seed: int = 0) -> tuple[StreetGraph, list[Poi]]:
    """A side x side street grid near (43.7, 7.4) and POIs seen from the nodes around them."""
    side = math.isqrt(n_nodes)
    ids = [[f"g{r:03d}_{c:03d}" for c in range(side)] for r in range(side)]
    nodes, edges = [], []
    for r in range(side):
        lat, _ = destination(43.7, 7.4, 0.0, r * SPACING_M)
        for c in range(side):
            _, lon = destination(43.7, 7.4, 90.0, c * SPACING_M)
            out = [(az, ids[rr][cc]) for az, rr, cc in ((0.0, r + 1, c), (90.0, r, c + 1), (180.0, r - 1, c),
                                                         (270.0, r, c - 1)) if 0 <= rr < side and 0 <= cc < side]
            nodes.append(Node(ids[r][c], lat, lon, 0.0, tuple(az for az, _ in out)))
            edges += [Edge(ids[r][c], t, az, SPACING_M) for az, t in out]
    graph = StreetGraph(nodes, edges, name=f"grid{side * side}")
    rng = np.random.default_rng(seed)
    classes = sorted({c for need in NEEDS for c in need.classes})
    pois = []
    for k in range(len(nodes) // POI_EVERY):
        r, c = (int(v) for v in rng.integers(0, side, 2))
        seen = tuple(ids[rr][cc] for rr, cc in ((r, c), (r, c + 1), (r + 1, c), (r, c - 1), (r - 1, c))
                     if 0 <= rr < side and 0 <= cc < side)
        cls = classes[int(rng.integers(len(classes)))]
        key, value = cls.split("=")
        node = graph.nodes[seen[0]]
        pois.append(Poi(f"node/{k}", f"Place {k}", None, cls, {key: value, "wheelchair": "yes",
                                                                  "outdoor_seating": "yes"},
                        node.lat, node.lon, (0.0, 0.0), 0.0, None, seen))
    return graph, pois


def measure(n_nodes: int, episodes: int) -> dict:
    t0 = time.perf_counter()
    graph, pois = grid_world(n_nodes)
    world = World(graph.name, graph, [], {})
    _ = world.actions
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    task_set = generate_tasks(graph.name, graph, pois)
    tasks_s = time.perf_counter() - t0
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rng = np.random.default_rng(1)
    starts = rng.permutation(sorted(graph.nodes))[:episodes]
    targets = rng.permutation(sorted(graph.nodes))[:episodes]
    env = Environment(world, max_steps=MAX_STEPS)
    times = []
    for k, (start, target) in enumerate(zip(starts, targets)):
        ep = Episode(f"e{k}", graph.name, CATEGORY_NAMES["question1"], "easy", "find it", "x", str(start),
                     str(target), (str(start), str(target)))
        t0 = time.perf_counter()
        world.solvable(ep, MAX_STEPS)
        env.reset(ep)
        env.step(move(0))
        times.append(time.perf_counter() - t0)
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"nodes": len(graph), "pois": len(pois), "tasks": len(task_set.tasks), "build_s": round(build_s, 2),
            "tasks_s": round(tasks_s, 2), "peak_mb": round(rss_after / 1024, 1),
            "first_ms": round(1000 * float(np.mean(times)), 2), "cache_mb": round((rss_after - rss_before) / 1024, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000, 25000], help="nodes per world")
    parser.add_argument("--episodes", type=int, default=200, help="fresh starts timed per world")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size, print JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.episodes)))
        return 0
    print(f"command: python {' '.join(sys.argv)}")
    print(f"{'nodes':>7} {'POIs':>5} {'tasks':>5} {'build_s':>8} {'tasks_s':>8} {'peak_mb':>8} "
          f"{'first_ms':>9} {'cache_mb':>9}")
    for size in args.sizes:
        done = subprocess.run([sys.executable, __file__, "--one", str(size), "--episodes", str(args.episodes)],
                              capture_output=True, text=True, check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{r['nodes']:>7} {r['pois']:>5} {r['tasks']:>5} {r['build_s']:>8.2f} {r['tasks_s']:>8.2f} "
              f"{r['peak_mb']:>8.1f} {r['first_ms']:>9.2f} {r['cache_mb']:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
