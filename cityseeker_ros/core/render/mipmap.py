"""Pre-shrunk copies of a billboard texture, so text stays legible when a board is far away.

Sampling a 96-pixel-tall board at 12 pixels by picking every eighth texel drops most strokes
of the letters; sampling a copy Pillow reduced with a Hamming filter keeps them. Levels are a
factor sqrt(2) apart and made on first use.
"""
from __future__ import annotations

import math

import numpy as np
from PIL import Image

STEP = math.sqrt(2.0)


class MipTexture:
    """An RGBA texture whose level for a given on-screen height is made once and kept."""

    def __init__(self, rgba: np.ndarray) -> None:
        if rgba.dtype != np.uint8 or rgba.ndim != 3 or rgba.shape[2] != 4:
            raise ValueError("expected (H, W, 4) uint8")
        self._image = Image.fromarray(rgba, "RGBA")
        self.height, self.width = rgba.shape[:2]
        self._levels: dict[int, np.ndarray] = {0: _pack(rgba)}
        self.nbytes = self._levels[0].nbytes

    def level_for(self, height_px: float) -> np.ndarray:
        """Packed RGBA (h, w) uint32: the smallest level at least `height_px` tall (level 0 if none)."""
        level = 0
        if height_px > 0:
            level = max(0, math.floor(math.log2(self.height / max(height_px, 1.0)) / math.log2(STEP)))
        h = max(1, round(self.height / STEP ** level))
        while level > 0 and h < 2:
            level -= 1
            h = max(1, round(self.height / STEP ** level))
        if level not in self._levels:
            w = max(1, round(self.width * h / self.height))
            self._levels[level] = _pack(np.asarray(self._image.resize((w, h), Image.Resampling.HAMMING)))
            self.nbytes += self._levels[level].nbytes
        return self._levels[level]


def _pack(rgba: np.ndarray) -> np.ndarray:
    """(H, W, 4) uint8 to (H, W) packed little-endian RGBA uint32, as the texture tables store texels."""
    return np.ascontiguousarray(rgba).view("<u4").reshape(rgba.shape[:2]).astype(np.uint32)
