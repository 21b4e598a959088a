"""Navigation tasks for a world, built the way the paper built CitySeeker's (§3.1, app. B.1).

For each need: the POIs that satisfy it, the graph node each is seen from best (its nearest
visible node) as the target, start nodes from which that target is strictly the nearest
satisfying one, a shortest route of `min_steps`..`max_steps` hops, and no other satisfying
POI visible from any node of the route (the paper's manual check that "no alternative POIs
that could fulfil the request exist along the path"). Every task is solvable by
construction: its route is executable action by action.
"""
from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.episode import CATEGORY_NAMES, difficulty_of
from cityseeker_ros.core.worlds.needs import Need, needs_for
from cityseeker_ros.core.worlds.scene import Poi

TASKS_VERSION = "1"


@dataclass(frozen=True)
class TaskSettings:
    seed: int = 0
    min_steps: int = 5
    max_steps: int = 25
    per_need: int = 6  # episodes per request, spread over its targets
    test_per_category: int = 20  # the stated test split size; the rest is the dev split

    def validate(self) -> None:
        if not 1 <= self.min_steps <= self.max_steps:
            raise ConfigError(f"tasks: need 1 <= min_steps <= max_steps, got {self.min_steps}..{self.max_steps}")
        for name in ("per_need", "test_per_category"):
            if getattr(self, name) < 1:
                raise ConfigError(f"tasks: {name} must be at least 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class WorldTask:
    id: str
    category: str  # release code, e.g. "question7"
    request: str
    instruction: str
    difficulty: str
    start: str
    target: str
    target_poi: str
    reference_path: tuple[str, ...]
    route_length_m: float
    split: str = "dev"
    stage_goals: tuple[str, ...] = ()  # two-stage requests ("X then Y"): goals before the target

    @property
    def steps(self) -> int:
        return len(self.reference_path) - 1


@dataclass
class TaskSet:
    settings: TaskSettings
    tasks: list[WorldTask]
    category_targets: dict[str, list[str]]  # request -> target nodes of every satisfying POI (TCC)
    satisfying_pois: dict[str, int] = field(default_factory=dict)  # request -> count, zero when absent

    def counts(self, split: str | None = None) -> dict[str, int]:
        """Tasks per paper category name, in the paper's order."""
        chosen = [t for t in self.tasks if split is None or t.split == split]
        return {CATEGORY_NAMES[c]: n for c in CATEGORY_NAMES
                if (n := sum(t.category == c for t in chosen))}

    def to_json(self) -> dict[str, Any]:
        return {"version": TASKS_VERSION, "settings": asdict(self.settings),
                "counts": {"test": self.counts("test"), "dev": self.counts("dev")},
                "satisfying_pois": self.satisfying_pois, "category_targets": self.category_targets,
                "tasks": [{**asdict(t), "steps": t.steps} for t in self.tasks]}


def generate_tasks(name: str, graph: StreetGraph, pois: list[Poi], settings: TaskSettings = TaskSettings(),
                   needs: list[Need] | None = None) -> TaskSet:
    settings.validate()
    rng = np.random.default_rng(settings.seed)
    actions = ActionModel(graph)
    reverse = _reverse_adjacency(graph, actions)
    tasks: list[WorldTask] = []
    targets: dict[str, list[str]] = {}
    satisfying: dict[str, int] = {}
    hops_to: dict[str, dict[str, int]] = {}  # target -> starts within max_steps; shared by the needs
    for need in needs if needs is not None else needs_for(pois):
        chosen = [p for p in pois if need.satisfied_by(p) and p.visible_nodes]
        satisfying[need.request] = len(chosen)
        if not chosen:
            continue
        found = _tasks_for(need, chosen, graph, actions, reverse, settings, rng, hops_to)
        if found:
            targets[need.request] = sorted({p.visible_nodes[0] for p in chosen})
            tasks.extend(found)
    tasks = _numbered(name, tasks)
    return TaskSet(settings, _split(tasks, settings, rng), targets, satisfying)


def why_no_tasks(graph: StreetGraph, pois: list[Poi], settings: TaskSettings = TaskSettings(),
                 needs: list[Need] | None = None) -> str:
    """Why `generate_tasks` found no task, in terms a user can act on (a bigger area, other
    step limits): no streets, no satisfying places, or routes too short."""
    if not graph.edges:
        return f"no streets: {len(graph)} street nodes and no walkable edge between them"
    needs = needs if needs is not None else needs_for(pois)
    targets = {p.visible_nodes[0] for need in needs for p in pois if need.satisfied_by(p) and p.visible_nodes}
    if not targets:
        seen = sum(1 for p in pois if p.visible_nodes)
        return (f"no satisfying places: none of the {len(pois)} places ({seen} seen from a street node) "
                f"meets any of the {len(needs)} needs")
    reverse = _reverse_adjacency(graph, ActionModel(graph))
    longest = max(max(_hops_to(t, reverse, settings.min_steps).values()) for t in targets)  # capped: enough to compare
    if longest < settings.min_steps:
        return (f"routes too short: each of the {len(graph)} nodes is at most {longest} step(s) from a "
                f"satisfying place, and a task needs {settings.min_steps}..{settings.max_steps} steps")
    return (f"no usable routes: every start {settings.min_steps}..{settings.max_steps} steps from one of the "
            f"{len(targets)} satisfying places is as near another, or passes another in sight")


def _reverse_adjacency(graph: StreetGraph, actions: ActionModel) -> dict[str, list[str]]:
    reverse: dict[str, list[str]] = defaultdict(list)
    for v in graph.nodes:
        for w in actions.successors(v):
            reverse[w].append(v)
    return reverse


def _hops_to(target: str, reverse: dict[str, list[str]], limit: int | None = None) -> dict[str, int]:
    """Fewest actions from every node to `target` (every node at most `limit` actions away)."""
    dist = {target: 0}
    queue = deque([target])
    while queue:
        v = queue.popleft()
        d = dist[v] + 1
        if limit is not None and d > limit:
            continue
        for u in reverse.get(v, ()):
            if u not in dist:
                dist[u] = d
                queue.append(u)
    return dist


def _tasks_for(need: Need, chosen: list[Poi], graph: StreetGraph, actions: ActionModel,
               reverse: dict[str, list[str]], settings: TaskSettings, rng: np.random.Generator,
               hops_to: dict[str, dict[str, int]]) -> list[WorldTask]:
    """Tasks for one need. Only targets within max_steps of a start can make it a start (as its
    nearest, or as the equally near rival that rules it out), so each target's search stops at
    max_steps and a start ranks only the targets that reached it: the cost follows the budget's
    reach, not the size of the graph."""
    poi_at: dict[str, str] = {}
    for p in sorted(chosen, key=lambda p: p.id):
        poi_at.setdefault(p.visible_nodes[0], p.id)
    seen_from: dict[str, set[str]] = defaultdict(set)  # node -> satisfying POIs visible from it
    for p in chosen:
        for n in p.visible_nodes:
            seen_from[n].add(p.id)
    near: dict[str, list[tuple[int, str]]] = defaultdict(list)  # start -> (hops, target) within max_steps
    for t in sorted(poi_at):
        if t not in hops_to:
            hops_to[t] = _hops_to(t, reverse, settings.max_steps)
        for s, d in hops_to[t].items():
            near[s].append((d, t))

    by_target: dict[str, list[str]] = defaultdict(list)
    for s in sorted(near):
        ranked = sorted(near[s])
        if not settings.min_steps <= ranked[0][0] <= settings.max_steps:
            continue
        if len(ranked) > 1 and ranked[1][0] == ranked[0][0]:
            continue  # two equally near targets: "the nearest" would be ambiguous
        by_target[ranked[0][1]].append(s)

    found: list[WorldTask] = []
    order = list(by_target)
    rng.shuffle(order)
    pools = {t: list(rng.permutation(by_target[t])) for t in order}
    while len(found) < settings.per_need and any(pools.values()):
        for t in order:  # round-robin over targets, so one shop does not take every episode
            if len(found) >= settings.per_need or not pools[t]:
                continue
            start = str(pools[t].pop())
            task = _route_task(need, start, t, poi_at[t], graph, actions, seen_from, settings)
            if task is not None:
                found.append(task)
    return found


def _route_task(need: Need, start: str, target: str, poi_id: str, graph: StreetGraph, actions: ActionModel,
                seen_from: dict[str, set[str]], settings: TaskSettings) -> WorldTask | None:
    path = graph.shortest_path(start, target)
    if not settings.min_steps <= len(path) - 1 <= settings.max_steps or not actions.route_executable(path):
        return None
    if any(seen_from.get(n, set()) - {poi_id} for n in path):
        return None  # another satisfying place is in sight on the way: the target would not be "the nearest"
    length = sum(graph.distance_m(a, b) for a, b in zip(path, path[1:]))
    return WorldTask("", need.category, need.request, need.instruction, difficulty_of(len(path) - 1),
                start, target, poi_id, tuple(path), round(length, 2))


def _numbered(name: str, tasks: list[WorldTask]) -> list[WorldTask]:
    ordered = sorted(tasks, key=lambda t: (list(CATEGORY_NAMES).index(t.category), t.request, t.start))
    return [replace(t, id=f"{name}-{i:04d}") for i, t in enumerate(ordered)]


def _split(tasks: list[WorldTask], settings: TaskSettings, rng: np.random.Generator) -> list[WorldTask]:
    by_category: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(tasks):
        by_category[t.category].append(i)
    test: set[int] = set()
    for category in sorted(by_category):
        idx = by_category[category]
        test.update(int(i) for i in rng.permutation(idx)[:settings.test_per_category])
    return [replace(t, split="test" if i in test else "dev") for i, t in enumerate(tasks)]
