"""The live-camera pipeline without ROS, on a video rendered from a generated world.

1. `render_drive`: walk a route through a world folder and render what a 360° camera on the
   walker sees, as an equirectangular video (MJPG in AVI, which OpenCV writes and reads back
   everywhere), plus a CSV of the noisy GNSS fix of every frame.
2. `run_pipeline`: fixes -> GraphLocaliser -> "equirect" over "video" frames -> one view set per
   node arrival -> a registered policy -> core.loop.guidance, written as JSON lines.

These are the steps camera_ingest, graph_localiser and the supervisor make over ROS; here they
run in one process so the whole chain can be seen and tested in seconds.
"""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import cv2
import numpy as np

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.episode_run import episode_rng
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.guidance import guide_action
from cityseeker_ros.core.sensing.camera import FrameError, RunTask, ViewSetBuilder, make_frame_source
from cityseeker_ros.core.sensing.localisation import GraphLocaliser
from cityseeker_ros.core.streets.geodesy import destination, geodesic_m, initial_bearing_deg
from cityseeker_ros.core.streets.graph import Node, StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.episode import Episode, World

FIX_FIELDS = ("frame", "stamp", "lat", "lon", "true_lat", "true_lon", "heading_deg")
START_STAMP = 1_700_000_000.0  # the drive's clock: frame i is at START_STAMP + i / fps


@dataclass(frozen=True)
class Drive:
    video: Path
    fixes: Path
    route: tuple[str, ...]
    frames: int
    fps: float


def load_world(world_dir: Path) -> World:
    worlds = load_dataset(Path(world_dir), "world")
    if len(worlds) != 1:
        raise ConfigError(f"{world_dir}: expected one world folder, found {len(worlds)}")
    return worlds[0]


def default_route(world: World, hops: int) -> list[str]:
    """The first task's reference route, else a walk that keeps going as straight as it can."""
    if world.episodes and len(world.episodes[0].reference_path) > 1:
        return list(world.episodes[0].reference_path[:hops + 1])
    graph, actions = world.graph, ActionModel(world.graph)
    route = [sorted(graph.nodes)[0]]
    heading: Optional[float] = None
    while len(route) <= hops:
        moves = [m for m in actions.moves(route[-1]) if m.edge.target not in route]
        if not moves:
            break
        best = min(moves, key=lambda m: 0.0 if heading is None else abs(((m.heading - heading) + 180) % 360 - 180))
        route.append(best.edge.target)
        heading = best.edge.azimuth
    return route


def _samples(graph: StreetGraph, route: Sequence[str], step_m: float) -> list[tuple[float, float, float]]:
    """(lat, lon, heading) every step_m metres along straight hops; the heading is the hop's bearing."""
    out: list[tuple[float, float, float]] = []
    for a, b in zip(route, route[1:]):
        na, nb = graph.nodes[a], graph.nodes[b]
        bearing = initial_bearing_deg(na.lat, na.lon, nb.lat, nb.lon)
        length = geodesic_m(na.lat, na.lon, nb.lat, nb.lon)
        count = max(1, math.ceil(length / step_m - 1e-9))  # no float drift in how many fit
        out += [(*destination(na.lat, na.lon, bearing, k * step_m), bearing) for k in range(count)]
    last = graph.nodes[route[-1]]
    out.append((last.lat, last.lon, out[-1][2] if out else last.heading))
    return out


