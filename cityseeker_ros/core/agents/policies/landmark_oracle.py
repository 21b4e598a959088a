"""landmark-oracle: PReP's oracle setting for landmark goals.

PReP's oracle replaces perception with ground truth ("directions and distances measured by
GPS"); what remains is turning the description into a place and walking there. This policy knows
where every landmark stands (the world's scene), so it knows every landmark's true bearing and
distance from anywhere; it places the goal from the episode's stated relations (their region's
centroid, core/tasks/landmarks/estimate.py), takes the street node nearest that estimate among
the nodes the words describe (the nearest node at all where none fits), walks a fewest-actions
route there and stops. Its gap to `oracle` is what the description's vagueness costs; the gap
from `landmark-seeker` to it is what perception costs. Privileged: labelled oracle in results.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.policies.base import POLICIES, Policy
from cityseeker_ros.core.streets.geodesy import WGS84
from cityseeker_ros.core.tasks.environment import STOP, Action, Observation, move
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.landmarks.estimate import Anchored, estimate_goal
from cityseeker_ros.core.tasks.landmarks.relations import Relation, word_bearing


def relations_hold(relation: Relation, landmark_latlon: tuple[float, float], latlon: np.ndarray) -> np.ndarray:
    """Which of the points `latlon` (n, 2) the relation's words describe, by WGS84 geodesics."""
    n = len(latlon)
    az, _, dist = WGS84.inv(np.full(n, landmark_latlon[1]), np.full(n, landmark_latlon[0]), latlon[:, 1], latlon[:, 0])
    off = (np.atleast_1d(az) - word_bearing(relation.direction) + 180.0) % 360.0 - 180.0
    return ((np.abs(off) <= relation.direction_tolerance_deg)
            & (np.abs(np.atleast_1d(dist) - relation.distance_m) <= relation.distance_tolerance_m))


@POLICIES.register("landmark-oracle")
class LandmarkOraclePolicy(Policy):
    """Ground-truth landmark positions, a geometric goal estimate and a shortest-route planner."""

    privileged = True
    uses_images = False
    families = frozenset({"landmarks"})

    def __init__(self) -> None:
        self._landmarks: dict[str, dict[str, tuple[float, float]]] = {}  # world folder -> id -> (lat, lon)

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        if world is None:
            raise ValueError("the landmark-oracle policy needs the world (it is privileged)")
        super().reset(episode, rng, world)
        self.world = world
        self.goal: Optional[str] = None
        self.plan: Optional[list[int]] = None

    def _positions(self) -> dict[str, tuple[float, float]]:
        """Every landmark's true position, from the world folder's scene (read once per world)."""
        root = self.world.root
        if root is None or not (Path(root) / "scene.json").is_file():
            raise ValueError(f"landmark-oracle needs a world folder with scene.json (its landmarks); "
                             f"{self.world.city} has none")
        key = str(root)
        if key not in self._landmarks:
            from cityseeker_ros.core.worlds.folder import load_scene

            self._landmarks[key] = {m.id: (m.lat, m.lon) for m in load_scene(Path(root)).landmarks}
        return self._landmarks[key]

    def choose_goal(self, start: str) -> str:
        """The node the stated relations point at, among those reachable from `start`."""
        graph = self.world.graph
        positions = self._positions()
        relations = [Relation.from_json(doc) for doc in self.episode.details.get("goal_relations", [])]
        if not relations:
            raise ValueError(f"episode {self.episode.episode_id}: no goal relations (details.goal_relations)")
        missing = [r.landmark for r in relations if r.landmark not in positions]
        if missing:
            raise ValueError(f"episode {self.episode.episode_id}: goal relations name landmarks the world's "
                             f"scene.json lacks ({', '.join(missing)})")
        frame = graph.frame
        anchored = [Anchored(r, tuple(float(v) for v in frame.to_xy(*positions[r.landmark])))  # type: ignore[arg-type]
                    for r in relations]
        estimate = np.asarray(estimate_goal(anchored))
        ids = sorted(self.world.actions.hops_from(start))
        latlon = graph.latlon(ids)
        fit = np.ones(len(ids), dtype=bool)
        for r in relations:
            fit &= relations_hold(r, positions[r.landmark], latlon)
        pool = [i for i in range(len(ids)) if fit[i]] or list(range(len(ids)))
        dist = np.hypot(*(frame.to_xy(latlon[pool, 0], latlon[pool, 1]) - estimate).T)
        return ids[pool[min(range(len(pool)), key=lambda k: (round(float(dist[k]), 6), ids[pool[k]]))]]

    def act(self, observation: Observation) -> Action:
        if self.plan is None:
            self.goal = self.choose_goal(observation.node)
            self.plan = self.world.actions.action_path(observation.node, self.goal) or []
        return move(self.plan.pop(0)) if self.plan else STOP

    def explain(self) -> tuple[Optional[float], str]:
        return None, f"walking to {self.goal}, the node the stated relations describe" if self.goal else ""

    def episode_extras(self) -> dict[str, Any]:
        return {"estimated_goal": self.goal} if self.goal else {}
