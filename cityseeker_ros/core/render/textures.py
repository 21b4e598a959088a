"""Procedural textures: sky gradient, cobbled ground, facade tiles, packed into one lookup table.

Every surface pixel of a view is one index into `TextureTable.texels` (packed RGBA uint32),
so shading a whole frame is a single gather. Textures come with power-of-two mip levels made
by exact box averaging; the caster picks a level per wall column and per ground row so
distant windows and cobbles fade to their mean colour instead of shimmering.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cityseeker_ros.core.render.hashing import uniform, value_noise
from cityseeker_ros.core.render.palette import (
    CAR_COLOURS,
    GLASS_STYLES,
    PLASTER_STYLES,
    ROOF,
    SKY_HORIZON,
    SKY_ZENITH,
    FacadeStyle,
)

TILE = 128  # facade tile side in texels at level 0 (one bay by one floor)
FACADE_LEVELS = 8  # 128 .. 1
GROUND_SIZE = 512  # ground tile side in texels
GROUND_TEXEL_M = 0.01  # so the ground tile repeats every 5.12 m
GROUND_LEVELS = 10  # 512 .. 1
SKY_STEPS_PER_DEG = 10
GROUND_FLOOR_M = 3.1  # shopfront band height on every building
TEXTURE_SEED = 0x5EED  # textures are part of the look, not of the difficulty seed

FACADE_STYLES: tuple[FacadeStyle, ...] = PLASTER_STYLES + GLASS_STYLES
CAR_STYLE0 = len(FACADE_STYLES)  # car body styles follow the facade styles ...
ROOF_STYLE = CAR_STYLE0 + len(CAR_COLOURS)  # ... then one roof style
N_STYLES = ROOF_STYLE + 1


def pack_rgba(rgb: np.ndarray, alpha: np.ndarray | None = None) -> np.ndarray:
    """(..., 3) uint8-range values to packed little-endian RGBA uint32 (alpha 255 unless given)."""
    rgb = np.clip(np.rint(rgb), 0, 255).astype(np.uint32)
    a = np.full(rgb.shape[:-1], 255, np.uint32) if alpha is None else np.asarray(alpha).astype(np.uint32)
    return rgb[..., 0] | (rgb[..., 1] << 8) | (rgb[..., 2] << 16) | (a << 24)


def box_mips(image: np.ndarray, levels: int) -> list[np.ndarray]:
    """Level 0 plus successive 2x2 box averages (sides must be divisible by 2**(levels-1))."""
    out = [image.astype(np.float64)]
    for _ in range(levels - 1):
        a = out[-1]
        h, w = a.shape[0] // 2, a.shape[1] // 2
        out.append(a.reshape(h, 2, w, 2, *a.shape[2:]).mean(axis=(1, 3)))
    return out


def sky_colour(elevation_deg: float) -> tuple[float, float, float]:
    """Pale at the horizon, deep blue overhead; a power curve keeps most of the sky blue."""
    w = min(1.0, max(0.0, elevation_deg) / 40.0) ** 0.55
    return tuple(h + (z - h) * w for h, z in zip(SKY_HORIZON, SKY_ZENITH))  # type: ignore[return-value]


def _cobbles(seed: int, cell: int, base: tuple[int, int, int], contrast: float, grout: float) -> np.ndarray:
    """A tileable stone pattern: jittered Voronoi cells, each a stone with its own shade."""
    n = GROUND_SIZE // cell
    gy, gx = np.mgrid[0:n, 0:n]
    jx = (gx + 0.15 + 0.7 * uniform(seed, gy, gx, 1)) * cell
    jy = (gy + 0.15 + 0.7 * uniform(seed, gy, gx, 2)) * cell
    py, px = np.mgrid[0:GROUND_SIZE, 0:GROUND_SIZE] + 0.5
    cy, cx = (py // cell).astype(int), (px // cell).astype(int)
    f1 = np.full(py.shape, np.inf)
    f2 = np.full(py.shape, np.inf)
    owner = np.zeros(py.shape, np.int64)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            ny, nx = (cy + dy) % n, (cx + dx) % n
            fx = jx[ny, nx] + (cx + dx - nx) * cell  # the neighbour's point, unwrapped across the seam
            fy = jy[ny, nx] + (cy + dy - ny) * cell
            d = np.sqrt((px - fx) ** 2 + (py - fy) ** 2)  # not hypot: libm versions differ in the last bit
            nearer = d < f1
            f2 = np.where(nearer, f1, np.minimum(f2, d))
            f1 = np.where(nearer, d, f1)
            owner = np.where(nearer, ny * n + nx, owner)
    stone = 1.0 + contrast * (uniform(seed, owner, 3) - 0.5)
    edge = np.clip((f2 - f1) / (grout * cell), 0.0, 1.0)
    bevel = 0.72 + 0.28 * np.sqrt(edge)
    mottle = 0.9 + 0.2 * value_noise(seed + 7, GROUND_SIZE, GROUND_SIZE, 128)
    grain = 0.96 + 0.08 * uniform(seed, py.astype(np.int64), px.astype(np.int64), 4)
    shade = stone * bevel * mottle * grain
    return np.asarray(base, np.float64)[None, None, :] * shade[..., None]


def _plaster(colour: tuple[float, ...] | np.ndarray, seed: int, rows: int) -> np.ndarray:
    """Wall colour with a faint blotchy grain, as render over brick looks from the street."""
    noise = value_noise(seed, rows, TILE, 16) * 0.6 + uniform(seed, np.arange(rows)[:, None],
                                                              np.arange(TILE)[None, :]) * 0.4
    return np.asarray(colour, np.float64)[None, None, :] * (0.96 + 0.08 * noise)[..., None]


def _mix(a: tuple[int, ...] | np.ndarray, b: tuple[int, ...] | np.ndarray, w: float) -> np.ndarray:
    return np.asarray(a, np.float64) * (1.0 - w) + np.asarray(b, np.float64) * w


def _gradient(bottom: tuple[int, ...], top: tuple[int, ...], w: np.ndarray) -> np.ndarray:
    """(rows, 1, 3) colours from `bottom` (w=0) to `top` (w=1) for a column of weights."""
    return np.asarray(bottom, np.float64) * (1 - w[..., None]) + np.asarray(top, np.float64) * w[..., None]


def _facade_tile(style: FacadeStyle, index: int) -> np.ndarray:
    """(2*TILE, TILE, 3): rows [0, TILE) one upper floor, rows [TILE, 2*TILE) the ground floor;
    row index grows with height (row 0 is the floor's bottom) and columns span one bay."""
    u = ((np.arange(TILE) + 0.5) / TILE)[None, :]
    v = ((np.arange(TILE) + 0.5) / TILE)[:, None]
    upper = _plaster(style.wall, TEXTURE_SEED + index, TILE)
    glass = _gradient(style.glass_bottom, style.glass_top, v)
    glass = glass * (0.97 + 0.06 * (u + v > 1.1)[..., None])  # a faint diagonal reflection
    if style.curtain_wall:
        pane = np.broadcast_to(glass, upper.shape)
        mullion = (u < 0.04) | (u > 0.96)
        spandrel = v < 0.2
        upper = np.where((mullion | spandrel)[..., None], upper, pane)
        upper = np.where((mullion & ~spandrel)[..., None], np.asarray(style.frame, np.float64), upper)
    else:
        frame = (u > 0.29) & (u < 0.71) & (v > 0.25) & (v < 0.81)
        pane = (u > 0.32) & (u < 0.68) & (v > 0.285) & (v < 0.775)
        sill = (u > 0.27) & (u < 0.73) & (v > 0.225) & (v < 0.25)
        upper = np.where(sill[..., None], upper * 1.1, upper)
        upper = np.where(frame[..., None], np.asarray(style.frame, np.float64), upper)
        reveal = pane & (v > 0.74)
        upper = np.where(pane[..., None], glass, upper)
        upper = np.where(reveal[..., None], glass * 0.75, upper)
    z = v * GROUND_FLOOR_M  # metres above the ground within the shopfront band
    ground = _plaster(style.wall, TEXTURE_SEED + 100 + index, TILE) * 0.93
    pillar = (u < 0.08) | (u > 0.92)
    pale = _plaster(_mix(style.wall, (255, 255, 255), 0.35), TEXTURE_SEED + 100 + index, TILE)
    ground = np.where(pillar[..., None], pale, ground)
    shop_glass = _gradient((40, 48, 56), (64, 74, 84), z / 2.7)
    shop_glass = shop_glass * (0.96 + 0.08 * value_noise(TEXTURE_SEED + 200 + index, TILE, TILE, 32))[..., None]
    window = ~pillar & (z < 2.66)
    ground = np.where(window[..., None], shop_glass, ground)
    ground = np.where((~pillar & (z < 0.12))[..., None], np.asarray((58, 58, 60), np.float64), ground)
    lintel = (z >= 2.66) & (z < 2.8)
    ground = np.where(lintel[..., None], np.asarray(style.wall, np.float64) * 0.5, ground)
    return np.concatenate([upper, ground], axis=0)


def _car_tile(colour: tuple[int, int, int], index: int) -> np.ndarray:
    """A parked car seen side-on: tyres and shadow, body, windows, roof, over the shopfront rows."""
    z = (((np.arange(TILE) + 0.5) / TILE) * GROUND_FLOOR_M)[:, None]
    u = ((np.arange(TILE) + 0.5) / TILE)[None, :]
    body = np.broadcast_to(np.asarray(colour, np.float64), (TILE, TILE, 3))
    shine = 0.92 + 0.12 * value_noise(TEXTURE_SEED + 300 + index, TILE, TILE, 32)[..., None]
    ground = body * shine
    ground = np.where((z < 0.32)[..., None], np.asarray((26, 26, 28.0)), ground)
    windows = (z > 0.95) & (z < 1.32) & (u > 0.08) & (u < 0.92)
    ground = np.where(windows[..., None], np.asarray((44, 52, 62.0)), ground)
    ground = np.where(((z >= 1.32) & (z < 1.5))[..., None], ground * 0.85, ground)
    upper = np.broadcast_to(np.asarray(colour, np.float64), (TILE, TILE, 3))
    return np.concatenate([upper, ground], axis=0)


def _roof_tile() -> np.ndarray:
    return _plaster(ROOF, TEXTURE_SEED + 400, 2 * TILE)


# Ground covers the compositor looks up per pixel (render.ground), in table order after the road:
# index 0 is the old cobbled road (worlds without ground data), then these.
GROUND_COVERS = ("pavement", "asphalt", "kerb", "grass", "field", "forest", "parking", "water", "sand", "gravel")


def _grain(seed: int, base: tuple[int, int, int], contrast: float, cell: int, fine: float = 0.5) -> np.ndarray:
    """A tileable mottled surface (asphalt, grass, sand): smooth noise plus per-texel grain."""
    y, x = np.mgrid[0:GROUND_SIZE, 0:GROUND_SIZE]
    n = value_noise(seed, GROUND_SIZE, GROUND_SIZE, cell) * (1 - fine) + uniform(seed, y, x) * fine
    return np.asarray(base, np.float64)[None, None, :] * (1.0 + contrast * (n - 0.5))[..., None]


def _field() -> np.ndarray:
    """Crop rows 1.28 m apart over a mottled green-yellow."""
    rows = (np.arange(GROUND_SIZE) % 128 < 80)[None, :, None]
    base = _grain(TEXTURE_SEED + 15, (150, 156, 84), 0.25, 64)
    return np.where(rows, base, base * 0.82)


def _ground_tiles() -> list[np.ndarray]:
    """Level-0 tiles for GROUND_COVERS (the pavement comes from the cobble maker)."""
    return [
        _cobbles(TEXTURE_SEED + 2, 32, (156, 154, 150), 0.14, 0.10),  # pavement
        _grain(TEXTURE_SEED + 11, (78, 79, 82), 0.22, 16, 0.7),  # asphalt
        _cobbles(TEXTURE_SEED + 12, 64, (196, 194, 188), 0.08, 0.05),  # kerb stones
        _grain(TEXTURE_SEED + 13, (92, 138, 62), 0.45, 32, 0.6),  # grass
        _field(),
        _grain(TEXTURE_SEED + 16, (66, 84, 46), 0.55, 32, 0.5),  # forest floor
        _grain(TEXTURE_SEED + 17, (104, 104, 106), 0.18, 16, 0.7),  # parking: paler asphalt
        _grain(TEXTURE_SEED + 18, (64, 104, 150), 0.18, 128, 0.2),  # water
        _grain(TEXTURE_SEED + 19, (214, 196, 156), 0.2, 32, 0.6),  # sand
        _grain(TEXTURE_SEED + 20, (150, 138, 120), 0.35, 8, 0.8),  # gravel
    ]


@dataclass(frozen=True)
class TextureTable:
    """All static texels in one array, with the offsets the caster adds per surface.

    `facade_offset[style, level]` is where a (2T, T) facade tile of side T = TILE >> level
    starts; `ground_offset[level]` a road tile of side GROUND_SIZE >> level, and the
    matching tile of ground cover k (GROUND_COVERS) sits `cover_delta[k + 1]` further on
    (`cover_delta[0]` = 0, the road itself); `pavement_delta` = cover_delta[1]."""

    texels: np.ndarray  # (n,) uint32 packed RGBA
    sky_offset: int
    facade_offset: np.ndarray  # (N_STYLES, FACADE_LEVELS) int64
    ground_offset: np.ndarray  # (GROUND_LEVELS,) int64
    pavement_delta: int
    cover_delta: np.ndarray  # (1 + len(GROUND_COVERS),) int64


@lru_cache(maxsize=1)
def texture_table() -> TextureTable:
    """Built once per process: it depends on nothing but this module's constants."""
    chunks: list[np.ndarray] = []
    size = 0

    def add(rgb: np.ndarray) -> int:
        nonlocal size
        chunks.append(pack_rgba(rgb).ravel())
        start, size = size, size + chunks[-1].size
        return start

    sky = np.array([sky_colour(i / SKY_STEPS_PER_DEG) for i in range(90 * SKY_STEPS_PER_DEG + 1)])
    sky_offset = add(sky[:, None, :])
    road = box_mips(_cobbles(TEXTURE_SEED + 1, 32, (86, 86, 90), 0.22, 0.16), GROUND_LEVELS)
    ground_offset = np.array([add(level) for level in road], np.int64)
    cover_delta = [0]
    for tile in _ground_tiles():
        mips = box_mips(tile, GROUND_LEVELS)
        cover_delta.append(add(mips[0]) - int(ground_offset[0]))
        for level in mips[1:]:
            add(level)
    tiles = [_facade_tile(s, i) for i, s in enumerate(FACADE_STYLES)]
    tiles += [_car_tile(c, i) for i, c in enumerate(CAR_COLOURS)]
    tiles.append(_roof_tile())
    facade_offset = np.array([[add(level) for level in box_mips(t, FACADE_LEVELS)] for t in tiles], np.int64)
    return TextureTable(np.concatenate(chunks), sky_offset, facade_offset, ground_offset, cover_delta[1],
                        np.array(cover_delta, np.int64))


def sky_index(elevation_deg: float) -> int:
    """Offset (from the table's sky_offset) of the sky colour for an elevation in degrees."""
    return min(90 * SKY_STEPS_PER_DEG, max(0, int(math.floor(elevation_deg * SKY_STEPS_PER_DEG + 0.5))))
