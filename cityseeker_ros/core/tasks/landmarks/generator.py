"""Landmark-goal tasks on a built world, made the way PReP made theirs (section 3, app. C).

An episode is a start, a goal node and PReP's description D = {R1, R2} (section 3.1,
Definition 2): R1 relates the goal to every landmark visible from it (`visible_nodes` holds
the goal), R2 relates every landmark to every other ("the relative position among all
landmarks in the environment"), one relation per pair. Start-goal pairs are drawn at random,
with the fewest-actions route from start to goal drawn from PReP's N(30, 10) steps (section
5.1). Their graphs are cut every 50 m; ours every ~20 m, and we keep PReP's step counts rather
than its metres: the number of decisions (what makes the task hard for a language agent, and
what a run costs) matches theirs, and routes of ~600 m fit a small extract. The budget is
PReP's: 2.5 times the shortest route, per episode (section 5.1).

Choices of ours, stated in each task file's `world` block: a landmark nearer the goal (or
another landmark) than MIN_RELATION_M is not related (its direction says nothing); a goal is
kept only where the street nodes its words fit all lie within `pin_radius_m` of it
(ambiguity.py says why 50 m), so that the words name one place; the category is how many
landmarks R1 names.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import path_length_m
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.family import GeneratedTasks
from cityseeker_ros.core.tasks.landmarks.ambiguity import PIN_RADIUS_M, Consistency, WordFit
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
SUCCESS_RULE = (
    "stop at the goal or at a node one street edge from it (the project's choice; PReP states no stop action "
    "and no radius)")


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
    max_goal_relations: Optional[int] = None  # None: every landmark visible from the goal (PReP's R1)
    pin_radius_m: float = PIN_RADIUS_M  # the nodes a goal's words fit all lie this near it

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
        if self.max_goal_relations is not None and self.max_goal_relations < 1:
            raise bad("max_goal_relations", "must be >= 1 (or None: every visible landmark)")
        if not self.pin_radius_m > 0:
            raise bad("pin_radius_m", "must be > 0 metres")


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
    """R2 as PReP states it: every pair of landmarks, once (by id: the later one placed from the
    earlier; the reverse relation is the same words turned round). Pairs nearer than
    MIN_RELATION_M are left out (their relation would name no direction)."""
    ordered = sorted(landmarks, key=lambda m: m.id)
    relations = []
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            rel = Relation.measure(b.id, b.name, a.id, a.name, (a.lat, a.lon), (b.lat, b.lon))
            if rel.true_distance_m >= MIN_RELATION_M:
                relations.append(rel)
    return relations


def goal_relations(graph: StreetGraph, landmarks: list[Landmark],
                   limit: Optional[int] = None) -> dict[str, list[Relation]]:
    """R1 for every node that can be a goal: every landmark it sees at least MIN_RELATION_M
    away, nearest first (at most `limit`, where one is given)."""
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


def _by_landmarks(counts: list[int]) -> dict[str, int]:
    """How many goal nodes are described by 1, 2, ... landmarks (keys as text, for JSON)."""
    out: dict[str, int] = {}
    for k in sorted(set(counts)):
        out[str(k)] = counts.count(k)
    return out


def _say_by_landmarks(by: dict[str, int]) -> str:
    return ", ".join(f"{n} by {k} landmark{'s' if k != '1' else ''}" for k, n in by.items()) or "none"


def pin_goals(graph: StreetGraph, landmarks: list[Landmark], described: dict[str, list[Relation]],
              radius_m: float) -> tuple[dict[str, Consistency], dict[str, Any]]:
    """The described goal nodes whose words fit no node farther than `radius_m` from them, with
    what the words fit; and the ambiguity before and after the rule, for the world block."""
    fit = WordFit(graph, {m.id: (m.lat, m.lon) for m in landmarks})
    counts, radii, sizes, kept = [], [], [], {}
    for node in sorted(described):
        nodes, dist = fit.radius(node, described[node])
        radius = float(dist.max()) if len(dist) else 0.0
        counts.append(len(described[node]))
        radii.append(radius)
        sizes.append(len(nodes))
        if radius <= radius_m:
            kept[node] = fit.consistency(node, described[node])
    pinned = [k for k, node in enumerate(sorted(described)) if node in kept]
    before, after = _by_landmarks(counts), _by_landmarks([counts[k] for k in pinned])
    facts = {
        "pin_radius_m": radius_m,
        "rule": (f"a goal is kept only when every street node its words fit lies within {radius_m:g} m of it "
                 "(the project's choice: one step of PReP's 50 m graph)"),
        "described_goal_nodes": len(described),
        "pinned_goal_nodes": len(kept),
        "described_by_landmarks": before,
        "pinned_by_landmarks": after,
        "described": {"consistent_nodes": _distribution(sizes), "radius_m": _distribution(radii)},
        "pinned": {"consistent_nodes": _distribution([sizes[k] for k in pinned]),
                   "radius_m": _distribution([radii[k] for k in pinned])},
        "limits": (f"{len(landmarks)} landmarks; {len(described)} street nodes see one or more "
                   f"({_say_by_landmarks(before)}); the words pin {len(kept)} of them within {radius_m:g} m "
                   f"({_say_by_landmarks(after)}). A goal is described only by the landmarks it sees, so the "
                   "fewer landmarks a world has, the fewer goals its words can pin (one landmark alone pins a "
                   "goal only where its sector and distance band hold a single short stretch of street)"),
    }
    return kept, facts


def world_facts(graph: StreetGraph, landmarks: list[Landmark], tasks: list[dict[str, Any]], goals: int,
                settings: LandmarkTaskSettings, ambiguity: dict[str, Any]) -> dict[str, Any]:
    """The facts to state beside every result: the landmarks, the shortest routes, the rules,
    and how many street nodes each goal's words fit, before and after the pinning rule."""
    lengths = sorted(e.length_m for e in graph.edges)
    routes: dict[str, Any] = {}
    for split in ("test", "dev"):
        chosen = [t for t in tasks if t["split"] == split]
        routes[split] = {"hops": _distribution([t["details"]["shortest_hops"] for t in chosen]),
                         "m": _distribution([t["details"]["shortest_m"] for t in chosen])}
    steps = ", ".join(f"{int(step)} m below {int(below)} m" if math.isfinite(below) else f"{int(step)} m beyond"
                      for below, step in DISTANCE_STEPS)
    test = [t["details"] for t in tasks if t["split"] == "test"]
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
        "description_rule": ("R1: the goal related to every landmark visible from it; R2: every pair of landmarks "
                             "(PReP section 3.1, Definition 2); a landmark nearer than "
                             f"{MIN_RELATION_M:g} m is not related (no direction)"),
        "direction_words": "8-point compass",
        "direction_tolerance_deg": DIRECTION_TOLERANCE_DEG,
        "distance_rounding": f"{steps}; tolerance half the step of the stated number",
        "goal_ambiguity": {**ambiguity, "test_tasks": {
            "consistent_nodes": _distribution([len(d["consistent_nodes"]) for d in test]),
            "radius_m": _distribution([d["consistent_radius_m"] for d in test]),
            "extent_m": _distribution([d["consistent_extent_m"] for d in test]),
            "landmarks_per_goal": _distribution([len(d["goal_relations"]) for d in test])}},
    }


