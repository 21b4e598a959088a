"""The street graph a Seek stands on: one of the worlds the live run loaded (the nearest to the
vehicle), or a world built from an OSM extract around the vehicle's position (a field trial in
a place no world folder covers). The SeekSession then checks the vehicle is on that graph."""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.tasks.episode import World
from cityseeker_ros.core.worlds.osm import build_osm_world

MAX_RADIUS_M = 5000.0  # the build reads the extract once; a seek walks at most a few km


def world_for_position(worlds: Sequence[World], lat: float, lon: float) -> World:
    """The loaded world whose street graph lies nearest the position."""
    if not worlds:
        raise ConfigError("no world is loaded: set parameter data to a world folder")
    return min(worlds, key=lambda w: w.graph.nearest_nodes(lat, lon, 1)[0][1] if len(w.graph) else math.inf)


def world_around(pbf: Path, lat: float, lon: float, radius_m: float = 1000.0, spacing_m: float = 20.0,
                 name: str = "seek") -> World:
    """A world (street graph only: no tasks, no target sets) built from the OSM extract `pbf`
    inside the square of half-side `radius_m` around (lat, lon)."""
    if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
        raise ConfigError(f"position must be a finite (lat, lon) in degrees, got ({lat!r}, {lon!r})")
    if not (isinstance(radius_m, (int, float)) and math.isfinite(radius_m) and 0 < radius_m <= MAX_RADIUS_M):
        raise ConfigError(f"radius_m must be in (0, {MAX_RADIUS_M:g}] metres, got {radius_m!r}")
    north, east = destination(lat, lon, 0.0, radius_m), destination(lat, lon, 90.0, radius_m)
    south, west = destination(lat, lon, 180.0, radius_m), destination(lat, lon, 270.0, radius_m)
    built = build_osm_world(Path(pbf), name=name, bbox=(west[1], south[0], east[1], north[0]), spacing_m=spacing_m)
    return World(city=name, graph=built.graph, episodes=[], category_targets={})
