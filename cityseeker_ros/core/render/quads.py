"""Textured upright rectangles (sign boards, trees, lamp posts) drawn over the walls.

A quad is a vertical rectangle between two ground points and two heights. Its pixels are
tested against the wall layer's depth (and the ground's) and against each other, nearest
wins, so a board behind a parked car or a tree loses exactly the pixels they cover; the counts
and boxes of the pixels that win are the signs' ground truth.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from cityseeker_ros.core.render.camera import NEAR_M, Pose, expand, intersect, row_range
from cityseeker_ros.core.render.caster import WallLayer
from cityseeker_ros.core.render.compose import haze
from cityseeker_ros.core.render.mipmap import MipTexture
from cityseeker_ros.core.render.palette import HAZE


@dataclass(frozen=True)
class QuadStats:
    """Per quad: visible pixels, their bounding box (x0, y0, x1, y1; x1/y1 exclusive, -1 when
    none; in panoramas x1 runs past the width when the quad straddles the seam), the mean
    projected quad height over columns with a visible pixel, and the quad's whole projected
    area in pixels (in frame or not)."""

    visible: np.ndarray
    bbox: np.ndarray  # (n, 4) int64
    height_px: np.ndarray
    area_px: np.ndarray
    drawn: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # flat indices of pixels drawn


def draw_quads(image: np.ndarray, pose: Pose, layer: WallLayer, left: np.ndarray, right: np.ndarray,
               z0: np.ndarray, z1: np.ndarray, textures: Sequence[Callable[[], MipTexture]],
               max_distance_m: float, unhazed: Optional[np.ndarray] = None) -> QuadStats:
    """Draw quads into `image` (H, W, 3) uint8 in place and report what of each shows.

    `textures[i]()` gives quad i's texture; it is only called for quads with a pixel in front
    of the walls, so boards hidden behind buildings never have their texture drawn. Quads
    flagged in `unhazed` keep their texels' exact colours (landmark crowns, whose identity
    colour a camera must be able to match at any distance)."""
    m = pose.model
    h, w = m.height, m.width
    n = len(left)
    area = _area(pose, left, right, z0, z1)
    if n == 0:
        return QuadStats(np.zeros(0, np.int64), np.zeros((0, 4), np.int64), np.zeros(0), area)
    c0, c1 = pose.column_spans(left, right)
    item, unwrapped = expand(c0, c1, w, wrap=False)  # panorama columns past the seam run on past w
    col = unwrapped % w
    t, s = intersect(pose, left[item], (right - left)[item], col)
    keep = np.isfinite(t) & (t > NEAR_M)
    item, col, unwrapped, t, s = item[keep], col[keep], unwrapped[keep], t[keep], s[keep]
    slope_top, slope_bottom = (z1[item] - pose.eye_m) / t, (z0[item] - pose.eye_m) / t
    first, end = row_range(m, slope_top, slope_bottom)
    if m.kind == "panorama":  # rows are equal angles
        height_px = (np.arctan(slope_top) - np.arctan(slope_bottom)) / m.pixel_rad
    else:  # rows are equal slopes
        height_px = (slope_top - slope_bottom) / m.pixel_rad

    counts = np.maximum(end - first, 0)
    pair = np.repeat(np.arange(len(t)), counts)
    row = first[pair] + np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    front = t[pair] < _scene_depth(pose, layer, row, col[pair])
    pair, row = pair[front], row[front]
    q = item[pair]
    shown = np.bincount(q, minlength=n) > 0
    tallest = np.zeros(n)
    np.maximum.at(tallest, item, height_px)
    levels = [textures[i]().level_for(tallest[i]) if shown[i] else _EMPTY for i in range(n)]
    tex_h = np.array([lv.shape[0] for lv in levels], np.int64)
    tex_w = np.array([lv.shape[1] for lv in levels], np.int64)
    tex_off = np.cumsum([0] + [lv.size for lv in levels[:-1]]).astype(np.int64)
    texels = np.concatenate([lv.ravel() for lv in levels])

    tp = t[pair]
    pcol = col[pair]
    z = pose.eye_m + m.row_slope[row] * tp
    fz = (z1[q] - z) / (z1[q] - z0[q])
    ty = np.clip((fz * tex_h[q]).astype(np.int64), 0, tex_h[q] - 1)
    tx = np.clip((s[pair] * tex_w[q]).astype(np.int64), 0, tex_w[q] - 1)
    texel = texels[tex_off[q] + ty * tex_w[q] + tx]
    opaque = (texel >> np.uint32(24)) >= 128
    pix = row[opaque] * w + pcol[opaque]
    key = tp[opaque] + q[opaque] * 1e-9  # equal depths: the earlier quad wins, on every machine
    nearest = np.full(h * w, np.inf)
    np.minimum.at(nearest, pix, key)
    win = key == nearest[pix]
    pix, texel, q, pair_win = pix[win], texel[opaque][win], q[opaque][win], pair[opaque][win]
    xs = unwrapped[pair_win]
    fade = haze(tp[opaque][win] * m.col_norm[pix % w], max_distance_m)[:, None]
    if unhazed is not None:
        fade = np.where(unhazed[q][:, None], 0.0, fade)
    rgb = texel.view(np.uint8).reshape(-1, 4)[:, :3] * (1.0 - fade) + fade * np.asarray(HAZE, np.float64)
    image.reshape(-1, 3)[pix] = np.minimum(rgb + 0.5, 255.0).astype(np.uint8)

    visible = np.bincount(q, minlength=n)
    ys = pix // w
    bbox = np.array([np.full(n, 2 * w), np.full(n, h), np.full(n, -1), np.full(n, -1)], np.int64)
    np.minimum.at(bbox[0], q, xs)
    np.minimum.at(bbox[1], q, ys)
    np.maximum.at(bbox[2], q, xs + 1)
    np.maximum.at(bbox[3], q, ys + 1)
    past_seam = bbox[0] >= w
    bbox[0, past_seam] -= w
    bbox[2, past_seam] -= w
    bbox[:, visible == 0] = -1
    seen = np.bincount(pair_win, minlength=len(t)) > 0
    shown_cols = np.bincount(item[seen], minlength=n)
    mean_h = np.bincount(item[seen], weights=height_px[seen], minlength=n) / np.maximum(shown_cols, 1)
    return QuadStats(visible, bbox.T.copy(), mean_h, area, pix)


_EMPTY = np.zeros((1, 1), np.uint32)


def _scene_depth(pose: Pose, layer: WallLayer, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Ray parameter of whatever the wall pass drew at each pixel: a wall, the ground, or sky (inf)."""
    m = pose.model
    depth = layer.t[layer.label[col, row]]
    ground = (depth == np.inf) & (row >= m.horizon_row)
    depth[ground] = m.ground_t[row[ground] - m.horizon_row]
    return depth