def why_no_tasks(landmarks: list[Landmark], goals: int, settings: LandmarkTaskSettings, pinned: int = 0) -> str:
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
    if not pinned:
        return (f"{len(landmarks)} landmarks and {goals} street nodes that see one, but at none do the words pin "
                f"the goal within {settings.pin_radius_m:g} m (they fit street nodes farther away too)")
    return (f"no start {settings.min_hops}..{settings.max_hops} steps from any of the {pinned} pinned goal nodes "
            "(the street graph is too small or too cut up)")


def generate_landmark_tasks(name: str, graph: StreetGraph, scene: Scene,
                            settings: LandmarkTaskSettings = LandmarkTaskSettings()) -> GeneratedTasks:
    """The world's landmark-goal task file, deterministic in `settings.seed`; no tasks, with
    why, on a world of fewer than `min_landmarks` landmarks, without a describable goal, or
    where no description pins its goal within `settings.pin_radius_m`."""
    settings.validate()
    landmarks = sorted(scene.landmarks, key=lambda m: m.id)
    enough = len(landmarks) >= settings.min_landmarks
    described = goal_relations(graph, landmarks, settings.max_goal_relations) if enough else {}
    pinned, ambiguity = pin_goals(graph, landmarks, described, settings.pin_radius_m)
    r2 = landmark_relations(landmarks)
    tasks = _draw(name, graph, described, pinned, r2, landmarks, settings) if pinned else []
    counts: dict[str, int] = {}
    for t in tasks:
        counts[t["category"]] = counts.get(t["category"], 0) + 1
    document = {"version": TASK_FILE_VERSION, "family": FAMILY,
                "world": world_facts(graph, landmarks, tasks, len(described), settings, ambiguity),
                "settings": asdict(settings), "tasks": tasks}
    why = None if tasks else why_no_tasks(landmarks, len(described), settings, len(pinned))
    return GeneratedTasks(document, counts, why)


def _draw(name: str, graph: StreetGraph, goals: dict[str, list[Relation]], pinned: dict[str, Consistency],
          r2: list[Relation], landmarks: list[Landmark], settings: LandmarkTaskSettings) -> list[dict[str, Any]]:
    actions = ActionModel(graph)
    predecessors: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for v in graph.nodes:
        for w in actions.successors(v):
            predecessors[w].append(v)
    rng = np.random.default_rng(settings.seed)
    goal_ids = sorted(pinned)
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
                # What the words fit (the goal among them): the checker recomputes it from the map.
                "consistent_nodes": list(pinned[goal].nodes),
                "consistent_radius_m": pinned[goal].radius_m,
                "consistent_extent_m": pinned[goal].extent_m,
            },
        })
    return tasks
