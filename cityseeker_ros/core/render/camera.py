"""Cameras as per-column rays and per-row slopes.

Both cameras keep vertical lines vertical (pitch 0), so a pixel (row i, column c) sees the
point `eye + t * ray[c]` lifted by `t * slope[i]`: `t` is the ray parameter where the column's
horizontal ray meets a wall, and a point at height z appears in the rows whose slope lies
between the wall's bottom and top slopes. For the perspective camera ray[c] has unit forward
component, so t is depth along the view axis; for the equirectangular panorama ray[c] is a unit
vector, so t is ground distance. One caster then serves both.

Transcendental functions are only evaluated here, in Python's `math`, on at most one value per
row or column: NumPy's SIMD versions may differ in the last bit between CPUs, and these values
decide pixel boundaries, which must be identical everywhere for byte-exact renders.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cityseeker_ros.core.render.textures import GROUND_LEVELS, GROUND_TEXEL_M, sky_index

NEAR_M = 0.05


@dataclass(frozen=True)
class CameraModel:
    """The pose-independent part of a camera: image size and ray geometry per column and row."""

    kind: str  # "perspective" or "panorama"
    width: int
    height: int
    fov_deg: float
    focal_px: float  # perspective only; 0 for panoramas
    col_fwd: np.ndarray  # (W,) forward component of each column's ray
    col_right: np.ndarray  # (W,) rightward component
    col_norm: np.ndarray  # (W,) length of the ray: ground distance per unit t
    row_slope: np.ndarray  # (H,) height gain per unit t, decreasing down the image
    neg_slope: np.ndarray  # (H,) -row_slope, ascending, for searchsorted
    horizon_row: int  # first row that looks down at the ground
    sky_row_index: np.ndarray  # (horizon_row,) sky table offsets
    ground_t: np.ndarray  # (H - horizon_row,) ray parameter where each ground row meets z = 0
    ground_level: np.ndarray  # (H - horizon_row,) ground mip level per row
    pixel_rad: float  # angular size of a pixel: metres per pixel = t * pixel_rad (vertically)


@lru_cache(maxsize=16)
def camera_model(kind: str, width: int, height: int, fov_deg: float, eye_m: float) -> CameraModel:
    if kind == "perspective":
        f = (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
        col_fwd = np.ones(width)
        col_right = (np.arange(width) + 0.5 - width / 2.0) / f
        slopes = [(height / 2.0 - i - 0.5) / f for i in range(height)]
        elevations = [math.degrees(math.atan(v)) for v in slopes]
        pixel_rad = 1.0 / f
    elif kind == "panorama":
        f = 0.0
        az = [((c + 0.5) / width - 0.5) * 2.0 * math.pi for c in range(width)]
        col_fwd = np.array([math.cos(a) for a in az])
        col_right = np.array([math.sin(a) for a in az])
        elevations = [(0.5 - (i + 0.5) / height) * 180.0 for i in range(height)]
        slopes = [math.tan(math.radians(e)) for e in elevations]
        pixel_rad = math.pi / height
    else:
        raise ValueError(kind)
    row_slope = np.array(slopes)
    horizon = next((i for i, v in enumerate(slopes) if v < 0.0), height)  # rows above never see the ground
    ground_t, ground_level = [], []
    for i in range(horizon, height):
        v = slopes[i]
        t = eye_m / -v
        v_next = slopes[i + 1] if i + 1 < height else v - (slopes[i - 1] - v if i > 0 else 1.0)
        along = abs(eye_m / -v_next - t) if v_next < 0 else t  # metres of ground per row
        across = t * pixel_rad
        footprint = math.sqrt(max(along, 1e-9) * across)
        level = math.floor(math.log2(max(footprint / GROUND_TEXEL_M, 1e-9)) + 0.5)
        ground_t.append(t)
        ground_level.append(min(GROUND_LEVELS - 1, max(0, level)))
    return CameraModel(
        kind=kind, width=width, height=height, fov_deg=fov_deg, focal_px=f,
        col_fwd=col_fwd, col_right=col_right, col_norm=np.sqrt(col_fwd * col_fwd + col_right * col_right),
        row_slope=row_slope, neg_slope=-row_slope, horizon_row=horizon,
        sky_row_index=np.array([sky_index(e) for e in elevations[:horizon]], np.int64),
        ground_t=np.array(ground_t), ground_level=np.array(ground_level, np.int64), pixel_rad=pixel_rad)


@dataclass(frozen=True)
class Pose:
    """A camera model placed in the scene: world rays per column for this position and heading."""

    model: CameraModel
    x: float
    y: float
    eye_m: float
    heading_deg: float
    ray_x: np.ndarray  # (W,)
    ray_y: np.ndarray  # (W,)
    fwd: tuple[float, float]
    right: tuple[float, float]

    @classmethod
    def at(cls, model: CameraModel, x: float, y: float, eye_m: float, heading_deg: float) -> Pose:
        h = math.radians(heading_deg)
        fwd = (math.sin(h), math.cos(h))
        right = (math.cos(h), -math.sin(h))
        ray_x = model.col_fwd * fwd[0] + model.col_right * right[0]
        ray_y = model.col_fwd * fwd[1] + model.col_right * right[1]
        return cls(model, x, y, eye_m, heading_deg, ray_x, ray_y, fwd, right)

    def column_spans(self, p0: np.ndarray, p1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First and last column (inclusive) whose ray centre falls between each segment's ends.

        Perspective spans are clipped to the image (empty when c0 > c1); panorama spans may run
        past the right edge and wrap (take columns modulo W)."""
        m = self.model
        qx0, qy0 = p0[:, 0] - self.x, p0[:, 1] - self.y
        qx1, qy1 = p1[:, 0] - self.x, p1[:, 1] - self.y
        f0 = qx0 * self.fwd[0] + qy0 * self.fwd[1]
        f1 = qx1 * self.fwd[0] + qy1 * self.fwd[1]
        r0 = qx0 * self.right[0] + qy0 * self.right[1]
        r1 = qx1 * self.right[0] + qy1 * self.right[1]
        if m.kind == "perspective":
            behind0, behind1 = f0 < NEAR_M, f1 < NEAR_M
            with np.errstate(divide="ignore", invalid="ignore"):
                w = (NEAR_M - f0) / (f1 - f0)  # where the segment crosses the near plane
                rn = r0 + w * (r1 - r0)
                r0c, f0c = np.where(behind0, rn, r0), np.where(behind0, NEAR_M, f0)
                r1c, f1c = np.where(behind1, rn, r1), np.where(behind1, NEAR_M, f1)
                x0 = m.width / 2.0 + m.focal_px * r0c / f0c
                x1 = m.width / 2.0 + m.focal_px * r1c / f1c
            lo, hi = np.minimum(x0, x1), np.maximum(x0, x1)
            lo = np.clip(lo, -1.0, m.width + 1.0)
            hi = np.clip(hi, -1.0, m.width + 1.0)
            c0 = np.maximum(np.ceil(lo - 0.5), 0).astype(np.int64)
            c1 = np.minimum(np.floor(hi - 0.5), m.width - 1).astype(np.int64)
            c1 = np.where(behind0 & behind1, -1, c1)
            return c0, c1
        scale = m.width / (2.0 * math.pi)
        x0 = np.arctan2(r0, f0) * scale + m.width / 2.0
        x1 = np.arctan2(r1, f1) * scale + m.width / 2.0
        dx = x1 - x0
        wrap = np.abs(dx) > m.width / 2.0  # the short way round crosses the seam behind the camera
        x0 = np.where(wrap & (x0 < x1), x0 + m.width, x0)
        x1 = np.where(wrap & (x1 < x0), x1 + m.width, x1)
        lo, hi = np.minimum(x0, x1), np.maximum(x0, x1)
        return np.ceil(lo - 0.5).astype(np.int64), np.floor(hi - 0.5).astype(np.int64)


