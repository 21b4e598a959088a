"""Episode metrics with the paper's definitions (DESIGN.md section 4), and their summaries.

Measures are registered by name and each reads one `EpisodeOutcome`, which computes the
geodesics several measures share once per episode. Rates are 0 or 100 per episode (SPL and
nDTW are 0-100 too), so every summary is a plain mean and matches the paper's tables.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.core.streets.geodesy import pairwise_geodesic_m, path_length_m
from cityseeker_ros.core.tasks.episode import Episode, World

METRIC_KEYS: tuple[str, ...] = (
    "tce", "tcp40", "tcp50", "tcp60", "tcc", "spl", "spd",
    "dtw_per_ref_m", "ndtw", "osr", "as", "solvable",
)
SUCCESS_RADIUS_M = 50.0  # SPL's success is TCP@50
TCC_RADIUS_M = 50.0
ORACLE_RADIUS_M = 50.0
DEFAULT_DTW_THRESHOLD_M = 50.0
GROUPINGS: dict[str, str] = {
    "by_category": "category", "by_city": "city", "by_difficulty": "difficulty",
}


def dtw_m(cost: np.ndarray) -> float:
    """Dynamic time warping over a cost matrix (rows: agent path, columns: reference path).

    The cells of one anti-diagonal (i + j = k) depend only on earlier ones, so each anti-diagonal
    is one vectorised step: n + m steps instead of n * m. In the row-major (n+1) x (m+1) table an
    anti-diagonal is a slice of stride m, and its up, left and diagonal neighbours are the same
    slice shifted by m + 1, 1 and m + 2. Each cell is still cost + min(up, left, diagonal), the
    same floating-point operations as the cell-by-cell loop, so results are bit-identical."""
    cost = np.asarray(cost, dtype=float)
    n, m = cost.shape
    if n == 0 or m == 0:
        return 0.0 if n == m else float("inf")  # what the cell-by-cell table held there
    width = m + 1
    acc = np.full((n + 1) * width, np.inf)
    acc[0] = 0.0
    padded = np.zeros((n + 1, width))
    padded[1:, 1:] = cost
    padded = padded.ravel()
    for k in range(2, n + m + 1):
        first, last = max(1, k - m), min(n, k - 1)  # rows i of this anti-diagonal
        cells = slice(first * m + k, last * m + k + 1, m)  # flat index of (i, k - i) is i * m + k
        up = acc[first * m + k - width: last * m + k - width + 1: m]
        left = acc[first * m + k - 1: last * m + k: m]
        diagonal = acc[first * m + k - width - 1: last * m + k - width: m]
        acc[cells] = padded[cells] + np.minimum(np.minimum(up, left), diagonal)
    return float(acc[-1])


@dataclass(frozen=True, eq=False)
class EpisodeOutcome:
    """What the measures share about one finished episode, computed once."""

    path: tuple[str, ...]
    target: str
    solvable: bool
    path_latlon: np.ndarray       # (len(path), 2)
    reference_latlon: np.ndarray  # (len(reference_path), 2)
    path_to_target_m: np.ndarray  # geodesic from each visited node to the target
    final_to_request_m: float     # from the final node to the nearest target of the same request
    walked_m: float
    reference_m: float
    dtw_m: float
    dtw_threshold_m: float

    @classmethod
    def build(cls, world: World, episode: Episode, path: Sequence[str], solvable: bool,
              dtw_threshold_m: float = DEFAULT_DTW_THRESHOLD_M) -> EpisodeOutcome:
        path = tuple(path)
        if not path:
            raise ValueError(f"episode {episode.episode_id}: empty path; it must hold the start")
        if not episode.reference_path:
            raise ValueError(f"episode {episode.episode_id}: empty reference path")
        if not dtw_threshold_m > 0:
            raise ValueError(f"dtw_threshold_m must be positive, got {dtw_threshold_m}")
        graph = world.graph
        path_ll = graph.latlon(path)
        ref_ll = graph.latlon(episode.reference_path)
        # Every target of the same request satisfies it; an unknown request has only its own.
        satisfying = world.category_targets.get(episode.request) or frozenset({episode.target})
        return cls(
            path=path,
            target=episode.target,
            solvable=bool(solvable),
            path_latlon=path_ll,
            reference_latlon=ref_ll,
            path_to_target_m=pairwise_geodesic_m(path_ll, graph.latlon([episode.target]))[:, 0],
            final_to_request_m=float(graph.distances_to_set_m(path[-1], sorted(satisfying)).min()),
            walked_m=path_length_m(path_ll),
            reference_m=path_length_m(ref_ll),
            dtw_m=dtw_m(pairwise_geodesic_m(path_ll, ref_ll)),
            dtw_threshold_m=float(dtw_threshold_m),
        )

    @property
    def final(self) -> str:
        return self.path[-1]

    @property
    def steps(self) -> int:
        return len(self.path) - 1

    @property
    def final_to_target_m(self) -> float:
        return float(self.path_to_target_m[-1])


Measure = Callable[[EpisodeOutcome], float]
MEASURES: Registry[Measure] = Registry("metric")


def _percent(flag: bool) -> float:
    return 100.0 if flag else 0.0


def _target_within(radius_m: float) -> Measure:
    def target_within(o: EpisodeOutcome) -> float:
        return _percent(o.final_to_target_m <= radius_m)
    return target_within


MEASURES.register("tcp40")(_target_within(40.0))
MEASURES.register("tcp50")(_target_within(50.0))
MEASURES.register("tcp60")(_target_within(60.0))


@MEASURES.register("tce")
def target_exact(o: EpisodeOutcome) -> float:
    return _percent(o.final == o.target)


@MEASURES.register("tcc")
def target_category(o: EpisodeOutcome) -> float:
    return _percent(o.final_to_request_m <= TCC_RADIUS_M)


@MEASURES.register("spl")
def success_weighted_by_path_length(o: EpisodeOutcome) -> float:
    if o.final_to_target_m > SUCCESS_RADIUS_M:
        return 0.0
    longest = max(o.walked_m, o.reference_m)
    # Standing on the target of a zero-length route is a perfect episode, not 0/0.
    return 100.0 * (o.reference_m / longest if longest > 0 else 1.0)


@MEASURES.register("spd")
def shortest_path_distance(o: EpisodeOutcome) -> float:
    return o.final_to_target_m


@MEASURES.register("dtw_per_ref_m")
def dtw_per_reference_node(o: EpisodeOutcome) -> float:
    """The paper's column named "nDTW": metres, lower is better."""
    return o.dtw_m / len(o.reference_latlon)


