"""The episode state the replay node keeps for a benchmark, kept by the supervisor when the world
is the real one (a camera on a walking user, a drone): the episode begins when the vehicle,
sent to the task's start, arrives there; the path is then where the vehicle actually arrived,
one node per view set of a new node, whatever the action intended; the episode ends when the
policy stops, the budget is spent, or it fails."""
from __future__ import annotations

from typing import Optional, Union

from cityseeker_ros.core.environment import BACK, Action, EndReason, Trajectory


class LiveEpisode:
    def __init__(self, start: str, max_steps: int) -> None:
        self.start, self.max_steps = start, max_steps
        self.trajectory: Optional[Trajectory] = None
        self._intent: Union[int, str, None] = None  # the last move's view index, or BACK

    @property
    def done(self) -> bool:
        return self.trajectory is not None and self.trajectory.end_reason is not None

    @property
    def steps(self) -> int:
        return 0 if self.trajectory is None else self.trajectory.steps

    def arrive(self, node: str) -> bool:
        """A view set at `node`; True when it is a new step (not the node the agent stands on, nor
        a node passed on the way to the start)."""
        if self.trajectory is None:
            if node != self.start:
                return False
            self.trajectory = Trajectory(path=[node])
            return True
        if self.done or node == self.trajectory.path[-1]:
            return False
        self.trajectory.path.append(node)
        self.trajectory.headings.append(self._intent)
        if self.trajectory.steps >= self.max_steps:
            self.trajectory.end_reason = EndReason.BUDGET_EXHAUSTED
        return True

    def act(self, action: Action) -> None:
        """The action sent to the vehicle or user; a stop ends the episode here."""
        assert self.trajectory is not None, "act before the first view set"
        if action.is_stop:
            self.trajectory.headings.append(None)
            self.trajectory.end_reason = EndReason.STOPPED
        else:
            self._intent = BACK if action.back_to is not None else action.index

    def fail(self, message: str) -> None:
        assert self.trajectory is not None
        self.trajectory.error = message
        self.trajectory.end_reason = EndReason.ERROR
