"""Landmark-goal tasks on a built world, made the way PReP made theirs (section 3, app. C).

An episode is a start, a goal node and the description D = {R1, R2}: R1 relates the goal to the
landmarks visible from it (their `visible_nodes` hold the goal), R2 relates the landmarks to each
other. Start-goal pairs are drawn at random, with the fewest-actions route from start to goal
drawn from PReP's N(30, 10) steps. Their graphs are cut every 50 m; ours every ~20 m, and we keep
PReP's step counts rather than its metres: the number of decisions (what makes the task hard for a
language agent, and what a run costs) matches theirs, and routes of ~600 m fit a small extract.
The budget is PReP's: 2.5 times the shortest route, per episode.

Choices of ours, stated in each task file's `world` block: R2 is a spanning tree of the landmarks
(each joined to its nearest already-placed one), enough to place every landmark from any one of
them without listing all n(n-1)/2 pairs; R1 states at most `max_goal_relations` landmarks, the
nearest first; the category is how many landmarks R1 names.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import path_length_m
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.family import GeneratedTasks
from cityseeker_ros.core.tasks.landmarks.metrics import success_radius_m
from cityseeker_ros.core.tasks.landmarks.relations import (
    DIRECTION_TOLERANCE_DEG,
    DISTANCE_STEPS,
    GOAL,
    MIN_RELATION_M,
    Relation,
    sentence,
)
from cityseeker_ros.core.tasks.task_file import TASK_FILE_VERSION

if TYPE_CHECKING:
    from cityseeker_ros.core.streets.graph import StreetGraph
    from cityseeker_ros.core.worlds.scene import Landmark, Scene

FAMILY = "landmarks"
GOAL_NAME = "The goal"
# Categories: how many landmarks the goal is described by (PReP finds visibility decides success).
CATEGORIES: tuple[str, ...] = ("one landmark", "two landmarks", "three or more landmarks")
# Difficulty by the shortest route in steps: within one standard deviation of PReP's mean is medium.
EASY_MAX_HOPS, MEDIUM_MAX_HOPS = 20, 40
SUCCESS_RULE = "stop at the goal or at a node one street edge from it (within one node)"


@dataclass(frozen=True)
class LandmarkTaskSettings:
    seed: int = 0
    test_tasks: int = 100  # PReP: 100 test tasks per city
    dev_tasks: int = 20
    route_mean_hops: float = 30.0  # PReP's N(30, 10) steps
    route_sd_hops: float = 10.0
    min_hops: int = 8
    max_hops: int = 60
    budget_factor: float = 2.5  # PReP's iteration limit, times the shortest route
    min_landmarks: int = 3
    max_goal_relations: int = 4

    def validate(self) -> None:
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"landmark tasks: {name}={getattr(self, name)!r} {why}")

        for name in ("test_tasks", "dev_tasks"):
            if getattr(self, name) < 0:
                raise bad(name, "must be >= 0")
        if not 1 <= self.min_hops <= self.max_hops:
            raise ConfigError(f"landmark tasks: need 1 <= min_hops <= max_hops, got {self.min_hops}..{self.max_hops}")
        if self.route_sd_hops < 0:
            raise bad("route_sd_hops", "must be >= 0")
        if self.budget_factor < 1:
            raise bad("budget_factor", "must be >= 1 (the shortest route must fit the budget)")
        if self.min_landmarks < 1:
            raise bad("min_landmarks", "must be >= 1")
        if self.max_goal_relations < 1:
            raise bad("max_goal_relations", "must be >= 1")


def budget_for(hops: int, factor: float = 2.5) -> int:
    """PReP's iteration limit: `factor` times the shortest route, rounded up."""
    return int(math.ceil(factor * hops - 1e-9))


def difficulty_for(hops: int) -> str:
    return "easy" if hops <= EASY_MAX_HOPS else "medium" if hops <= MEDIUM_MAX_HOPS else "hard"


def category_for(goal_relations: int) -> str:
    return CATEGORIES[min(goal_relations, len(CATEGORIES)) - 1]


def public_landmarks(landmarks: list[Landmark]) -> list[dict[str, Any]]:
    """What anyone may know of a landmark, as a tourist knows what a cathedral looks like: its
    name, kind, identity colour and size; never where it stands."""
    return [{"id": m.id, "name": m.name, "kind": m.kind, "colour": list(m.colour), "height_m": m.height_m,
             "width_m": m.width_m, "crown_m": getattr(m, "crown_m", 0.0)} for m in landmarks]