def expand(c0: np.ndarray, c1: np.ndarray, width: int, wrap: bool) -> tuple[np.ndarray, np.ndarray]:
    """(item, column) pairs for inclusive column spans, items in order, columns ascending."""
    counts = np.maximum(c1 - c0 + 1, 0)
    total = int(counts.sum())
    item = np.repeat(np.arange(len(c0)), counts)
    starts = np.cumsum(counts) - counts
    col = np.arange(total, dtype=np.int64) - np.repeat(starts - c0, counts)
    if wrap:
        col %= width
    return item, col


def intersect(pose: Pose, p0: np.ndarray, d: np.ndarray, col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ray parameter t and position s in [0, 1] along each segment for (segment, column) pairs."""
    rx, ry = pose.ray_x[col], pose.ray_y[col]
    qx, qy = p0[:, 0] - pose.x, p0[:, 1] - pose.y
    with np.errstate(divide="ignore", invalid="ignore"):
        den = rx * d[:, 1] - ry * d[:, 0]
        t = (qx * d[:, 1] - qy * d[:, 0]) / den
        s = (qx * ry - qy * rx) / den
    return t, np.clip(s, 0.0, 1.0)


def row_range(model: CameraModel, slope_top: np.ndarray, slope_bottom: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows [first, end) whose centres see between two slopes (end exclusive, both in [0, H])."""
    first = np.searchsorted(model.neg_slope, -slope_top, side="left")
    end = np.searchsorted(model.neg_slope, -slope_bottom, side="left")
    return first.astype(np.int64), end.astype(np.int64)
