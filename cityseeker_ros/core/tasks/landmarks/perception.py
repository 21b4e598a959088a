"""Finding landmarks in street views by their identity colour, and where they stand from it.

The renderer paints each landmark's crown flat in its own colour (no two landmarks share one),
so pixels of that colour are that landmark. Its bearing comes from the image column (the view's
heading plus the column's angle off the axis, from the field of view); its distance from its
apparent size: cameras have pitch 0, so the horizon is the middle row, and the landmark's top
stands `height_m - eye_m` above eye level; the rows between the horizon and the top edge give
the angle that height subtends (the top edge is the part least often hidden by nearer
buildings, which can cut the crown's lower rows and so its own pixel height). A landmark cut off
by the image's top edge is too near for the view to tell how near: it gives no sighting.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_EYE_M = 2.5  # RenderSettings.eye_height_m's default
DEFAULT_FOV_DEG = 90.0  # the rendered view source's default


@dataclass(frozen=True)
class LandmarkLook:
    """What anyone may know of a landmark: its name, identity colour and true size."""

    id: str
    name: str
    colour: tuple[int, int, int]
    height_m: float

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LandmarkLook:
        return cls(str(doc["id"]), str(doc["name"]), tuple(int(c) for c in doc["colour"]),  # type: ignore[arg-type]
                   float(doc["height_m"]))


@dataclass(frozen=True)
class Sighting:
    """A landmark found in one image: bearing (degrees clockwise from north) and ground distance
    (m) from the camera, and the pixels they were read from."""

    landmark: str
    bearing_deg: float
    distance_m: float
    column: float
    top_row: int
    pixels: int


def colour_mask(image: np.ndarray, colour: Sequence[int], tolerance: int) -> np.ndarray:
    """Pixels within `tolerance` of `colour` in every channel."""
    diff = np.abs(image[..., :3].astype(np.int16) - np.asarray(colour, dtype=np.int16))
    return np.all(diff <= tolerance, axis=-1)


def _patches(sky: np.ndarray, looks: Sequence[LandmarkLook], tolerance: int,
             min_pixels: int) -> Iterator[tuple[LandmarkLook, np.ndarray, np.ndarray]]:
    """(look, rows, columns) of each landmark whose identity colour covers at least `min_pixels`."""
    for look in looks:
        rows, cols = np.nonzero(colour_mask(sky, look.colour, tolerance))
        if len(rows) >= min_pixels:
            yield look, rows, cols


def find_in_view(image: np.ndarray, heading_deg: float, looks: Sequence[LandmarkLook], *,
                 fov_deg: float = DEFAULT_FOV_DEG, eye_m: float = DEFAULT_EYE_M, tolerance: int = 12,
                 min_pixels: int = 6) -> list[Sighting]:
    """Landmarks in a perspective view (pitch 0) looking along `heading_deg`. A patch that
    touches the left or right edge is left out: its centre column is not the landmark's."""
    h, w = image.shape[:2]
    f = (w / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
    sky = image[:(h + 1) // 2]  # a landmark's top edge is above the horizon, or it gives no distance
    found = []
    for look, rows, cols in _patches(sky, looks, tolerance, min_pixels):
        count = len(rows)
        if cols.min() == 0 or cols.max() == w - 1:
            continue
        column = float(np.median(cols)) + 0.5
        right = (column - w / 2.0) / f  # the column's ray: (1 forward, right) per unit depth
        bearing = (heading_deg + math.degrees(math.atan(right))) % 360.0
        top = int(rows.min())
        above = h / 2.0 - top  # pixels from the horizon up to the top edge
        if top == 0 or above <= 0 or look.height_m <= eye_m:
            continue
        depth = f * (look.height_m - eye_m) / above
        found.append(Sighting(look.id, bearing, depth * math.hypot(1.0, right), column, top, count))
    return found


def find_in_panorama(image: np.ndarray, facing_deg: float, looks: Sequence[LandmarkLook], *,
                     eye_m: float = DEFAULT_EYE_M, tolerance: int = 12, min_pixels: int = 6) -> list[Sighting]:
    """Landmarks in an equirectangular panorama whose centre column looks along `facing_deg`
    (column c looks at facing + ((c + 0.5) / W - 0.5) x 360 degrees; row r's top edge at
    (0.5 - r / H) x 180 degrees of elevation)."""
    h, w = image.shape[:2]
    sky = image[:(h + 1) // 2]
    found = []
    for look, rows, cols in _patches(sky, looks, tolerance, min_pixels):
        count = len(rows)
        angles = ((cols + 0.5) / w - 0.5) * 2.0 * math.pi
        mean = math.atan2(float(np.sin(angles).mean()), float(np.cos(angles).mean()))  # the seam wraps
        bearing = (facing_deg + math.degrees(mean)) % 360.0
        top = int(rows.min())
        elevation = math.radians((0.5 - top / h) * 180.0)
        if top == 0 or elevation <= 0 or look.height_m <= eye_m:
            continue
        distance = (look.height_m - eye_m) / math.tan(elevation)
        found.append(Sighting(look.id, bearing, distance, float(mean), top, count))
    return found

