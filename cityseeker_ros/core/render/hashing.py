"""Stable pseudo-random numbers from names and integers.

Python's `hash` is salted per process and NumPy's generators do not promise the same stream
across releases, so everything random in a render (which POIs go unsigned, where clutter
stands, plaster and cobble noise) comes from these fixed mixing functions instead.
"""
from __future__ import annotations

import hashlib

import numpy as np

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def key64(*parts: object) -> int:
    """A 64-bit integer for a tuple of names/numbers, identical on every machine and run."""
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def unit_from_key(*parts: object) -> float:
    """A number in [0, 1) for a tuple of names/numbers."""
    return key64(*parts) / 2.0 ** 64


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser over a uint64 array: independent-looking 64-bit values per input."""
    with np.errstate(over="ignore"):
        z = (np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)) & _MASK
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK
        return z ^ (z >> np.uint64(31))


def uniform(seed: int, *index: np.ndarray) -> np.ndarray:
    """Floats in [0, 1) for integer index arrays (broadcast together), one stream per seed."""
    with np.errstate(over="ignore"):
        h = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
        for arr in index:
            h = splitmix64(h ^ (np.asarray(arr).astype(np.int64).astype(np.uint64) * np.uint64(0x2545F4914F6CDD1D)))
    return (splitmix64(h) >> np.uint64(11)).astype(np.float64) * (1.0 / 2.0 ** 53)


def value_noise(seed: int, height: int, width: int, cell: int) -> np.ndarray:
    """Tileable smooth noise in [0, 1): random values on a `cell`-pixel lattice, bilinearly blended.

    `height` and `width` must be multiples of `cell` so the texture wraps without a seam."""
    gh, gw = height // cell, width // cell
    lattice = uniform(seed, np.arange(gh)[:, None], np.arange(gw)[None, :])
    y = (np.arange(height) + 0.5) / cell - 0.5
    x = (np.arange(width) + 0.5) / cell - 0.5
    y0, x0 = np.floor(y).astype(int), np.floor(x).astype(int)
    fy, fx = y - y0, x - x0
    fy, fx = fy * fy * (3 - 2 * fy), fx * fx * (3 - 2 * fx)  # smoothstep hides the lattice
    y0, y1 = y0 % gh, (y0 + 1) % gh
    x0, x1 = x0 % gw, (x0 + 1) % gw
    top = lattice[y0][:, x0] * (1 - fx) + lattice[y0][:, x1] * fx
    bottom = lattice[y1][:, x0] * (1 - fx) + lattice[y1][:, x1] * fx
    return top * (1 - fy)[:, None] + bottom * fy[:, None]
