"""A distant skyline: hazy hills and, for built-up worlds, far city blocks along the horizon.

Real streets never end in a bare horizon; beyond the draw distance there is more city or
terrain. The skyline stands at infinity, so it depends only on the absolute azimuth of a
column (the same silhouette from every node, as a far ridge looks), on the world's origin
(one silhouette per world) and on whether the world is built up. It only darkens sky texels,
so the compositor needs no texture for it, and it never counts as scene content.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from cityseeker_ros.core.render.camera import Pose
from cityseeker_ros.core.render.hashing import key64, uniform
from cityseeker_ros.core.render.textures import SKY_STEPS_PER_DEG, TextureTable

HILL_SHADE = (0.70, 0.08)  # sky texel weight, haze weight: a blue-grey ridge
CITY_SHADE = (0.80, 0.05)  # far blocks, a little paler than the ridge in front of them ... behind
BLOCK_DEG = 1.2
HILL_DEG = (0.35, 1.6)  # the ridge's lowest and highest elevation
CITY_DEG = (0.4, 2.4)


STEPS_PER_DEG = 20  # the silhouette is tabulated every 0.05 degrees of azimuth


class Skyline:
    def __init__(self, origin_lat: float, origin_lon: float, built_up: bool) -> None:
        self.seed = key64("skyline", round(origin_lat, 4), round(origin_lon, 4)) & 0x7FFFFFFF
        self.built_up = built_up
        phase = tuple(2 * math.pi * uniform(self.seed, np.array([k]))[0] for k in range(4))
        self._ridge, self._city = _table(self.seed, phase, built_up)
        self._top = float(max(self._ridge.max(), self._city.max())) * SKY_STEPS_PER_DEG

    def elevations(self, azimuths_deg: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Ridge and city-block elevations in degrees per azimuth."""
        k = np.array([int(a * STEPS_PER_DEG) % (360 * STEPS_PER_DEG) for a in azimuths_deg], np.int64)
        return self._ridge[k], self._city[k]

    def paint(self, pose: Pose, sky: np.ndarray, table: TextureTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sky texel indices and blend weights (W, horizon rows) with the skyline drawn in; only
        the few rows just above the horizon that the silhouette can reach are looked at."""
        m = pose.model
        a = np.ones(sky.shape, np.float32)
        b = np.zeros(sky.shape, np.float32)
        rows = np.flatnonzero(m.sky_row_index < self._top)
        if not len(rows):
            return sky, a, b
        r0 = int(rows.min())
        az = _column_azimuths(m.kind, m.width, m.height, m.fov_deg, round(pose.heading_deg, 9))
        ridge, city = self.elevations(az)
        elev = m.sky_row_index[None, r0:]  # tenths of a degree per row (sky_index)
        hill = elev < (ridge * SKY_STEPS_PER_DEG)[:, None]
        blocks = elev < (city * SKY_STEPS_PER_DEG)[:, None]
        a[:, r0:] = np.where(hill, np.float32(HILL_SHADE[0]), np.where(blocks, np.float32(CITY_SHADE[0]), a[:, r0:]))
        b[:, r0:] = np.where(hill, np.float32(HILL_SHADE[1]), np.where(blocks, np.float32(CITY_SHADE[1]), b[:, r0:]))
        return sky, a, b


@lru_cache(maxsize=64)
def _column_azimuths(kind: str, width: int, height: int, fov_deg: float, heading: float) -> tuple[float, ...]:
    """Absolute azimuth of every column, with Python's math (identical on every CPU)."""
    if kind == "perspective":
        f = (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
        return tuple((heading + math.degrees(math.atan((c + 0.5 - width / 2.0) / f))) % 360.0 for c in range(width))
    return tuple((heading + ((c + 0.5) / width - 0.5) * 360.0) % 360.0 for c in range(width))


@lru_cache(maxsize=8)
def _table(seed: int, phase: tuple[float, ...], built_up: bool) -> tuple[np.ndarray, np.ndarray]:
    """Ridge and city-block elevations (degrees) every 1/STEPS_PER_DEG degree of azimuth."""
    lo, hi = HILL_DEG
    ridge = []
    for k in range(360 * STEPS_PER_DEG):
        r = math.radians(k / STEPS_PER_DEG)
        v = (0.5 * math.sin(2 * r + phase[0]) + 0.3 * math.sin(5 * r + phase[1]) + 0.15 * math.sin(11 * r + phase[2])
             + 0.05 * math.sin(23 * r + phase[3]))
        ridge.append(lo + (hi - lo) * (v + 1.0) / 2.0)
    ridge_arr = np.array(ridge)
    if not built_up:
        return ridge_arr, np.zeros_like(ridge_arr)
    block = np.arange(360 * STEPS_PER_DEG, dtype=np.int64) // int(BLOCK_DEG * STEPS_PER_DEG)
    u = uniform(seed, block)
    city = np.where(u < 0.25, 0.0, CITY_DEG[0] + (CITY_DEG[1] - CITY_DEG[0]) * u * u)
    return ridge_arr, city
