"""The paper's backtracking strategies (B1, B2, B3; appendix E.1), each able to fire again later
in the same episode (the reference code's could fire once). The supervisor caps how many
backtracks one episode may make, so no strategy can loop forever."""
from __future__ import annotations

from collections import deque
from math import cos, radians
from typing import Optional

from cityseeker_ros.core.agents.policies.base import Decision
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.strategies.base import (
    STRATEGIES,
    Advice,
    Backtrack,
    EpisodeState,
    StepMemo,
    Strategy,
)
from cityseeker_ros.core.tasks.environment import Observation


def _window(state: EpisodeState, since: int, k: int) -> list[StepMemo]:
    """The last k decisions made after decision number `since` of this round."""
    decisions = state.decisions()[since:]
    return decisions[-k:] if len(decisions) >= k else []


@STRATEGIES.register("B1")
class ConfidenceBacktracking(Strategy):
    """B1: when the mean confidence of the last `k` decisions falls below `threshold`, walk back
    to the last node decided on with confidence >= `threshold`, or `k` steps back if there is
    none (the paper's two readings of "reverts"). The window starts afresh after
    every backtrack, so the strategy can fire again. A policy that reports no confidence
    (`reports_confidence` false: the seed agents) is refused with it at start-up (bcr_policy.py)."""

    code = "B1"

    def __init__(self, k: int = 3, threshold: float = 0.75) -> None:
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"strategy B1: k must be an integer >= 1, got {k!r}")
        if not 0.0 <= float(threshold) <= 1.0:
            raise ConfigError(f"strategy B1: threshold must be in [0, 1], got {threshold!r}")
        self.k, self.threshold = k, float(threshold)
        self._since = 0

    def start(self, state: EpisodeState) -> None:
        self._since = 0

    def needs_confidence(self) -> bool:
        return True

    def after_decision(self, state: EpisodeState, obs: Observation, decision: Decision) -> Optional[Backtrack]:
        window = _window(state, self._since, self.k)
        if decision.action.is_stop or not window or any(d.confidence is None for d in window):
            return None
        mean = sum(d.confidence for d in window) / self.k  # type: ignore[misc]
        if mean >= self.threshold:
            return None
        trusted = [d for d in state.decisions() if d.step < obs.step and d.confidence is not None
                   and d.confidence >= self.threshold]
        to_step = trusted[-1].step if trusted else max(0, obs.step - self.k)
        if to_step >= obs.step:
            return None
        return Backtrack(to_step, f"mean confidence {mean:.2f} of the last {self.k} decisions "
                                  f"< {self.threshold:.2f}" + ("" if trusted else "; no trusted node, back k steps"))

    def after_backtrack(self, state: EpisodeState, backtrack: Backtrack) -> None:
        self._since = len(state.decisions())


class _GoalDistance:
    """Fewest actions from every node to the episode's target, in the executable action graph
    (privileged: only oracle strategies hold one)."""

    def __init__(self, state: EpisodeState) -> None:
        if state.world is None:
            raise ConfigError("an oracle strategy was given no world; enable it as oracle")
        world, target = state.world, state.episode.target
        reverse: dict[str, list[str]] = {}
        for node in world.graph.nodes:
            for nxt in world.actions.successors(node):
                reverse.setdefault(nxt, []).append(node)
        self.hops = {target: 0}
        queue = deque([target])
        while queue:
            v = queue.popleft()
            for u in reverse.get(v, ()):
                if u not in self.hops:
                    self.hops[u] = self.hops[v] + 1
                    queue.append(u)
        self.world = world

    def __call__(self, node: str) -> float:
        return float(self.hops.get(node, float("inf")))


@STRATEGIES.register("B2")
class StepRewardBacktracking(Strategy):
    """B2 (oracle): when the hop distance to the goal has risen at each of the last `k`
    decisions (d_t > d_t-1 > ... > d_t-k), walk back to where the rise began."""

    code = "B2"
    oracle = True

    def __init__(self, k: int = 3) -> None:
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"strategy B2: k must be an integer >= 1, got {k!r}")
        self.k = k
        self._since = 0
        self._distance: Optional[_GoalDistance] = None

    def start(self, state: EpisodeState) -> None:
        self._since = 0
        self._distance = _GoalDistance(state)

    def after_decision(self, state: EpisodeState, obs: Observation, decision: Decision) -> Optional[Backtrack]:
        assert self._distance is not None
        window = _window(state, self._since, self.k + 1)
        if decision.action.is_stop or not window:
            return None
        d = [self._distance(m.node) for m in window]
        if not all(later > earlier for earlier, later in zip(d, d[1:])):
            return None
        return Backtrack(window[0].step, f"distance to the goal rose {self.k} times in a row "
                                         f"({' -> '.join(f'{x:g}' for x in d)} hops)")

    def after_backtrack(self, state: EpisodeState, backtrack: Backtrack) -> None:
        self._since = len(state.decisions())


@STRATEGIES.register("B3")
class GuidedBacktracking(ConfidenceBacktracking):
    """B3 (oracle): B1 plus, after any backtrack, a hint at the node backtracked to: the view whose
    move lowers the hop distance to the goal most, ties broken by how well its heading lines up
    with the shortest path's (the paper's eq. 3-4). With `confidence_trigger` false it only hints
    after backtracks other strategies (B2) make."""

    code = "B3"
    oracle = True

    def __init__(self, k: int = 3, threshold: float = 0.75, confidence_trigger: bool = True) -> None:
        super().__init__(k, threshold)
        self.confidence_trigger = bool(confidence_trigger)
        self._distance: Optional[_GoalDistance] = None
        self._armed: Optional[str] = None

    def start(self, state: EpisodeState) -> None:
        super().start(state)
        self._distance = _GoalDistance(state)
        self._armed = None

    def after_decision(self, state: EpisodeState, obs: Observation, decision: Decision) -> Optional[Backtrack]:
        return super().after_decision(state, obs, decision) if self.confidence_trigger else None

    def needs_confidence(self) -> bool:
        return self.confidence_trigger

    def after_backtrack(self, state: EpisodeState, backtrack: Backtrack) -> None:
        super().after_backtrack(state, backtrack)
        self._armed = next(m.node for m in state.steps if m.step == backtrack.to_step)

    def advise(self, state: EpisodeState, obs: Observation, advice: Advice) -> None:
        if self._armed is None or obs.node != self._armed or not obs.views:
            return
        self._armed = None
        assert self._distance is not None
        best = self.best_view(obs)
        advice.hint = obs.views[best].index
        state.event(self.code, "hint", obs.step, view=advice.hint, heading=round(obs.views[best].heading, 1))

    def best_view(self, obs: Observation) -> int:
        """Position in obs.views of the view that most shortens the route to the goal."""
        assert self._distance is not None
        world = self._distance.world
        moves = world.actions.moves(obs.node)
        here = self._distance(obs.node)
        onward = [m for m in moves if self._distance(m.edge.target) < here]
        path_heading = onward[0].edge.azimuth if onward else obs.facing

        def score(pos: int) -> tuple[float, float]:
            move = moves[obs.views[pos].index]
            return (self._distance(move.edge.target), -cos(radians(move.heading - path_heading)))

        return min(range(len(obs.views)), key=lambda pos: (*score(pos), pos))