@MEASURES.register("ndtw")
def normalized_dtw(o: EpisodeOutcome) -> float:
    """Standard nDTW (Ilharco et al. 2019), x100."""
    return 100.0 * math.exp(-o.dtw_m / (len(o.reference_latlon) * o.dtw_threshold_m))


@MEASURES.register("osr")
def oracle_success(o: EpisodeOutcome) -> float:
    return _percent(float(o.path_to_target_m.min()) <= ORACLE_RADIUS_M)


@MEASURES.register("as")
def action_steps(o: EpisodeOutcome) -> float:
    return float(o.steps)


@MEASURES.register("solvable")
def solvable(o: EpisodeOutcome) -> float:
    return _percent(o.solvable)


def episode_metrics(world: World, episode: Episode, path: Sequence[str], solvable: bool, *,
                    dtw_threshold_m: float = DEFAULT_DTW_THRESHOLD_M) -> dict[str, float]:
    """Every metric of one episode, keyed and ordered as METRIC_KEYS."""
    outcome = EpisodeOutcome.build(world, episode, path, solvable, dtw_threshold_m)
    return {key: float(MEASURES.get(key)(outcome)) for key in METRIC_KEYS}


def _group(records: Sequence[Mapping[str, Any]], field: str) -> dict[Any, list[Mapping[str, Any]]]:
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for r in records:
        groups.setdefault(r.get(field), []).append(r)
    return {name: groups[name] for name in sorted(groups, key=str)}


def _episode_count(records: Sequence[Mapping[str, Any]]) -> int:
    """Distinct episodes; ids are paired with the city because datasets number them per city."""
    return len({(r.get("city"), r["episode_id"]) for r in records})


def _means(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    try:
        # fmean sums exactly (fsum), so the result does not depend on record order.
        return {k: statistics.fmean(float(r["metrics"][k]) for r in records) for k in METRIC_KEYS}
    except KeyError as err:
        raise ValueError(f"an episode record lacks metric {err}") from None


def _block(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {**_means(records), "episodes": _episode_count(records)}


def summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Means overall and per category, city and difficulty, from episodes.jsonl records.

    With several seeds, `overall` is the mean of the per-seed means and `overall_sd` their
    sample standard deviation, so the spread says how far a rerun moves the headline.
    Groups pool every record. `overall` always carries `episodes` and `seeds`; with no
    records it carries only those two (zeros), so nothing is ever NaN.
    """
    seeds = _group(records, "seed")
    counts = {"episodes": _episode_count(records), "seeds": len(seeds)}
    summary: dict[str, Any] = {}
    if len(seeds) > 1:
        per_seed = [_means(rs) for rs in seeds.values()]
        columns = {k: [m[k] for m in per_seed] for k in METRIC_KEYS}
        summary["overall"] = {k: statistics.fmean(v) for k, v in columns.items()} | counts
        summary["overall_sd"] = {k: statistics.stdev(v) for k, v in columns.items()} | counts
    elif records:
        summary["overall"] = _means(records) | counts
    else:
        summary["overall"] = counts
    for block, field in GROUPINGS.items():
        summary[block] = {name: _block(rs) for name, rs in _group(records, field).items()}
    return summary
