"""The scene's walls as flat arrays: one row per footprint edge, ready for vectorised casting.

Footprints are extruded from the ground to their height. Each edge keeps its outward normal
(so walls facing away from the camera can be skipped: a closed footprint always shows a
nearer, front-facing wall instead) and what its texture needs: facade style, floor height
and a bay width that fits a whole number of window bays into the wall.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from cityseeker_ros.core.render.palette import facade_style_index
from cityseeker_ros.core.render.textures import CAR_STYLE0, GROUND_FLOOR_M
from cityseeker_ros.core.worlds.scene import Building

BAY_M = 3.4  # nominal window bay width
DEFAULT_FLOOR_M = 3.2
SUN_AZIMUTH_DEG = 200.0  # light from the south-south-west, so the four sides of a block differ


@dataclass(frozen=True)
class Box:
    """A low obstacle that is not a building (a parked car): extruded like one, car-textured."""

    footprint: tuple[tuple[float, float], ...]
    height_m: float
    colour: int  # index into palette.CAR_COLOURS


class WallSet:
    """Every wall edge of the scene, plus boxes, with a spatial index over edge midpoints."""

    def __init__(self, buildings: Sequence[Building], boxes: Sequence[Box] = ()) -> None:
        p0, p1, height, style, floor_m, owner = [], [], [], [], [], []
        self.building_ids: list[str] = []
        self.building_edges: dict[str, tuple[int, int]] = {}
        for b in buildings:
            ring = _ccw_ring(b.footprint)
            if ring is None or not (b.height_m > 0):
                continue
            start = len(p0)
            fh = _floor_height(b.height_m, b.levels)
            for a, c in zip(ring, ring[1:] + ring[:1]):
                if math.hypot(c[0] - a[0], c[1] - a[1]) < 1e-3:
                    continue
                p0.append(a)
                p1.append(c)
                height.append(b.height_m)
                style.append(facade_style_index(b.style, b.height_m))
                floor_m.append(fh)
                owner.append(len(self.building_ids))
            self.building_edges[b.id] = (start, len(p0))
            self.building_ids.append(b.id)
        self.n_building_edges = len(p0)
        for box in boxes:
            ring = _ccw_ring(box.footprint)
            if ring is None:
                continue
            for a, c in zip(ring, ring[1:] + ring[:1]):
                p0.append(a)
                p1.append(c)
                height.append(box.height_m)
                style.append(CAR_STYLE0 + box.colour)
                floor_m.append(DEFAULT_FLOOR_M)
                owner.append(-1)
        self.p0 = np.array(p0, np.float64).reshape(-1, 2)
        self.p1 = np.array(p1, np.float64).reshape(-1, 2)
        self.d = self.p1 - self.p0
        self.length = np.sqrt(self.d[:, 0] ** 2 + self.d[:, 1] ** 2)  # sqrt is exact everywhere; hypot is libm's
        safe = np.where(self.length > 0, self.length, 1.0)
        self.normal = np.stack([self.d[:, 1], -self.d[:, 0]], axis=1) / safe[:, None]  # right of travel = outside
        self.height = np.array(height, np.float64)
        self.style = np.array(style, np.int64)
        self.floor_m = np.array(floor_m, np.float64)
        self.owner = np.array(owner, np.int64)
        self.is_box = np.arange(len(self.p0)) >= self.n_building_edges
        bays = np.maximum(1.0, np.round(self.length / BAY_M))
        self.bay_m = np.where(self.length >= 1.6, self.length / bays, 1e6)  # short walls: plain plaster
        sun = (math.sin(math.radians(SUN_AZIMUTH_DEG)), math.cos(math.radians(SUN_AZIMUTH_DEG)))
        self.shade = 0.86 + 0.14 * (self.normal[:, 0] * sun[0] + self.normal[:, 1] * sun[1])
        mid = (self.p0 + self.p1) / 2.0
        self.max_half_length = float(self.length.max() / 2.0) if len(self.length) else 0.0
        self._tree = cKDTree(mid) if len(mid) else None

    def __len__(self) -> int:
        return len(self.p0)

    def near(self, x: float, y: float, radius: float) -> np.ndarray:
        """Sorted indices of walls with any point within `radius` of (x, y)."""
        if self._tree is None:
            return np.zeros(0, np.int64)
        idx = np.array(sorted(self._tree.query_ball_point((x, y), radius + self.max_half_length)), np.int64)
        if len(idx) == 0:
            return idx
        return idx[point_segment_distance(x, y, self.p0[idx], self.p1[idx]) <= radius]


def point_segment_distance(x: float, y: float, p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    d = p1 - p0
    l2 = np.maximum((d * d).sum(axis=1), 1e-12)
    s = np.clip(((x - p0[:, 0]) * d[:, 0] + (y - p0[:, 1]) * d[:, 1]) / l2, 0.0, 1.0)
    return np.sqrt((p0[:, 0] + s * d[:, 0] - x) ** 2 + (p0[:, 1] + s * d[:, 1] - y) ** 2)


def _ccw_ring(footprint: Sequence[Sequence[float]]) -> list[tuple[float, float]] | None:
    """The ring counter-clockwise and without a closing point, whatever the input did."""
    ring = [(float(p[0]), float(p[1])) for p in footprint]
    if len(ring) >= 2 and ring[0] == ring[-1]:
        ring = ring[:-1]
    if len(ring) < 3:
        return None
    area2 = sum(a[0] * c[1] - c[0] * a[1] for a, c in zip(ring, ring[1:] + ring[:1]))
    if abs(area2) < 1e-6:
        return None
    return ring if area2 > 0 else ring[::-1]


def _floor_height(height_m: float, levels: int) -> float:
    """Floor height above the shopfront, so `levels` storeys fill the building when plausible."""
    if levels and levels >= 2 and height_m > GROUND_FLOOR_M:
        fh = (height_m - GROUND_FLOOR_M) / (levels - 1)
        if 2.6 <= fh <= 4.5:
            return fh
    return DEFAULT_FLOOR_M
