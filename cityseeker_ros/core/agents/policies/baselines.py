"""The paper's baselines, plus an oracle that measures the action model's ceiling."""
from __future__ import annotations

from typing import Optional

import numpy as np

from cityseeker_ros.core.agents.policies.base import POLICIES, Policy
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.tasks.environment import STOP, Action, Observation, move
from cityseeker_ros.core.tasks.episode import Episode, World


class HeadingOnlyPolicy(Policy):
    """Decides from headings alone, so the benchmark makes no images for it."""

    uses_images = False
    # They walk and stop, never answer: a question would end unanswered (question-random is its chance).
    families = frozenset({"needs", "landmarks"})


@POLICIES.register("random")
class RandomPolicy(HeadingOnlyPolicy):
    """Uniform over walkable headings; never stops (the paper's Random Choice)."""

    def act(self, observation: Observation) -> Action:
        if not observation.views:
            return STOP
        return move(int(self.rng.integers(len(observation.views))))


@POLICIES.register("first-heading")
class FirstHeadingPolicy(HeadingOnlyPolicy):
    """Always walkable heading 0: what the paper's "Forward Direction" baseline actually did."""

    def act(self, observation: Observation) -> Action:
        return move(0) if observation.views else STOP


@POLICIES.register("forward")
class ForwardPolicy(HeadingOnlyPolicy):
    """Keep walking straight: the heading circularly closest to the direction of travel."""

    def act(self, observation: Observation) -> Action:
        if not observation.views:
            return STOP
        best = min(observation.views, key=lambda v: (abs(circular_difference(v.heading, observation.facing)), v.index))
        return move(best.index)


@POLICIES.register("oracle")
class OraclePolicy(HeadingOnlyPolicy):
    """Follows a fewest-actions route in the executable action graph and stops at the target.

    Its TCE is the solvable ceiling. When the target is out of reach within the budget it
    walks to the reachable node closest to the target, so its TCP is the ceiling for TCP.
    """

    privileged = True

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        if world is None:
            raise ValueError("the oracle policy needs the world (it is privileged)")
        super().reset(episode, rng, world)
        self.world = world
        self.plan: Optional[list[int]] = None

    def _make_plan(self, start: str, budget: int) -> list[int]:
        actions = self.world.actions
        hops = actions.hops_via(start, self.episode.waypoints, budget)  # searches bounded by the budget
        if hops is not None and hops <= budget:  # visit stage goals too when the budget allows
            plan, here = [], start
            for goal in self.episode.waypoints:
                plan += actions.action_path(here, goal) or []
                here = goal
            return plan
        hops_to = actions.hops_from(start, budget)
        direct = hops_to.get(self.episode.target)
        if direct is not None and direct <= budget:
            return actions.action_path(start, self.episode.target) or []
        reachable = [n for n, d in hops_to.items() if d <= budget]
        dist = self.world.graph.distances_to_set_m(self.episode.target, reachable)
        # Closest to the target; ties go to the fewest hops, then the node id, so runs repeat.
        best = min(range(len(reachable)), key=lambda i: (round(float(dist[i]), 6), hops_to[reachable[i]], reachable[i]))
        return actions.action_path(start, reachable[best]) or []

    def act(self, observation: Observation) -> Action:
        if self.plan is None:
            self.plan = self._make_plan(observation.node, observation.steps_left)
        return move(self.plan.pop(0)) if self.plan else STOP
