"""Confidence intervals for a comparison: a paired bootstrap over episodes and seeds.

Two runs over the same episodes differ less by chance than two runs over different ones: the
hard episodes are hard for both. So every row is resampled with the same draws: the same
episodes (with replacement), and within each drawn episode the same seed positions (with
replacement, among the run's own seeds; runs with the same seeds are paired seed by seed). The
interval of a row's mean and of its difference against the reference row come from those
draws, as percentiles (Efron and Tibshirani's percentile interval). The generator is seeded, so
the same records give the same intervals on every machine.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

RESAMPLES = 2000
SEED = 0
LEVEL = 0.95
_CHUNK = 200  # resamples drawn at once (memory: CHUNK x episodes x seeds values)


@dataclass(frozen=True)
class Interval:
    """A mean and its `level` percentile interval."""

    estimate: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0


@dataclass(frozen=True)
class PairedIntervals:
    """Per row: the interval of its mean, and of its mean minus the reference row's (None for
    the reference itself)."""

    means: tuple[Interval, ...]
    differences: tuple[Optional[Interval], ...]


def _quantiles(values: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1.0 - level) / 2.0
    # inverted_cdf: the smallest resampled value whose share at or below reaches the level.
    low, high = np.quantile(values, [alpha, 1.0 - alpha], method="inverted_cdf")
    return float(low), float(high)


def _checked(rows: Sequence[np.ndarray], resamples: int, level: float) -> list[np.ndarray]:
    if not rows:
        raise ValueError("paired_bootstrap: no rows")
    arrays = [np.asarray(r, dtype=float) for r in rows]
    episodes = arrays[0].shape[0] if arrays[0].ndim == 2 else 0
    if episodes == 0 or any(a.ndim != 2 or a.shape[0] != episodes or a.shape[1] == 0 for a in arrays):
        raise ValueError("paired_bootstrap: every row needs the same episodes (rows) and at least one seed")
    if resamples < 1 or not 0.0 < level < 1.0:
        raise ValueError("paired_bootstrap: resamples must be >= 1 and level in (0, 1)")
    return arrays


def resampled_means(rows: Sequence[np.ndarray], resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(rows, resamples): each row's mean under each resample, the same draws for every row.
    `rows`: one (episodes, seeds) array per run, episodes in the same order in every row (the
    number of seeds may differ). Draws: per resample, the episode positions, then for each
    distinct seed count S (ascending) the seed positions of every drawn episode."""
    arrays = _checked(rows, resamples, LEVEL)
    episodes = arrays[0].shape[0]
    rng = np.random.default_rng(seed)
    counts = sorted({a.shape[1] for a in arrays})
    stats = np.empty((len(arrays), resamples))
    for start in range(0, resamples, _CHUNK):
        n = min(_CHUNK, resamples - start)
        drawn = rng.integers(0, episodes, size=(n, episodes))
        positions = {s: rng.integers(0, s, size=(n, episodes, s)) for s in counts}
        for r, a in enumerate(arrays):
            values = a[drawn[:, :, None], positions[a.shape[1]]]
            stats[r, start:start + n] = values.mean(axis=(1, 2))
    return stats


def percentile_interval(estimate: float, samples: np.ndarray, level: float = LEVEL) -> Interval:
    return Interval(float(estimate), *_quantiles(samples, level))


def paired_bootstrap(rows: Sequence[np.ndarray], reference: int = 0, resamples: int = RESAMPLES,
                     seed: int = SEED, level: float = LEVEL) -> PairedIntervals:
    """Each row's interval, and of its difference from row `reference` (resampled_means' draws)."""
    arrays = _checked(rows, resamples, level)
    if not 0 <= reference < len(arrays):
        raise ValueError(f"paired_bootstrap: reference row {reference} out of range")
    stats = resampled_means(arrays, resamples, seed)
    means = tuple(percentile_interval(a.mean(), stats[r], level) for r, a in enumerate(arrays))
    base = arrays[reference].mean()
    differences = tuple(None if r == reference else
                        percentile_interval(a.mean() - base, stats[r] - stats[reference], level)
                        for r, a in enumerate(arrays))
    return PairedIntervals(means, differences)
