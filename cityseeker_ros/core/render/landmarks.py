"""Landmarks in views: a shaft with the name on a banner under a crown of flat identity colour.

A landmark is drawn as two camera-facing quads at its position, true to perspective (so its
apparent size follows distance) and at any distance (not cut at the draw distance, and not
hazed, so the crown keeps the exact identity colour: `detect_landmarks` finds it by matching
pixels). Beyond the draw distance, where no walls are cast to hide it, a landmark shows only
at the nodes its line of sight was computed clear from (`Landmark.visible_nodes`). The helpers
at the end turn a detection back into a bearing (from the column) and a distance (from the
crown's apparent height and its known size), as a CPU agent would.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from cityseeker_ros.core.render.mipmap import MipTexture
from cityseeker_ros.core.worlds.scene import Landmark

SHAFT_RGB = (204, 198, 186)
BANNER_RGB = (40, 44, 52)
SHAFT_TEXTURE_W = 96


@dataclass(frozen=True)
class VisibleLandmark:
    """A landmark whose crown shows in a view: ground truth for landmark goals.

    `column` is the centre column of the visible crown pixels and `bbox` their box (x0, y0, x1,
    y1, exclusive; in panoramas x1 may run past the width at the seam). `crown_height_px` is the
    crown's projected height (whole crown, hidden parts included), so distance ~ crown_m *
    focal_px / crown_height_px; `bearing_deg` and `distance_m` are from the camera."""

    landmark_id: str
    name: str
    colour: tuple[int, int, int]
    column: float
    bbox: tuple[int, int, int, int]
    crown_height_px: float
    distance_m: float
    bearing_deg: float
    visible_px: int


def crown_texture(colour: tuple[int, int, int]) -> MipTexture:
    """A 2x2 flat patch: every level is the exact colour."""
    rgba = np.zeros((2, 2, 4), np.uint8)
    rgba[..., :3] = colour
    rgba[..., 3] = 255
    return MipTexture(rgba)


def shaft_texture(name: str, shaft_m: float, width_m: float, font_path: Optional[str]) -> MipTexture:
    """Stone shaft with vertical shading and, at its top, a dark banner with the name in white."""
    return _shaft(name, round(shaft_m, 2), round(width_m, 2), font_path or "")


@lru_cache(maxsize=64)
def _shaft(name: str, shaft_m: float, width_m: float, font_path: str) -> MipTexture:
    w = SHAFT_TEXTURE_W
    h = int(min(1024, max(8, round(w * shaft_m / max(width_m, 0.5)))))
    u = (np.arange(w) + 0.5) / w
    shade = 0.85 + 0.15 * np.sin(np.pi * u)
    rgba = np.zeros((h, w, 4), np.uint8)
    rgba[..., :3] = (np.asarray(SHAFT_RGB, np.float64)[None, :] * shade[:, None]).astype(np.uint8)[None, :, :]
    rgba[..., 3] = 255
    band = min(h, max(4, int(round(w * 0.3))))
    rgba[:band, :, :3] = BANNER_RGB
    image = Image.fromarray(rgba, "RGBA")
    if font_path and band >= 8:
        draw = ImageDraw.Draw(image)
        size = int(band * 0.7)
        font = ImageFont.truetype(font_path, size)
        while size > 6 and draw.textlength(name, font=font) > w * 0.92:
            size -= 1
            font = ImageFont.truetype(font_path, size)
        draw.text((w / 2, band / 2), name, font=font, fill=(255, 255, 255, 255), anchor="mm")
    return MipTexture(np.asarray(image, np.uint8).copy())


def crown_span(landmark: Landmark) -> tuple[float, float]:
    """Heights (bottom, top) of the flat-coloured crown."""
    return max(0.0, landmark.height_m - landmark.crown_m), landmark.height_m


@dataclass(frozen=True)
class DetectedLandmark:
    """Pixels of one identity colour in an image: where a landmark's crown shows."""

    landmark_id: str
    column: float  # mean column of the matching pixels
    top: int
    bottom: int  # exclusive
    height_px: int  # rows spanned in the densest column
    pixels: int


def detect_landmarks(image: np.ndarray, landmarks: list[Landmark], min_pixels: int = 2) -> list[DetectedLandmark]:
    """Landmarks whose identity colour appears exactly in `image` (an undegraded render)."""
    rgb = np.asarray(image)
    packed = (rgb[..., 0].astype(np.int32) << 16) | (rgb[..., 1].astype(np.int32) << 8) | rgb[..., 2]
    out = []
    for lm in landmarks:
        r, g, b = lm.colour
        ys, xs = np.nonzero(packed == (r << 16 | g << 8 | b))
        if len(xs) < min_pixels:
            continue
        counts = np.bincount(xs)
        out.append(DetectedLandmark(lm.id, round(float(xs.mean()) + 0.5, 2), int(ys.min()), int(ys.max()) + 1,
                                    int(counts.max()), len(xs)))
    return out


def bearing_from_column(column: float, heading_deg: float, fov_deg: float, width: int) -> float:
    """Azimuth (clockwise from north) seen at a (fractional) column of a perspective view."""
    f = (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
    return (heading_deg + math.degrees(math.atan((column - width / 2.0) / f))) % 360.0


def distance_from_height(height_px: float, size_m: float, fov_deg: float, width: int) -> float:
    """Ground distance at which something `size_m` tall spans `height_px` rows of a perspective view
    (near the image centre; exact for the crown's projected height in VisibleLandmark)."""
    f = (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
    return size_m * f / max(height_px, 1e-9)
