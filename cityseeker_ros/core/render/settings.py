"""Render settings: the difficulty knobs of a rendered world, validated once, up front.

Every field changes pixels, so the whole dataclass goes into each view's `meta` and two
renders agree byte for byte only when their settings are equal.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError

DEFAULT_FONT = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"


@dataclass(frozen=True)
class RenderSettings:
    """Knobs that make perception easier or harder; the defaults give clean, signed streets."""

    signs: bool = True  # False renders a sign-free world (the same buildings, no boards)
    unsigned_fraction: float = 0.0  # share of POIs without a board, picked by hash(poi id, seed)
    clutter: float = 0.0  # 0..1 density of trees, lamp posts and parked cars along the streets
    blur_sigma: float = 0.0  # Gaussian blur in pixels, applied to the finished image
    jpeg_quality: Optional[int] = None  # round trip through JPEG at this quality for its artefacts
    min_text_px: float = 8.0  # a sign is legible when its text is at least this many pixels tall
    seed: int = 0  # varies which POIs go unsigned and where clutter stands
    eye_height_m: float = 2.5
    font_path: Optional[str] = None  # default: WenQuanYi Micro Hei, which covers Latin and CJK
    max_distance_m: float = 250.0  # nothing farther is drawn; haze hides the cut

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"render setting '{name}'={getattr(self, name)!r}: {why}")

        if not isinstance(self.signs, bool):
            raise bad("signs", "must be true or false")
        for name, lo, hi in (("unsigned_fraction", 0.0, 1.0), ("clutter", 0.0, 1.0)):
            value = getattr(self, name)
            if not _is_number(value) or not lo <= value <= hi:
                raise bad(name, f"must be a number in [{lo}, {hi}]")
        if not _is_number(self.blur_sigma) or not 0.0 <= self.blur_sigma <= 50.0:
            raise bad("blur_sigma", "must be a number in [0, 50] pixels")
        if self.jpeg_quality is not None and (not _is_integer(self.jpeg_quality) or not 1 <= self.jpeg_quality <= 100):
            raise bad("jpeg_quality", "must be null or an integer in [1, 100]")
        if not _is_number(self.min_text_px) or self.min_text_px < 0.0:
            raise bad("min_text_px", "must be a number >= 0")
        if not _is_integer(self.seed):
            raise bad("seed", "must be an integer")
        if not _is_number(self.eye_height_m) or not 0.2 <= self.eye_height_m <= 50.0:
            raise bad("eye_height_m", "must be a number in [0.2, 50] metres")
        if not _is_number(self.max_distance_m) or not 10.0 <= self.max_distance_m <= 5000.0:
            raise bad("max_distance_m", "must be a number in [10, 5000] metres")
        if self.font_path is not None and (not isinstance(self.font_path, str) or not self.font_path):
            raise bad("font_path", "must be null or a path to a TrueType/OpenType font")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str) -> RenderSettings:
        """Settings from user-given KEY=VALUE pairs; an unknown key fails naming `where` and the
        valid keys, rather than with Python's "unexpected keyword argument"."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigError(f"{where}: unknown render setting(s) {', '.join(unknown)}; known: {', '.join(known)}")
        return cls(**values)

    def resolve_font(self) -> Path:
        """The font file to draw sign text with; fails with the install command when it is missing."""
        path = Path(self.font_path or DEFAULT_FONT)
        if not path.is_file():
            raise ConfigError(
                f"render setting 'font_path': font file {path} not found; install the default font with "
                f"`apt-get install fonts-wqy-microhei` or set font_path to a font that covers Latin and CJK")
        return path

    def describe(self) -> dict[str, Any]:
        return asdict(self)


def _is_integer(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
