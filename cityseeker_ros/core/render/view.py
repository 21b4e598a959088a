"""What a render returns: the pixels plus ground truth about the signs in them.

Perception tests score a model against `signs`, so every listed sign has at least one pixel
in `image` that shows it (not hidden behind a nearer wall, car or tree).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, PngImagePlugin


@dataclass(frozen=True)
class VisibleSign:
    """A storefront board seen in a view.

    `bbox` is (x0, y0, x1, y1) in pixels with x1/y1 exclusive, around the visible pixels only
    (in a panorama, a board straddling the left/right seam gets x1 > width: columns wrap).
    `distance_m` is the ground distance from the camera to the board centre. `text_height_px`
    is the text's em height in pixels, averaged over the board's visible columns.
    `visible_fraction` is visible pixels over the board's whole projected area, so it drops
    both when something stands in front and when the board runs out of the frame.
    """

    poi_id: str
    text: str
    poi_class: str
    bbox: tuple[int, int, int, int]
    distance_m: float
    text_height_px: float
    legible: bool
    visible_fraction: float


@dataclass
class RenderedView:
    """The pixels, the signs and landmarks that show in them (ground truth), and what made them;
    `meta["above_horizon_content"]` is the share of pixels above the horizon showing scene
    content (walls, trees, boards, landmarks; not the backdrop skyline)."""

    image: np.ndarray  # (height, width, 3) uint8 RGB
    signs: list[VisibleSign] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    landmarks: list[Any] = field(default_factory=list)  # render.landmarks.VisibleLandmark, nearest first


SYNTHETIC_LABEL = ("Synthetic imagery rendered by cityseeker_ros from map data, not a photograph. "
                   "Map data (c) OpenStreetMap contributors, ODbL, where the world was built from OSM.")


# The image types `save_image` writes, by file suffix (lower case).
IMAGE_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG"}


def save_image(path: str | Path, image: np.ndarray) -> Path:
    """Write an RGB uint8 array in the format its suffix names, so `v.jpg` is a JPEG and not
    PNG bytes under a JPEG name; the synthetic-imagery label travels in the PNG text chunks or
    the JPEG comment."""
    path = Path(path)
    kind = IMAGE_FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: unknown image type {path.suffix or '(no suffix)'!r}; "
                         f"use one of {', '.join(IMAGE_FORMATS)}")
    if kind == "PNG":
        return save_png(path, image)
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"expected an (H, W, 3) uint8 image, got {array.dtype} {array.shape}")
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array, "RGB").save(path, format="JPEG", quality=95, comment=SYNTHETIC_LABEL.encode())
    return path


def save_png(path: str | Path, image: np.ndarray) -> Path:
    """Write an RGB uint8 array losslessly, creating the folder, with the synthetic-imagery label
    in the PNG's text chunks so the file says what it is wherever it travels."""
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"expected an (H, W, 3) uint8 image, got {array.dtype} {array.shape}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", SYNTHETIC_LABEL)
    info.add_text("Software", "cityseeker_ros")
    Image.fromarray(array, "RGB").save(path, format="PNG", pnginfo=info)
    return path
