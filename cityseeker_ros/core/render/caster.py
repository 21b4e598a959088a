"""Column ray casting over extruded walls, with every depth layer that shows.

Each wall near the camera is split into (wall, column) pairs, one per image column its ends
span, and each pair covers the rows between its foot and its top. Walls stand on the ground,
so within a column a farther wall can only show above the highest top of the nearer ones:
sorting pairs by (column, depth) and taking a running minimum of tops per column gives every
visible piece, so a tower behind a low block rises above it. Rows no wall covers are sky or
ground. Walls lower than the eye also keep their back faces, whose visible part is the roof.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cityseeker_ros.core.render.camera import NEAR_M, Pose, expand, intersect, row_range
from cityseeker_ros.core.render.walls import WallSet


@dataclass(frozen=True)
class WallLayer:
    """Visible wall spans of one view. Span k covers rows [y0[k], y1[k]) of column col[k].

    Pixels are kept column-major, as the caster makes them: `label[c, r]` is the span at column c,
    row r, or -1 where no wall shows, and `run_label`/`run_length` are the same as runs down the
    columns, so per-span values become per-pixel ones with one np.repeat (much cheaper than a
    gather). `t` and `s` carry one extra trailing entry for label -1 (t = inf: nothing there)."""

    label: np.ndarray  # (W, H) int32
    run_label: np.ndarray
    run_length: np.ndarray
    col: np.ndarray
    y0: np.ndarray
    y1: np.ndarray
    t: np.ndarray  # (n + 1,) ray parameter
    s: np.ndarray  # position along the wall, 0..1
    wall: np.ndarray  # index into WallSet
    back: np.ndarray  # True for a back face, seen as the roof of a wall lower than the eye
    near_p0: np.ndarray  # (W, 2) the nearest building wall per column, relative to the camera, for pavements:
    near_dir: np.ndarray  # (W, 2) its unit direction
    near_len: np.ndarray  # (W,) and its length (-1 where the column meets no building)


def cast_walls(pose: Pose, walls: WallSet, max_distance_m: float) -> WallLayer:
    m = pose.model
    width, height = m.width, m.height
    idx = walls.near(pose.x, pose.y, max_distance_m)
    facing = ((pose.x - walls.p0[idx, 0]) * walls.normal[idx, 0]
              + (pose.y - walls.p0[idx, 1]) * walls.normal[idx, 1]) > 1e-9
    low = walls.height[idx] < pose.eye_m + 0.05
    idx, back = idx[facing | low], ~facing[facing | low]
    c0, c1 = pose.column_spans(walls.p0[idx], walls.p1[idx])
    item, col = expand(c0, c1, width, wrap=m.kind == "panorama")
    wall = idx[item]
    t, s = intersect(pose, walls.p0[wall], walls.d[wall], col)
    keep = np.isfinite(t) & (t > NEAR_M) & (t * m.col_norm[col] <= max_distance_m)
    wall, col, t, s, back = wall[keep], col[keep], t[keep], s[keep], back[item[keep]]
    top, bottom = row_range(m, (walls.height[wall] - pose.eye_m) / t, -pose.eye_m / t)

    order = np.lexsort((t, col))
    wall, col, t, s, back, top, bottom = (a[order] for a in (wall, col, t, s, back, top, bottom))
    big = height + 2
    running = np.minimum.accumulate(top - col * big) + col * big  # per-column min of tops so far
    above = np.full(len(top), height, np.int64)  # rows nearer walls leave free: [0, above)
    if len(top):
        same = col[1:] == col[:-1]
        above[1:] = np.where(same, running[:-1], height)
    y1 = np.minimum(bottom, above)
    near_p0, near_dir, near_len = _nearest_building_wall(pose, walls, wall, col, back, width)

    vis = y1 > top
    wall, col, t, s, back, y0, y1 = wall[vis], col[vis], t[vis], s[vis], back[vis], top[vis], y1[vis]
    order = np.lexsort((y0, col))  # top to bottom within each column, for run-length labelling
    wall, col, t, s, back, y0, y1 = (a[order] for a in (wall, col, t, s, back, y0, y1))
    run_label, run_length = _runs(col, y0, y1, width, height)
    label = np.repeat(run_label, run_length).reshape(width, height)
    return WallLayer(label, run_label, run_length, col, y0, y1, np.append(t, np.inf), np.append(s, 0.0), wall, back,
                     near_p0, near_dir, near_len)


def _nearest_building_wall(pose: Pose, walls: WallSet, wall: np.ndarray, col: np.ndarray, back: np.ndarray,
                           width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p0 = np.full((width, 2), 1e6)
    direction = np.zeros((width, 2))
    length = np.full(width, -1.0)
    front = ~back & ~walls.is_box[wall]
    if front.any():
        cols, first = np.unique(col[front], return_index=True)  # pairs are sorted by depth per column
        w = wall[front][first]
        p0[cols] = walls.p0[w] - (pose.x, pose.y)
        direction[cols] = walls.d[w] / walls.length[w][:, None]
        length[cols] = walls.length[w]
    return p0, direction, length


def _runs(col: np.ndarray, y0: np.ndarray, y1: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Spans sorted by (column, y0) as runs down each column: a gap (-1) before each span, one
    after the last span of every column, so the run lengths of each column sum to `height`."""
    n = len(col)
    counts = np.bincount(col, minlength=width)
    ends = np.cumsum(counts)
    prev_end = np.zeros(n, np.int64)
    if n:
        prev_end[1:] = np.where(col[1:] == col[:-1], y1[:-1], 0)
    last_end = np.zeros(width, np.int64)
    has = counts > 0
    last_end[has] = y1[ends[has] - 1]
    k = np.arange(n, dtype=np.int64)
    run_len = np.empty(2 * n + width, np.int64)
    run_lab = np.full(2 * n + width, -1, np.int32)
    gap = 2 * k + col
    run_len[gap] = y0 - prev_end
    run_len[gap + 1] = y1 - y0
    run_lab[gap + 1] = k
    run_len[2 * ends + np.arange(width)] = height - last_end
    return run_lab, run_len
