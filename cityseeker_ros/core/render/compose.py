"""Shading sky, ground and walls: one texel index and two blend weights per pixel.

Every pixel's colour is `texel * a + haze * b`: `a` carries lighting (wall orientation, the
gutter's shadow) and both carry distance haze. Indices come from the packed texture table, so
the frame is finished with one gather and one multiply-add, whatever mix of surfaces it shows.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from cityseeker_ros.core.render.camera import Pose
from cityseeker_ros.core.render.caster import WallLayer
from cityseeker_ros.core.render.clutter import PAVEMENT_M
from cityseeker_ros.core.render.ground import COVER, KERB_LIGHT, GroundMap
from cityseeker_ros.core.render.palette import HAZE
from cityseeker_ros.core.render.skyline import Skyline
from cityseeker_ros.core.render.textures import (
    FACADE_LEVELS,
    GROUND_FLOOR_M,
    GROUND_SIZE,
    GROUND_TEXEL_M,
    ROOF_STYLE,
    TILE,
    TextureTable,
)
from cityseeker_ros.core.render.walls import WallSet

KERB_M = 0.18  # bright kerb stones on the pavement's edge ...
GUTTER_M = 0.15  # ... and a shadowed gutter just beyond
ROOF_SHADE = 0.92
PARAPET_M = 0.4  # a storey needs this much wall above its windows, else that band is plain wall
PARAPET_V = 0.06  # a tile row of plain wall (below the sills) used for parapets
# Mip level k is picked while TILE * metres-per-pixel / floor height < 2 ** (k + 0.5).
_LEVEL_LIMITS = np.array([2.0 ** (k + 0.5) for k in range(FACADE_LEVELS - 1)])


def haze(distance_m: np.ndarray, max_distance_m: float) -> np.ndarray:
    """0 near, 1 at the draw distance: quadratic, so streets stay crisp and the cut is invisible."""
    x = np.minimum(distance_m * (1.0 / max_distance_m), 1.0)
    return x * x


def compose(pose: Pose, layer: WallLayer, walls: WallSet, table: TextureTable, max_distance_m: float,
            ground: Optional[GroundMap] = None, skyline: Optional[Skyline] = None) -> np.ndarray:
    """(H, W, 3) uint8 frame of sky, ground and walls (no signs or clutter sprites yet).

    Works column-major (W, H) like the caster and transposes only the finished colour planes."""
    m = pose.model
    h, w = m.height, m.width
    n = len(layer.col)
    wall = layer.wall
    t = layer.t[:n]
    # Per visible span: texture level, tile base index (with its column), floor height, blend weights.
    style = np.where(layer.back, ROOF_STYLE, walls.style[wall])
    fh = walls.floor_m[wall]
    metres_per_px = t * m.pixel_rad
    if m.kind == "panorama":  # rows cover more wall away from the horizon: size for the span's middle
        s0, s1 = m.row_slope[layer.y0], m.row_slope[layer.y1 - 1]
        metres_per_px = metres_per_px * (1.0 + (s0 * s0 + s1 * s1) / 2.0)
    level = np.searchsorted(_LEVEL_LIMITS, TILE * metres_per_px / fh)
    side = TILE >> level
    u = layer.s[:n] * walls.length[wall] / walls.bay_m[wall]
    tx = np.minimum(((u - np.floor(u)) * side).astype(np.int64), side - 1)
    upper = walls.height[wall] - GROUND_FLOOR_M - PARAPET_M
    full_floors = GROUND_FLOOR_M + fh * np.floor(np.maximum(upper, 0.0) / fh)  # above: plain parapet
    fade = haze(t * m.col_norm[layer.col], max_distance_m)
    shade = np.where(layer.back, ROOF_SHADE, walls.shade[wall])

    def per_pixel(values: np.ndarray, background: float, dtype: type) -> np.ndarray:
        ext = np.append(values, background).astype(dtype)
        return np.repeat(ext[layer.run_label], layer.run_length).reshape(w, h)

    slope = m.row_slope.astype(np.float32)[None, :]
    z = np.float32(pose.eye_m) + slope * per_pixel(t, 0.0, np.float32)
    side_px = per_pixel(side, 1, np.int32)
    v = np.where(z < GROUND_FLOOR_M, z * np.float32(1.0 / GROUND_FLOOR_M) + np.float32(1.0),
                 _frac((z - np.float32(GROUND_FLOOR_M)) * per_pixel(1.0 / fh, 0.0, np.float32)))
    v = np.where(z >= per_pixel(full_floors, 0.0, np.float32), np.float32(PARAPET_V), v)
    row = np.minimum((v * side_px).astype(np.int32), 2 * side_px - 1)
    index = per_pixel(table.facade_offset[style, level] + tx, 0, np.int32) + row * side_px
    bg_index, bg_a, bg_b = _background(pose, layer, table, max_distance_m, ground, skyline)
    is_wall = layer.label >= 0
    index = np.where(is_wall, index, bg_index)
    a = np.where(is_wall, per_pixel(shade * (1.0 - fade), 0.0, np.float32), bg_a)
    b = np.where(is_wall, per_pixel(fade, 0.0, np.float32), bg_b)
    texel = table.texels[index]
    image = np.empty((h, w, 3), np.uint8)
    for c in range(3):  # planar float maths, then a transposing store (cheaper than mixing (H, W, 3) arrays)
        channel = ((texel >> np.uint32(8 * c)) & np.uint32(255)).astype(np.float32)
        channel *= a
        channel += b * np.float32(HAZE[c]) + np.float32(0.5)
        np.minimum(channel, np.float32(255.0), out=channel)
        image[..., c] = channel.T  # float to uint8 truncates: with the + 0.5 above, rounds
    return image


def _frac(x: np.ndarray) -> np.ndarray:
    return x - np.floor(x)


def _background(pose: Pose, layer: WallLayer, table: TextureTable, max_distance_m: float,
                ground_map: Optional[GroundMap] = None,
                skyline: Optional[Skyline] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Texel index and blend weights (W, H) for sky (above the horizon, with the distant skyline)
    and the ground below: its cover from the ground map, else cobbles with pavements along walls."""
    m = pose.model
    w = m.width
    sky = np.broadcast_to((table.sky_offset + m.sky_row_index).astype(np.int32)[None, :], (w, m.horizon_row))
    sky_a = np.ones((w, m.horizon_row), np.float32)
    sky_b = np.zeros((w, m.horizon_row), np.float32)
    if skyline is not None and m.horizon_row:
        sky, sky_a, sky_b = skyline.paint(pose, sky, table)
    level = m.ground_level
    side = (GROUND_SIZE >> level).astype(np.int32)[None, :]
    scale = (1.0 / (GROUND_TEXEL_M * (1 << level))).astype(np.float32)[None, :]
    tile = GROUND_SIZE * GROUND_TEXEL_M
    # Texture coordinates relative to a tile corner near the camera keep float32 exact enough.
    span = tile * np.ceil(2.0 * max_distance_m / tile)
    tg = m.ground_t.astype(np.float32)[None, :]
    ray_x = pose.ray_x.astype(np.float32)[:, None]
    ray_y = pose.ray_y.astype(np.float32)[:, None]
    rel_x = tg * ray_x
    rel_y = tg * ray_y
    ix = ((rel_x + np.float32(pose.x % tile + span)) * scale).astype(np.int32) & (side - 1)
    iy = ((rel_y + np.float32(pose.y % tile + span)) * scale).astype(np.int32) & (side - 1)
    ground = table.ground_offset[level].astype(np.int32)[None, :] + iy * side + ix
    if ground_map is not None:
        cover = ground_map.lookup(pose.x, pose.y, rel_x, rel_y)
        ground += table.cover_delta.astype(np.int32)[cover]
        light = np.where(cover == COVER["kerb"], np.float32(KERB_LIGHT), np.float32(1.0))
    else:
        # Pavement: ground within PAVEMENT_M of the nearest building wall in its column (of the wall
        # segment, not its line, so pavements turn round corners instead of running on past them).
        rel_x -= layer.near_p0[:, 0].astype(np.float32)[:, None]
        rel_y -= layer.near_p0[:, 1].astype(np.float32)[:, None]
        dx = layer.near_dir[:, 0].astype(np.float32)[:, None]
        dy = layer.near_dir[:, 1].astype(np.float32)[:, None]
        along = np.clip(rel_x * dx + rel_y * dy, np.float32(0.0), layer.near_len.astype(np.float32)[:, None])
        rel_x -= along * dx
        rel_y -= along * dy
        off2 = rel_x * rel_x + rel_y * rel_y
        pave = off2 < np.float32(PAVEMENT_M ** 2)
        ground += pave * np.int32(table.pavement_delta)
        light = np.where(pave, np.where(off2 >= np.float32((PAVEMENT_M - KERB_M) ** 2), np.float32(1.12),
                                        np.float32(1.0)),
                         np.where(off2 < np.float32((PAVEMENT_M + GUTTER_M) ** 2), np.float32(0.72), np.float32(1.0)))
    fade = haze(tg * m.col_norm.astype(np.float32)[:, None], max_distance_m).astype(np.float32)
    index = np.concatenate([sky, ground], axis=1)
    a = np.concatenate([sky_a, light * (1.0 - fade)], axis=1)
    b = np.concatenate([sky_b, fade], axis=1)
    return index, a, b