def landmark_relations(landmarks: list[Landmark]) -> list[Relation]:
    """R2 as a spanning tree: from the first landmark (by id), each next one is the unplaced
    landmark nearest any placed one, related to that one. Landmarks closer than MIN_RELATION_M
    to every placed one stay out (their relation would name no direction)."""
    if not landmarks:
        return []
    placed, rest, relations = [landmarks[0]], list(landmarks[1:]), []
    while rest:
        pairs = [(Relation.measure(m.id, m.name, p.id, p.name, (p.lat, p.lon), (m.lat, m.lon)), m)
                 for m in rest for p in placed]
        pairs = [(r, m) for r, m in pairs if r.true_distance_m >= MIN_RELATION_M]
        if not pairs:
            break
        rel, m = min(pairs, key=lambda rm: (rm[0].true_distance_m, rm[0].subject, rm[0].landmark))
        relations.append(rel)
        placed.append(m)
        rest.remove(m)
    return relations


def goal_relations(graph: StreetGraph, landmarks: list[Landmark], limit: int) -> dict[str, list[Relation]]:
    """R1 for every node that can be a goal: the landmarks it sees (nearest first, at most
    `limit`), each at least MIN_RELATION_M away."""
    seen_from: dict[str, list[Landmark]] = {}
    for m in landmarks:
        for node in dict.fromkeys(m.visible_nodes):
            if node in graph:
                seen_from.setdefault(node, []).append(m)
    out: dict[str, list[Relation]] = {}
    for node in sorted(seen_from):
        n = graph.nodes[node]
        rels = [Relation.measure(GOAL, GOAL_NAME, m.id, m.name, (m.lat, m.lon), (n.lat, n.lon))
                for m in seen_from[node]]
        rels = sorted((r for r in rels if r.true_distance_m >= MIN_RELATION_M),
                      key=lambda r: (r.true_distance_m, r.landmark))[:limit]
        if rels:
            out[node] = rels
    return out


def _reverse_hops(actions: ActionModel, predecessors: dict[str, list[str]], goal: str, limit: int) -> dict[str, int]:
    """Fewest actions from every node to `goal`, up to `limit`."""
    dist = {goal: 0}
    queue = deque([goal])
    while queue:
        v = queue.popleft()
        d = dist[v] + 1
        if d > limit:
            continue
        for u in predecessors[v]:
            if u not in dist:
                dist[u] = d
                queue.append(u)
    return dist


