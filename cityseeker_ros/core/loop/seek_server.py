"""The Seek session a goal server drives (supervisor mode seek): a need given at run time is
sought from where the vehicle stands now, so the session keeps the latest fix and starts each
goal from it, and it keeps the action behind each step for the goal's feedback. The e-stop it
checks mirrors an outside source (the vehicle's e-stop topic) and is reset on request; a goal
the session refuses is answered at once with a code and a reason (core.loop.seek).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Optional

from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.seek import SeekAnswer, SeekOutputs, SeekRequest, SeekResult, SeekSession
from cityseeker_ros.core.loop.served import NOT_READY
from cityseeker_ros.core.loop.state_machine import ViewSet
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.core.tasks.episode import World
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.core.vehicles.safety.estop import EStop
from cityseeker_ros.core.vehicles.safety.geofence import Geofence

FIX_MAX_AGE_S = 5.0  # a goal needs a fix at most this old to place the vehicle on the graph


class SeekServerSession(SeekSession):
    """A SeekSession with its own e-stop that keeps what a goal and its feedback need from the
    inputs: the latest fix (a goal starts from it) and the action behind each step."""

    def __init__(self, world: World, config: BenchmarkConfig, outputs: SeekOutputs, *, decision_timeout_s: float,
                 stall_timeout_s: float, altitude_m: float, geofence: Optional[Geofence] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        estop = EStop()
        super().__init__(world, config, outputs, decision_timeout_s=decision_timeout_s,
                         stall_timeout_s=stall_timeout_s, altitude_m=altitude_m, estop=estop,
                         geofence=geofence, clock=clock)
        self.estop: EStop = estop  # its own, so never None here
        self.fix: Optional[tuple[float, float, float]] = None  # lat, lon, when (clock)
        self.last_action: Optional[Action] = None

    @classmethod
    def for_worlds(cls, worlds: Sequence[World], config: BenchmarkConfig, outputs: SeekOutputs, *,
                   safety_config: str = "", decision_timeout_s: float, stall_timeout_s: float,
                   altitude_m: float) -> SeekServerSession:
        """The session on the one world of a run. `safety_config` ('' none) is the vehicle's safety
        file, whose geofence a goal's start must lie in; a bad file fails here, naming the file and
        the field."""
        if len(worlds) != 1:
            raise ConfigError(f"mode seek: parameter data must hold one world (the street graph the vehicle is "
                              f"on), got {len(worlds)}: {', '.join(w.city for w in worlds)}")
        geofence = load_safety_config(safety_config).geofence if safety_config else None
        return cls(worlds[0], config, outputs, decision_timeout_s=decision_timeout_s,
                   stall_timeout_s=stall_timeout_s, altitude_m=altitude_m, geofence=geofence)

    # -- goals ---------------------------------------------------------------------------------

    def submit_from_fix(self, request: SeekRequest) -> SeekAnswer:
        """Start `request` from the latest fix, or refuse it: not_ready while the decision side or
        the localiser is starting (a fix lost since is no_fix, from `submit`)."""
        if self.state == "starting":
            return SeekAnswer(False, "not_ready", NOT_READY)
        if self.fix is None:
            return SeekAnswer(False, "not_ready", "no location from the localiser yet")
        return self.submit(request, *self.fix_now())

    def cancel_goal(self, goal_id: str, reason: str) -> bool:
        """Hold and end `goal_id` if it is the active goal; False when it is not (one that has just
        ended keeps its result)."""
        if self.active != goal_id:
            return False
        self.cancel(reason)
        return True

    def steps_left(self, step: int) -> int:
        """Of the active goal's budget, after `step` steps."""
        return max(0, self._max_steps() - step)

    def fix_now(self) -> tuple[Optional[float], Optional[float]]:
        """The latest fix, or (None, None) when there is none younger than FIX_MAX_AGE_S."""
        if self.fix is None or self.clock() - self.fix[2] > FIX_MAX_AGE_S:
            return None, None
        return self.fix[0], self.fix[1]

    def where_ended(self, result: SeekResult) -> tuple[float, float]:
        """Where the vehicle is as a goal ends: the latest fix, else the node it ended on."""
        lat, lon = self.fix_now()
        return (lat, lon) if lat is not None and lon is not None else (result.lat, result.lon)

    # -- inputs --------------------------------------------------------------------------------

    def location(self, lat: Optional[float], lon: Optional[float], node: Optional[str], on_node: bool) -> None:
        if lat is not None and lon is not None:
            self.fix = (lat, lon, self.clock())
        super().location(lat, lon, node, on_node)

    def _send(self, view_set: ViewSet, action: Action, reason: str = "", confidence: Optional[float] = None) -> None:
        self.last_action = action
        super()._send(view_set, action, reason, confidence)
