"""The episode state the replay node keeps for a benchmark, kept by the supervisor when the world
is the real one (a camera on a walking user, a drone): the episode begins when the vehicle,
sent to the task's start, arrives there; the path is then where the vehicle actually arrived,
one node per view set of a new node, whatever the action intended; the episode ends when the
policy stops, the budget is spent, it fails, or it stalls.

A stall: the vehicle is under way (sent to the start, or moved by an action) and neither
arrives anywhere new nor comes `STALL_PROGRESS_M` closer to its goal for `stall_timeout_s`. A
live run must end rather than repeat a goal forever (a localiser that cannot switch nodes, a
blocked street, a vehicle held by its safety gate). Waiting for a decision is not a stall: the
supervisor's decision timeout and hold cover that.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Optional, Union

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.environment import BACK, Action, EndReason, Trajectory

DEFAULT_STALL_TIMEOUT_S = 120.0  # a walker held at a crossing for two minutes is not stalled
STALL_PROGRESS_M = 1.0  # the closest approach to the goal must improve by this much to count (not GNSS jitter)


def check_stall_timeout(value: object) -> float:
    """The stall_timeout_s parameter, or a ConfigError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"parameter stall_timeout_s must be a positive number of seconds, got {value!r}")
    return float(value)


class LiveEpisode:
    def __init__(self, start: str, max_steps: int, stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.start, self.max_steps = start, max_steps
        self.stall_timeout_s = check_stall_timeout(stall_timeout_s)
        self.trajectory: Optional[Trajectory] = None
        self._intent: Union[int, str, None] = None  # the last move's view index, or BACK
        self._clock = clock
        self._goal: Optional[str] = start  # the node the vehicle is under way to; None while it waits
        self._progress_at = clock()
        self._closest = math.inf  # the closest approach to the goal so far, metres

    @property
    def done(self) -> bool:
        return self.trajectory is not None and self.trajectory.end_reason is not None

    @property
    def steps(self) -> int:
        return 0 if self.trajectory is None else self.trajectory.steps

    @property
    def under_way(self) -> bool:
        return self._goal is not None and not self.done

    def arrive(self, node: str) -> bool:
        """A view set at `node`; True when it is a new step (not the node the agent stands on, nor
        a node passed on the way to the start)."""
        if self.trajectory is None:
            if node != self.start:
                return False
            self.trajectory = Trajectory(path=[node])
            self._goal = None
            return True
        if self.done or node == self.trajectory.path[-1]:
            return False
        self.trajectory.path.append(node)
        self.trajectory.headings.append(self._intent)
        self._goal = None
        if self.trajectory.steps >= self.max_steps:
            self.trajectory.end_reason = EndReason.BUDGET_EXHAUSTED
        return True

    def act(self, action: Action, goal: Optional[str] = None) -> None:
        """The action sent to the vehicle or user, towards node `goal`; a stop or an answer ends the
        episode here."""
        assert self.trajectory is not None, "act before the first view set"
        if action.is_stop or action.answer is not None:
            self.trajectory.headings.append(None)
            self.trajectory.answer = action.answer
            self.trajectory.end_reason = EndReason.STOPPED if action.is_stop else EndReason.ANSWERED
        else:
            self._intent = BACK if action.back_to is not None else action.index
            self._goal = goal if goal is not None else "the next node"
            self._progress_at, self._closest = self._clock(), math.inf

    def approach(self, distance_m: float) -> None:
        """The vehicle's distance to its goal, from a position fix: progress when the closest
        approach improves by STALL_PROGRESS_M."""
        if self.under_way and math.isfinite(distance_m) and distance_m <= self._closest - STALL_PROGRESS_M:
            self._closest, self._progress_at = distance_m, self._clock()

    def check_stall(self) -> bool:
        """End the episode as STALLED when under way without progress for stall_timeout_s."""
        if not self.under_way:
            return False
        idle = self._clock() - self._progress_at
        if idle < self.stall_timeout_s:
            return False
        where = "no position" if math.isinf(self._closest) else f"closest {self._closest:.1f} m"
        phase = "to the start " if self.trajectory is None else ""
        message = f"stalled: no progress {phase}towards node {self._goal} for {idle:.0f} s ({where}; " \
                  f"stall_timeout_s {self.stall_timeout_s:g})"
        if self.trajectory is None:  # never reached the start: the episode is its start, 0 steps
            self.trajectory = Trajectory(path=[self.start])
        self.trajectory.error = message
        self.trajectory.end_reason = EndReason.STALLED
        return True

    def fail(self, message: str) -> None:
        assert self.trajectory is not None
        self.trajectory.error = message
        self.trajectory.end_reason = EndReason.ERROR

    def abort(self, message: str) -> None:
        """End it from outside the loop (a cancel, an e-stop), also before the vehicle reached the
        start (the episode is then its start, 0 steps); nothing happens once it has ended."""
        if self.done:
            return
        if self.trajectory is None:
            self.trajectory = Trajectory(path=[self.start])
        self.fail(message)