def _distribution(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    a = np.asarray(values, dtype=float)
    return {"n": len(values), "min": round(float(a.min()), 1), "median": round(float(np.median(a)), 1),
            "max": round(float(a.max()), 1), "mean": round(float(a.mean()), 1)}


def world_facts(graph: StreetGraph, landmarks: list[Landmark], tasks: list[dict[str, Any]], goals: int,
                settings: LandmarkTaskSettings) -> dict[str, Any]:
    """The facts to state beside every result: the landmarks, the shortest routes, the rules."""
    lengths = sorted(e.length_m for e in graph.edges)
    routes: dict[str, Any] = {}
    for split in ("test", "dev"):
        chosen = [t for t in tasks if t["split"] == split]
        routes[split] = {"hops": _distribution([t["details"]["shortest_hops"] for t in chosen]),
                         "m": _distribution([t["details"]["shortest_m"] for t in chosen])}
    steps = ", ".join(f"{int(step)} m below {int(below)} m" if math.isfinite(below) else f"{int(step)} m beyond"
                      for below, step in DISTANCE_STEPS)
    return {
        "landmarks": len(landmarks),
        "landmark_names": [m.name for m in landmarks],
        "goal_nodes": goals,
        "node_spacing_m": round(float(np.median(lengths)), 1) if lengths else 0.0,
        "shortest_routes": routes,
        "route_rule": (f"fewest actions drawn from N({settings.route_mean_hops:g}, {settings.route_sd_hops:g}) "
                       f"steps, kept in {settings.min_hops}..{settings.max_hops} (PReP's steps at this world's "
                       "spacing)"),
        "budget_rule": f"ceil({settings.budget_factor:g} x shortest route steps)",
        "success_rule": SUCCESS_RULE,
        "direction_words": "8-point compass",
        "direction_tolerance_deg": DIRECTION_TOLERANCE_DEG,
        "distance_rounding": f"{steps}; tolerance half the step",
    }


def why_no_tasks(landmarks: list[Landmark], goals: int, settings: LandmarkTaskSettings) -> str:
    if not landmarks:
        return (f"no landmarks (no named tower, church, station, monument or tall building in the extract); "
                f"landmark goals need at least {settings.min_landmarks}")
    if len(landmarks) < settings.min_landmarks:
        names = ", ".join(m.name for m in landmarks)
        return f"{len(landmarks)} landmark{'s' if len(landmarks) != 1 else ''} ({names}); landmark goals need " \
               f"at least {settings.min_landmarks}"
    if not goals:
        return (f"{len(landmarks)} landmarks, but no street node sees any of them from {MIN_RELATION_M:g} m or "
                "more, so no goal can be described")
    return (f"no start {settings.min_hops}..{settings.max_hops} steps from any of the {goals} goal nodes "
            "(the street graph is too small or too cut up)")


def generate_landmark_tasks(name: str, graph: StreetGraph, scene: Scene,
                            settings: LandmarkTaskSettings = LandmarkTaskSettings()) -> GeneratedTasks:
    """The world's landmark-goal task file, deterministic in `settings.seed`; no tasks, with
    why, on a world of fewer than `min_landmarks` landmarks or without a describable goal."""
    settings.validate()
    landmarks = sorted(scene.landmarks, key=lambda m: m.id)
    enough = len(landmarks) >= settings.min_landmarks
    goals = goal_relations(graph, landmarks, settings.max_goal_relations) if enough else {}
    r2 = landmark_relations(landmarks)
    tasks = _draw(name, graph, goals, r2, landmarks, settings) if goals else []
    counts: dict[str, int] = {}
    for t in tasks:
        counts[t["category"]] = counts.get(t["category"], 0) + 1
    document = {"version": TASK_FILE_VERSION, "family": FAMILY,
                "world": world_facts(graph, landmarks, tasks, len(goals), settings),
                "settings": asdict(settings), "tasks": tasks}
    return GeneratedTasks(document, counts, None if tasks else why_no_tasks(landmarks, len(goals), settings))


def _draw(name: str, graph: StreetGraph, goals: dict[str, list[Relation]], r2: list[Relation],
          landmarks: list[Landmark], settings: LandmarkTaskSettings) -> list[dict[str, Any]]:
    actions = ActionModel(graph)
    predecessors: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for v in graph.nodes:
        for w in actions.successors(v):
            predecessors[w].append(v)
    rng = np.random.default_rng(settings.seed)
    goal_ids = sorted(goals)
    wanted = settings.test_tasks + settings.dev_tasks
    reach: dict[str, dict[str, int]] = {}
    public = public_landmarks(landmarks)
    r2_text = "; ".join(f"{r.subject_name} is {r.phrase()}" for r in r2)
    tasks: list[dict[str, Any]] = []
    used: set[tuple[str, str]] = set()
    for _ in range(max(1, wanted) * 20):
        if len(tasks) >= wanted:
            break
        goal = goal_ids[int(rng.integers(len(goal_ids)))]
        want = min(settings.max_hops, max(settings.min_hops,
                                          int(round(rng.normal(settings.route_mean_hops, settings.route_sd_hops)))))
        if goal not in reach:
            hops = _reverse_hops(actions, predecessors, goal, settings.max_hops)
            reach[goal] = {n: d for n, d in hops.items() if d >= settings.min_hops}
        if not reach[goal]:
            continue
        best = min(abs(d - want) for d in reach[goal].values())
        starts = sorted(n for n, d in reach[goal].items() if abs(d - want) == best)
        start = starts[int(rng.integers(len(starts)))]
        if (start, goal) in used:
            continue
        used.add((start, goal))
        route = [start]
        for index in actions.action_path(start, goal) or []:
            route.append(actions.next_node(route[-1], index))
        hops = len(route) - 1
        r1 = goals[goal]
        instruction = sentence(GOAL_NAME, r1) + (f" Landmarks: {r2_text}." if r2_text else "")
        tasks.append({
            "id": f"{name}-landmarks-{len(tasks):04d}",
            "category": category_for(len(r1)),
            "difficulty": difficulty_for(hops),
            "instruction": instruction,
            "request": " and ".join(r.phrase() for r in r1),
            "start": start,
            "target": goal,
            "reference_path": route,
            "split": "test" if len(tasks) < settings.test_tasks else "dev",
            "budget": budget_for(hops, settings.budget_factor),
            "details": {
                "goal_relations": [r.to_json() for r in r1],
                "landmark_relations": [r.to_json() for r in r2],
                "landmarks": public,
                "shortest_hops": hops,
                "shortest_m": round(path_length_m(graph.latlon(route)), 1),
                "success_radius_m": round(success_radius_m(graph, goal), 1),
            },
        })
    return tasks
