"""CitySeeker's measures with the paper's definitions (DESIGN.md section 4).

Measures are registered by name and each reads one `EpisodeOutcome`, which computes the
geodesics several measures share once per episode. Rates are 0 or 100 per episode (SPL and
nDTW are 0-100 too), so every summary is a plain mean and matches the paper's tables.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.core.streets.geodesy import pairwise_geodesic_m, path_length_m
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.measures import DEFAULT_DTW_THRESHOLD_M, dtw_m

METRIC_KEYS: tuple[str, ...] = (
    "tce", "tcp40", "tcp50", "tcp60", "tcc", "spl", "spd",
    "dtw_per_ref_m", "ndtw", "osr", "as", "solvable",
)
SUCCESS_RADIUS_M = 50.0  # SPL's success is TCP@50
TCC_RADIUS_M = 50.0
ORACLE_RADIUS_M = 50.0


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
