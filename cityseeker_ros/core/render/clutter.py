"""Street clutter: trees, lamp posts and parked cars that stand between the camera and the signs.

Clutter is a difficulty knob, so where it stands depends only on the street graph, the walls,
the density and the seed: every street edge gets slots every few metres on both sides, and a
hash of (seed, edge, slot, side) decides whether something stands there and what. Objects
keep to the pavement or kerb, measured from the nearest wall across the slot, and never stand
on a panorama node, where the camera is.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.spatial import cKDTree

from cityseeker_ros.core.render.hashing import key64, uniform, value_noise
from cityseeker_ros.core.render.mipmap import MipTexture
from cityseeker_ros.core.render.palette import CAR_COLOURS
from cityseeker_ros.core.render.walls import Box, WallSet
from cityseeker_ros.core.streets.graph import StreetGraph

SLOT_M = 7.0
PAVEMENT_M = 2.2  # must match the pavement band the compositor draws along walls
MIN_OFFSET_M = 2.4  # nothing closer to the street's centre line than this
CAR_SIZE_M = (4.2, 1.8, 1.45)
SPRITES = {"tree": (3.6, 6.5), "lamp": (0.9, 5.6)}  # width, height in metres


@dataclass(frozen=True)
class Sprite:
    """A camera-facing billboard standing on the ground at (x, y)."""

    kind: str
    x: float
    y: float
    width_m: float
    height_m: float


def place_clutter(graph: StreetGraph, node_xy: Mapping[str, tuple[float, float]], walls: WallSet,
                  density: float, seed: int) -> tuple[list[Sprite], list[Box]]:
    if density <= 0 or len(graph.edges) == 0:
        return [], []
    pairs = sorted({(min(e.source, e.target), max(e.source, e.target)) for e in graph.edges})
    pts, dirs, sides, keys = [], [], [], []
    for a, b in pairs:
        (ax, ay), (bx, by) = node_xy[a], node_xy[b]
        length = math.hypot(bx - ax, by - ay)
        n = int((length - 2.0) // SLOT_M)
        if n <= 0:
            continue
        ux, uy = (bx - ax) / length, (by - ay) / length
        edge_key = key64("edge", a, b) & 0x7FFFFFFFFFFF
        for k in range(n):
            along = (k + 0.5) * length / n
            for side in (-1, 1):
                pts.append((ax + ux * along, ay + uy * along))
                dirs.append((uy * side, -ux * side))
                sides.append((ux, uy))
                keys.append((edge_key, k * 2 + (side > 0)))
    if not pts:
        return [], []
    p, d, u = np.array(pts), np.array(dirs), np.array(sides)
    key = np.array(keys, np.int64)
    chance = uniform(seed, key[:, 0], key[:, 1], 1)
    kind_roll = uniform(seed, key[:, 0], key[:, 1], 2)
    look_roll = uniform(seed, key[:, 0], key[:, 1], 3)
    chosen = chance < 0.55 * density
    p, d, u, kind_roll, look_roll = p[chosen], d[chosen], u[chosen], kind_roll[chosen], look_roll[chosen]
    to_wall = _distance_to_walls(walls, p, d, 30.0)
    node_tree = cKDTree(np.array([node_xy[i] for i in sorted(node_xy)])) if node_xy else None
    sprites: list[Sprite] = []
    boxes: list[Box] = []
    for i in range(len(p)):
        w = to_wall[i]
        if kind_roll[i] < 0.65:
            kind = "tree" if kind_roll[i] < 0.4 else "lamp"
            offset = w - 1.2 if np.isfinite(w) else 6.0
            clearance = 2.5
        else:
            kind = "car"
            offset = w - PAVEMENT_M - CAR_SIZE_M[1] / 2.0 - 0.25 if np.isfinite(w) else 5.0
            clearance = 3.2
        if offset < MIN_OFFSET_M:
            continue
        x, y = float(p[i, 0] + d[i, 0] * offset), float(p[i, 1] + d[i, 1] * offset)
        if node_tree is not None and node_tree.query_ball_point((x, y), clearance):
            continue
        scale = 0.8 + 0.4 * float(look_roll[i])
        if kind == "car":
            boxes.append(_car(x, y, float(u[i, 0]), float(u[i, 1]), int(look_roll[i] * len(CAR_COLOURS))))
        else:
            width, height = SPRITES[kind]
            s = scale if kind == "tree" else 1.0
            sprites.append(Sprite(kind, x, y, width * s, height * s))
    return sprites, boxes


def _car(x: float, y: float, ux: float, uy: float, colour: int) -> Box:
    length, width, height = CAR_SIZE_M
    hx, hy = ux * length / 2.0, uy * length / 2.0
    wx, wy = -uy * width / 2.0, ux * width / 2.0
    ring = ((x - hx - wx, y - hy - wy), (x + hx - wx, y + hy - wy), (x + hx + wx, y + hy + wy),
            (x - hx + wx, y - hy + wy))
    return Box(ring, height, colour)


def _distance_to_walls(walls: WallSet, p: np.ndarray, d: np.ndarray, reach: float) -> np.ndarray:
    """Distance along each ray (p, unit d) to the first building wall within `reach`, inf if none."""
    out = np.full(len(p), np.inf)
    if walls.n_building_edges == 0 or len(p) == 0:
        return out
    mids = (walls.p0[:walls.n_building_edges] + walls.p1[:walls.n_building_edges]) / 2.0
    tree = cKDTree(mids)
    near = tree.query_ball_point(p, reach + walls.max_half_length)
    counts = np.array([len(n) for n in near])
    if counts.sum() == 0:
        return out
    ray = np.repeat(np.arange(len(p)), counts)
    seg = np.concatenate([np.sort(np.asarray(n, np.int64)) for n in near if n])
    q = walls.p0[seg] - p[ray]
    dd = walls.d[seg]
    r = d[ray]
    with np.errstate(divide="ignore", invalid="ignore"):
        den = r[:, 0] * dd[:, 1] - r[:, 1] * dd[:, 0]
        t = (q[:, 0] * dd[:, 1] - q[:, 1] * dd[:, 0]) / den
        s = (q[:, 0] * r[:, 1] - q[:, 1] * r[:, 0]) / den
    hit = np.isfinite(t) & (t > 0) & (t <= reach) & (s >= 0) & (s <= 1)
    np.minimum.at(out, ray[hit], t[hit])
    return out


@lru_cache(maxsize=1)
def sprite_textures() -> dict[str, MipTexture]:
    return {"tree": MipTexture(_tree_rgba()), "lamp": MipTexture(_lamp_rgba()), "pole": MipTexture(_pole_rgba())}


def _tree_rgba() -> np.ndarray:
    """A round crown of overlapping leafy blobs on a trunk, transparent around."""
    h, w = 192, 112
    yy, xx = np.mgrid[0:h, 0:w] + 0.5
    blobs = [(0.5, 0.30, 0.42), (0.32, 0.40, 0.28), (0.68, 0.40, 0.28), (0.5, 0.18, 0.30), (0.4, 0.48, 0.22),
             (0.62, 0.50, 0.22)]
    d = np.min([np.sqrt(((xx - cx * w) / (r * w)) ** 2 + ((yy - cy * h) / (r * w)) ** 2) for cx, cy, r in blobs],
               axis=0)
    leaves = value_noise(0x7EE, h, w, 8)
    ragged = d < 0.8 + 0.35 * leaves  # solid inside, leafy at the rim
    shade = np.clip(1.0 - 0.5 * d, 0.0, 1.0)
    green = np.array([62.0, 112.0, 48.0])
    rgb = green[None, None, :] * (0.55 + 0.45 * shade[..., None]) * (0.8 + 0.4 * leaves[..., None])
    trunk = (np.abs(xx - w / 2) < w * 0.045) & (yy > h * 0.5)
    rgb = np.where(trunk[..., None] & ~ragged[..., None], np.array([92.0, 70.0, 52.0]), rgb)
    alpha = np.where(ragged | trunk, 255, 0)
    return np.dstack([np.clip(rgb, 0, 255), alpha]).astype(np.uint8)


def _lamp_rgba() -> np.ndarray:
    """A dark lamp post with an arm and a lamp head at the top."""
    h, w = 192, 32
    yy, xx = np.mgrid[0:h, 0:w] + 0.5
    pole = (np.abs(xx - 9) < 2.2) & (yy > 8)
    arm = (yy > 8) & (yy < 12) & (xx > 9) & (xx < 27)
    head = (yy > 10) & (yy < 16) & (xx > 20) & (xx < 31)
    base = (np.abs(xx - 9) < 3.5) & (yy > h - 14)
    rgb = np.where(head[..., None], np.array([230.0, 226.0, 200.0]), np.array([58.0, 62.0, 66.0]))
    alpha = np.where(pole | arm | head | base, 255, 0)
    return np.dstack([rgb, alpha]).astype(np.uint8)


def _pole_rgba() -> np.ndarray:
    """The post under a free-standing sign."""
    rgba = np.zeros((64, 8, 4), np.uint8)
    rgba[..., :3] = (84, 88, 92)
    rgba[..., 3] = 255
    return rgba