def render_drive(world_dir: Path, out_dir: Path, route: Optional[Sequence[str]] = None, hops: int = 3,
                 speed_m_s: float = 4.0, fps: float = 5.0, width: int = 512, gnss_sigma_m: float = 1.0,
                 seed: int = 0) -> Drive:
    """Render `drive.avi` (equirectangular, centre column along the direction of walking) and
    `drive_fixes.csv`. Each frame's camera is a graph node of its own, placed on the walker, so
    the renderer's public panorama call draws it; the world's graph is left untouched."""
    from cityseeker_ros.core.render import Renderer, RenderSettings
    from cityseeker_ros.core.worlds.folder import load_scene

    if width < 16 or width % 2:
        raise ConfigError(f"render_drive: width must be an even number of pixels >= 16, got {width}")
    if not (speed_m_s > 0 and fps > 0):
        raise ConfigError(f"render_drive: speed_m_s and fps must be positive, got {speed_m_s}, {fps}")
    world = load_world(world_dir)
    route = list(route) if route else default_route(world, hops)
    missing = [n for n in route if n not in world.graph.nodes]
    if len(route) < 2 or missing:
        raise ConfigError(f"render_drive: route needs two or more nodes of the world; got {route} "
                          f"(unknown: {missing})")
    samples = _samples(world.graph, route, speed_m_s / fps)
    cams = [Node(f"__camera_{i:05d}", lat, lon, heading, ()) for i, (lat, lon, heading) in enumerate(samples)]
    graph = StreetGraph(list(world.graph.nodes.values()) + cams, world.graph.edges, name=world.graph.name)
    renderer = Renderer(load_scene(Path(world_dir)), graph, RenderSettings())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    video, fixes = out_dir / "drive.avi", out_dir / "drive_fixes.csv"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), float(fps), (width, width // 2))
    if not writer.isOpened():
        raise ConfigError(f"render_drive: OpenCV cannot write MJPG video to {video}")
    rng = np.random.default_rng(seed)
    try:
        with fixes.open("w", newline="") as f:
            table = csv.writer(f)
            table.writerow(FIX_FIELDS)
            for i, cam in enumerate(cams):
                pano = renderer.panorama(cam.id, width=width, height=width // 2).image
                writer.write(cv2.cvtColor(pano, cv2.COLOR_RGB2BGR))
                # GNSS noise: a random direction, a Rayleigh-ish distance with the given sigma per axis
                north, east = rng.normal(0.0, gnss_sigma_m, 2)
                lat, lon = destination(cam.lat, cam.lon, float(np.degrees(np.arctan2(east, north))),
                                       float(np.hypot(north, east)))
                table.writerow([i, f"{START_STAMP + i / fps:.6f}", repr(lat), repr(lon), repr(cam.lat),
                                repr(cam.lon), f"{cam.heading:.6f}"])
    finally:
        writer.release()
    return Drive(video, fixes, tuple(route), len(cams), float(fps))


def read_fixes(path: Path) -> list[dict[str, float]]:
    with Path(path).open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or set(FIX_FIELDS) - set(rows[0]):
        raise ConfigError(f"{path}: expected a CSV with columns {', '.join(FIX_FIELDS)}")
    return [{k: float(v) for k, v in row.items()} for row in rows]


def _episode(world: World, route: Sequence[str]) -> Episode:
    if world.episodes:
        return world.episodes[0]
    return Episode("camera-demo-0", world.city, "Basic POI", "easy", "Find a cafe.", "cafe", route[0], route[-1],
                   tuple(route))


def run_pipeline(world_dir: Path, video: Path, fixes: Path, out: Path, policy: str = "random",
                 policy_params: Optional[dict[str, Any]] = None, seed: int = 0, view_width: int = 320,
                 view_height: int = 240, max_steps: int = 35, echo: bool = True) -> list[dict[str, Any]]:
    """Run the camera chain over a recorded drive; one JSON line per view set, with its guidance."""
    world = load_world(world_dir)
    rows = read_fixes(fixes)
    frames = {"source": "video", "uri": str(video), "start_stamp": rows[0]["stamp"]}
    source = make_frame_source("equirect", world, {"frames": frames, "width": view_width, "height": view_height})
    agent = make_policy(policy, **(policy_params or {}))
    agent.prepare()
    episode = _episode(world, [world.graph.nearest_nodes(rows[0]["lat"], rows[0]["lon"], 1)[0][0]])
    agent.reset(episode, episode_rng(seed, episode.episode_id), world if agent.privileged else None)
    localiser = GraphLocaliser(world.graph)
    builder = ViewSetBuilder(source, world, max_steps)
    builder.start(RunTask((episode.episode_id, seed), episode.episode_id, episode.instruction))
    actions = ActionModel(world.graph)
    records: list[dict[str, Any]] = []
    try:
        with Path(out).open("w") as sink:
            for row in rows:
                loc = localiser.update(row["lat"], row["lon"], None, row["stamp"])
                try:
                    observation = builder.offer(loc)
                except FrameError as exc:  # e.g. no heading yet: the next fix tries again
                    records.append({"frame": int(row["frame"]), "node": loc.node_id, "error": str(exc)})
                    continue
                if observation is None:
                    continue
                decision = agent.decide(observation)
                guidance = guide_action(world.graph, observation.node, decision.action, loc.heading_deg,
                                        decision.rationale, decision.confidence, actions)
                record = {"frame": int(row["frame"]), "stamp": row["stamp"], "node": observation.node,
                          "step": observation.step, "status": loc.status.value, "device_heading_deg": loc.heading_deg,
                          "views": [{"heading": v.heading, "relative": v.relative.value,
                                     "shape": list(np.shape(v.image)) if v.image is not None else None}
                                    for v in observation.views],
                          "guidance": guidance.as_dict()}
                records.append(record)
                sink.write(json.dumps(record) + "\n")
                if echo:
                    print(f"frame {record['frame']:4d} node {observation.node}: {guidance.text}")
    finally:
        source.close()
    return records


def main(world: Path, out_dir: Path, policy: str = "random", hops: int = 3, fps: float = 5.0,
         width: int = 512, seed: int = 0) -> list[dict[str, Any]]:
    drive = render_drive(world, out_dir, hops=hops, fps=fps, width=width, seed=seed)
    print(f"rendered {drive.frames} frames along {' -> '.join(drive.route)}: {drive.video}")
    return run_pipeline(world, drive.video, drive.fixes, Path(out_dir) / "guidance.jsonl", policy, seed=seed)
