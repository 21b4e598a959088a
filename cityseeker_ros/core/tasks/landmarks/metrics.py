"""PReP's measures (SR, SPL) and the ones beside them, from the path alone.

PReP names SR and SPL (section 5.1, after Anderson et al. 2018) and one failure rule: "If the
agent moves more than the limited steps, it is considered a failed task" (section 5.1); its
agent's path ends at the goal (section 3.1, Definition 3: p = [v_s, ..., v_g]). Its text states
no stop action and no success radius. Both are the project's choice:

- a stop action: the agent must say it has arrived (as in CitySeeker and in Anderson et al.'s
  SR); a walk that only passes the goal is not a success (OSR counts it apart);
- a radius of one node: stopping at the goal or at a node one street edge from it, either way
  round. Our nodes are ~20 m apart where PReP's are 50 m (section 3.2), so one edge of slack
  (the goal's longest edge, carried by each record as `success_radius_m`) is still finer than
  one PReP step.
"""
from __future__ import annotations

import weakref
from collections.abc import Sequence

from cityseeker_ros.core.streets.geodesy import path_length_m
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.tasks.episode import Episode
from cityseeker_ros.core.tasks.family import MetricSpec
from cityseeker_ros.core.tasks.trajectory import EndReason, Trajectory

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("sr", "SR", "%", "stopped at the goal or one street edge from it (the project's success rule)"),
    MetricSpec("spl", "SPL", "%", "SR weighted by shortest-route length / max(walked, shortest-route length)"),
    MetricSpec("osr", "OSR", "%", "some node of the path was the goal or one edge from it"),
    MetricSpec("final_m", "Final distance", "m", "geodesic distance from the final node to the goal (lower is better)"),
    MetricSpec("steps", "Steps", "steps", "mean steps taken"),
)
METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)

_NEIGHBOURS: weakref.WeakKeyDictionary[StreetGraph, dict[str, frozenset[str]]] = weakref.WeakKeyDictionary()


def neighbours(graph: StreetGraph) -> dict[str, frozenset[str]]:
    """Every node's neighbours along an edge either way round, made once per graph."""
    found = _NEIGHBOURS.get(graph)
    if found is None:
        near: dict[str, set[str]] = {n: set() for n in graph.nodes}
        for e in graph.edges:
            near[e.source].add(e.target)
            near[e.target].add(e.source)
        found = _NEIGHBOURS[graph] = {n: frozenset(s) for n, s in near.items()}
    return found


def success_nodes(graph: StreetGraph, goal: str) -> frozenset[str]:
    """The nodes where stopping succeeds: the goal and its graph neighbours."""
    return neighbours(graph)[goal] | {goal}


def success_radius_m(graph: StreetGraph, goal: str) -> float:
    """The success rule in metres: the farthest node where stopping still succeeds."""
    near = sorted(neighbours(graph)[goal])
    return float(graph.distances_to_set_m(goal, near).max()) if near else 0.0


def landmark_metrics(graph: StreetGraph, episode: Episode, trajectory: Trajectory) -> dict[str, float]:
    """Every measure of one finished episode, keyed and ordered as METRIC_KEYS."""
    path: Sequence[str] = trajectory.path
    if not path:
        raise ValueError(f"episode {episode.episode_id}: empty path; it must hold the start")
    near = success_nodes(graph, episode.target)
    success = trajectory.end_reason == EndReason.STOPPED and path[-1] in near
    walked = path_length_m(graph.latlon(list(path)))
    shortest = path_length_m(graph.latlon(list(episode.reference_path)))
    longest = max(walked, shortest)
    return {
        "sr": 100.0 if success else 0.0,
        "spl": (100.0 * (shortest / longest if longest > 0 else 1.0)) if success else 0.0,
        "osr": 100.0 if any(n in near for n in path) else 0.0,
        "final_m": graph.distance_m(path[-1], episode.target),
        "steps": float(len(path) - 1),
    }
