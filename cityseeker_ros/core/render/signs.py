"""Where each POI's board hangs: flat on its facade, above the shopfront, within its wall.

A POI's anchor and facing come from the scene; when a wall of its building (or, for POIs
without one, any building) lies under the anchor and faces the same way, the board is laid
flat on that wall and kept within it, so it never sticks out past a corner. Boards that would
overlap on one wall move up a tier. POIs with nothing behind them (a bus stop on the pavement)
get a free-standing board on a pole.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cityseeker_ros.core.render.boards import BOARD_HEIGHT_M, MIN_WIDTH_M, board_width_m
from cityseeker_ros.core.render.hashing import unit_from_key
from cityseeker_ros.core.render.palette import BoardStyle, board_style, generic_word
from cityseeker_ros.core.render.settings import RenderSettings
from cityseeker_ros.core.render.walls import WallSet, point_segment_distance
from cityseeker_ros.core.worlds.scene import Poi

BOARD_BOTTOM_M = 3.2  # just above the shopfront band
POLE_BOARD_BOTTOM_M = 2.2
OFFSET_M = 0.12  # boards stand proud of the wall so the wall never shows through
SNAP_M = 2.0  # how far from the anchor a wall may be and still carry the board
SNAP_COS = math.cos(math.radians(50.0))
TIER_GAP_M = 0.25
MAX_TIERS = 3


@dataclass(frozen=True)
class Board:
    """A placed sign: `left`/`right` are its ends as seen from the front (the side `normal` points to)."""

    poi_id: str
    text: str
    poi_class: str
    style: BoardStyle
    pictogram: str
    left: tuple[float, float]
    right: tuple[float, float]
    normal: tuple[float, float]
    z0: float
    z1: float
    width_m: float
    on_pole: bool

    @property
    def centre(self) -> tuple[float, float]:
        return (self.left[0] + self.right[0]) / 2.0, (self.left[1] + self.right[1]) / 2.0


def is_unsigned(poi: Poi, settings: RenderSettings) -> bool:
    """POIs without a board: unsigned in the scene, or drawn out by `unsigned_fraction`."""
    if not poi.signed:
        return True
    fraction = settings.unsigned_fraction
    return fraction > 0 and unit_from_key("unsigned", settings.seed, poi.id) < fraction


def sign_text(poi: Poi) -> str:
    return poi.label.strip() or generic_word(poi.poi_class)


def place_boards(pois: Sequence[Poi], walls: WallSet, settings: RenderSettings, font_path: str) -> list[Board]:
    """Boards for every signed POI, in scene order (which also decides who moves up a tier)."""
    placed: dict[int, list[tuple[float, float, int]]] = {}  # wall -> (from, to, tier) along it
    boards = []
    for poi in pois:
        if is_unsigned(poi, settings):
            continue
        text = sign_text(poi)
        style, pictogram = board_style(poi.poi_class, poi.brand, poi.name)
        az = math.radians(poi.normal_deg)
        normal = (math.sin(az), math.cos(az))
        ax, ay = float(poi.anchor[0]), float(poi.anchor[1])
        wall = _carrying_wall(poi, walls, ax, ay, normal)
        if wall is None:
            width = board_width_m(text, font_path)
            right = (-normal[1], normal[0])
            cx, cy = ax + normal[0] * OFFSET_M, ay + normal[1] * OFFSET_M
            z0 = POLE_BOARD_BOTTOM_M
            on_pole = True
        else:
            p0, d, length = walls.p0[wall], walls.d[wall], float(walls.length[wall])
            right = (float(d[0]) / length, float(d[1]) / length)
            normal = (float(walls.normal[wall, 0]), float(walls.normal[wall, 1]))
            along = (ax - p0[0]) * right[0] + (ay - p0[1]) * right[1]
            room = length - 0.3
            width = board_width_m(text, font_path, room if room >= MIN_WIDTH_M else MIN_WIDTH_M)
            if room >= width:
                along = min(max(along, 0.15 + width / 2.0), length - 0.15 - width / 2.0)
            else:
                along = length / 2.0
            cx = float(p0[0]) + right[0] * along + normal[0] * OFFSET_M
            cy = float(p0[1]) + right[1] * along + normal[1] * OFFSET_M
            height = float(walls.height[wall])
            z0 = BOARD_BOTTOM_M if height >= BOARD_BOTTOM_M + BOARD_HEIGHT_M + 0.2 else \
                max(0.4, height - BOARD_HEIGHT_M - 0.15)
            z0 = _free_tier(placed.setdefault(wall, []), along - width / 2.0, along + width / 2.0, z0, height)
            on_pole = False
        half = width / 2.0
        boards.append(Board(
            poi_id=poi.id, text=text, poi_class=poi.poi_class, style=style, pictogram=pictogram,
            left=(cx - right[0] * half, cy - right[1] * half), right=(cx + right[0] * half, cy + right[1] * half),
            normal=normal, z0=z0, z1=z0 + BOARD_HEIGHT_M, width_m=width, on_pole=on_pole))
    return boards


def _carrying_wall(poi: Poi, walls: WallSet, x: float, y: float, normal: tuple[float, float]) -> int | None:
    """The nearest wall within SNAP_M of the anchor that faces roughly the sign's way: one of the
    POI's own building if it has such a wall, else any building's."""
    span = walls.building_edges.get(poi.building_id or "")
    own = np.arange(*span) if span is not None else np.zeros(0, np.int64)
    nearby = walls.near(x, y, SNAP_M)
    for idx in (own, nearby[nearby < walls.n_building_edges]):
        if len(idx) == 0:
            continue
        dist = point_segment_distance(x, y, walls.p0[idx], walls.p1[idx])
        facing = walls.normal[idx, 0] * normal[0] + walls.normal[idx, 1] * normal[1]
        ok = (dist <= SNAP_M) & (facing >= SNAP_COS)
        if ok.any():
            return int(idx[np.flatnonzero(ok)[np.argmin(dist[ok])]])
    return None


def _free_tier(taken: list[tuple[float, float, int]], lo: float, hi: float, z0: float, height: float) -> float:
    """The lowest tier where [lo, hi] overlaps no board already on this wall (or the first, if none fits)."""
    for tier in range(MAX_TIERS):
        z = z0 + tier * (BOARD_HEIGHT_M + TIER_GAP_M)
        if tier and z + BOARD_HEIGHT_M > height - 0.2:
            break
        if all(hi <= a or lo >= b or t != tier for a, b, t in taken):
            taken.append((lo, hi, tier))
            return z
    taken.append((lo, hi, 0))
    return z0
