"""landmark-seeker: an honest CPU agent for landmark goals, PReP's loop without a language model.

It knows what a tourist knows: the episode's description and the public list of landmarks
(name, identity colour, true height); never the goal's position, the landmarks' positions or the
graph. At each node it

1. perceives: finds landmarks in the views by colour, bearing from the image column and
   distance from apparent size (core/tasks/landmarks/perception.py);
2. reflects: each sighting places its landmark at (where I am) + (what I saw); sightings are
   pooled over the walk (nearer ones weigh more: distance errors grow with distance), landmarks
   never seen are placed through the landmark-to-landmark relations, and the goal is placed from
   the goal relations (estimate.py). Where it is comes from the observation's position, as
   PReP's prompts give the agent its coordinates;
3. plans: walks the view heading closest to the goal's bearing, avoiding the headings it has
   already taken from this node, and stops when it believes it has arrived (within `arrive_m`,
   or within twice that on a node it has already visited: it is circling the goal), or when one
   step is left (a move would spend the budget and fail for certain). Before any landmark is
   placed it explores, keeping straight on.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.policies.base import POLICIES, Policy
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.tasks.environment import STOP, Action, Observation, move
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.landmarks.estimate import XY, Anchored, estimate_goal, place_landmarks
from cityseeker_ros.core.tasks.landmarks.perception import (
    DEFAULT_EYE_M,
    DEFAULT_FOV_DEG,
    LandmarkLook,
    Sighting,
    find_in_panorama,
    find_in_view,
)
from cityseeker_ros.core.tasks.landmarks.relations import Relation, compass_word, polar_xy, xy_bearing_distance

EARTH_RADIUS_M = 6371008.8


@POLICIES.register("landmark-seeker")
class LandmarkSeekerPolicy(Policy):
    """Perceive landmarks by colour, place the goal from the description, walk there, stop.

    Parameters: `fov_deg` and `eye_m` of the views (give the view source's; defaults are the
    rendered source's), `tolerance` (per-channel colour match), `min_pixels` (smallest patch
    taken for a landmark), `arrive_m` (stop radius), `panorama` (also look at the node's
    panorama: every direction, not only the walkable ones; costs a panorama render per step),
    `slack` (how much wider than stated the agent reads the words' tolerances).
    """

    uses_images = True
    families = frozenset({"landmarks"})

    def __init__(self, fov_deg: float = DEFAULT_FOV_DEG, eye_m: float = DEFAULT_EYE_M, tolerance: int = 12,
                 min_pixels: int = 6, arrive_m: float = 12.0, panorama: bool = False, slack: float = 1.5,
                 trust: float = 0.5) -> None:
        if not 0 < fov_deg < 180:
            raise ValueError(f"landmark-seeker: fov_deg must be in (0, 180), got {fov_deg}")
        if arrive_m <= 0 or slack <= 0 or not 0 < trust <= 1:
            raise ValueError("landmark-seeker: arrive_m and slack must be > 0 and trust in (0, 1]")
        self.fov_deg, self.eye_m, self.tolerance, self.min_pixels = float(fov_deg), float(eye_m), int(tolerance), \
            int(min_pixels)
        self.arrive_m, self.panorama, self.slack, self.trust = float(arrive_m), bool(panorama), float(slack), \
            float(trust)

    @classmethod
    def shows_panorama(cls, params: dict[str, Any]) -> bool:
        return bool(params.get("panorama", False))

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        super().reset(episode, rng, world)
        details = episode.details
        self.looks = [LandmarkLook.from_json(m) for m in details.get("landmarks", [])]
        self.goal_relations = [Relation.from_json(d) for d in details.get("goal_relations", [])]
        self.landmark_relations = [Relation.from_json(d) for d in details.get("landmark_relations", [])]
        self.origin: Optional[tuple[float, float]] = None
        self.seen: dict[str, list[tuple[XY, float]]] = {}  # landmark -> [(where it stands, weight)]
        self.visits: Counter[str] = Counter()
        self.taken: Counter[tuple[str, int]] = Counter()
        self.goal: Optional[XY] = None
        self._why = ""

    def here(self, observation: Observation) -> XY:
        """The observation's position in local metres east and north of the episode's start."""
        if self.origin is None:
            self.origin = (observation.lat, observation.lon)
        lat0, lon0 = self.origin
        return (EARTH_RADIUS_M * math.cos(math.radians(lat0)) * math.radians(observation.lon - lon0),
                EARTH_RADIUS_M * math.radians(observation.lat - lat0))

    def perceive(self, observation: Observation) -> list[Sighting]:
        found: list[Sighting] = []
        for view in observation.views:
            if view.image is not None:
                found += find_in_view(np.asarray(view.image), view.heading, self.looks, fov_deg=self.fov_deg,
                                      eye_m=self.eye_m, tolerance=self.tolerance, min_pixels=self.min_pixels)
        if self.panorama and observation.panorama is not None:
            image = observation.panorama.get()
            if image is not None:
                found += find_in_panorama(np.asarray(image), observation.facing, self.looks, eye_m=self.eye_m,
                                          tolerance=self.tolerance, min_pixels=self.min_pixels)
        return found

    def reflect(self, here: XY, sightings: list[Sighting]) -> Optional[XY]:
        """The goal's estimated position, once some landmark the description names is placed."""
        for s in sightings:
            dx, dy = polar_xy(s.bearing_deg, s.distance_m)
            weight = 1.0 / max(s.distance_m, 10.0) ** 2
            self.seen.setdefault(s.landmark, []).append(((here[0] + dx, here[1] + dy), weight))
        known = {}
        for lm, guesses in self.seen.items():
            total = sum(w for _, w in guesses)
            known[lm] = ((sum(p[0] * w for p, w in guesses) / total, sum(p[1] * w for p, w in guesses) / total), total)
        placed = place_landmarks(known, self.landmark_relations, self.trust)
        anchored = [Anchored(r, placed[r.landmark][0], placed[r.landmark][1])
                    for r in self.goal_relations if r.landmark in placed]
        return estimate_goal(anchored, self.slack) if anchored else None

    def act(self, observation: Observation) -> Action:
        here = self.here(observation)
        self.visits[observation.node] += 1
        self.goal = self.reflect(here, self.perceive(observation)) or self.goal
        if not observation.views or observation.steps_left <= 1:
            self._why = "no step left to move and still stop" if observation.views else "no walkable heading"
            return STOP
        if self.goal is None:
            self._why = "no landmark of the description placed yet: exploring"
            target = observation.facing
        else:
            target, dist = xy_bearing_distance(self.goal[0] - here[0], self.goal[1] - here[1])
            self._why = f"goal about {dist:.0f} m {compass_word(target)}"
            if dist <= self.arrive_m or (dist <= 2 * self.arrive_m and self.visits[observation.node] > 1):
                return STOP
        noise = self.rng.random(len(observation.views)) * 1e-3  # ties broken by the episode's rng
        scores = [math.cos(math.radians(circular_difference(v.heading, target)))
                  - 0.75 * self.taken[(observation.node, v.index)] + noise[k]
                  for k, v in enumerate(observation.views)]
        best = observation.views[int(np.argmax(scores))]
        self.taken[(observation.node, best.index)] += 1
        return move(best.index)

    def explain(self) -> tuple[Optional[float], str]:
        return None, self._why

    def episode_extras(self) -> dict[str, Any]:
        return {"landmarks_seen": sorted(self.seen)}