def _area(pose: Pose, left: np.ndarray, right: np.ndarray, z0: np.ndarray, z1: np.ndarray) -> np.ndarray:
    """Projected area of each whole quad in pixels, as if the image had no edges.

    Perspective: exact for a vertical rectangle (height in pixels is linear in screen x between
    the ends, clipped at the near plane). Panorama: width in columns times mean end height."""
    m = pose.model
    if len(left) == 0:
        return np.zeros(0)
    depth, x = [], []
    for p in (left, right):
        qx, qy = p[:, 0] - pose.x, p[:, 1] - pose.y
        depth.append(qx * pose.fwd[0] + qy * pose.fwd[1])
        x.append(qx * pose.right[0] + qy * pose.right[1])
    (f0, f1), (r0, r1) = depth, x
    if m.kind == "perspective":
        with np.errstate(divide="ignore", invalid="ignore"):
            wt = (NEAR_M - f0) / (f1 - f0)
        rn = r0 + wt * (r1 - r0)
        r0, f0c = np.where(f0 < NEAR_M, rn, r0), np.maximum(f0, NEAR_M)
        r1, f1c = np.where(f1 < NEAR_M, rn, r1), np.maximum(f1, NEAR_M)
        fpx = m.focal_px
        width = np.abs(fpx * r1 / f1c - fpx * r0 / f0c)
        area = width * (z1 - z0) * fpx * (1.0 / f0c + 1.0 / f1c) / 2.0
        return np.where((f0 < NEAR_M) & (f1 < NEAR_M), 0.0, area)
    d0, d1 = np.hypot(f0, r0), np.hypot(f1, r1)
    cos = np.clip((f0 * f1 + r0 * r1) / np.maximum(d0 * d1, 1e-12), -1.0, 1.0)
    columns = np.arccos(cos) / m.pixel_rad  # panoramas have square pixels: pi/H = 2pi/W
    return columns * (z1 - z0) * (1.0 / d0 + 1.0 / d1) / (2.0 * m.pixel_rad)
