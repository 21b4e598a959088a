"""Seek: a need given at run time ("I am thirsty"), sought from where the vehicle stands.

A Seek goal is one live episode (core.loop.live_loop) whose instruction is the need and
whose start is the street-graph node the vehicle stands on: the same decision loop, camera and
motion goals as a live benchmark episode, but with no target, so success is unknown live. The
result says where it ended, the path, and why: "stopped" (the policy stopped: it believes the
need is met there), "budget" (the step budget ran out: the need was not satisfied), "cancelled"
(a cancel or a preempting goal), "stalled" (no progress for stall_timeout_s), "estop" (the
e-stop latched), "pilot_override" (a pilot took the vehicle: the stack then commands nothing),
"link_lost" (the vehicle bridge lost its link: the goal is forgotten, and nothing moves after the
link returns until a new goal) or "error" (the decision side failed). Every step gives a
feedback record. Every end but the last two leaves the vehicle held by a HOLD command.

Goals are checked before anything moves, and a bad one is rejected with its reason rather than
left to hang: an empty or over-long need, a bad step budget, a goal while another is active
(unless it asks to preempt), a latched e-stop, no fix or a position off the street graph, a
position outside the geofence, a pilot holding the vehicle or a lost link. Cancelling ends the
goal and holds the vehicle; the safety gate downstream still governs every motion. All public
methods take one lock, so a cancel or a second goal from another thread (an action server's)
never interleaves with a step.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from cityseeker_ros.core.agents.policies.base import Decision
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.live_loop import LINK_LOST, LiveLoop
from cityseeker_ros.core.loop.run_plan import SeededEpisode
from cityseeker_ros.core.loop.state_machine import Outputs, SupervisorStatus, ViewSet
from cityseeker_ros.core.sensing.localisation import GraphLocaliser
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.tasks.environment import EndReason, Trajectory
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, Episode, World
from cityseeker_ros.core.tasks.family import family_names, get_family
from cityseeker_ros.core.vehicles.safety.commands import HOLD
from cityseeker_ros.core.vehicles.safety.estop import EStop
from cityseeker_ros.core.vehicles.safety.geofence import Geofence

MAX_NEED_CHARS = 200  # a need is a sentence, not a document: it goes into every prompt
MAX_BUDGET_STEPS = 1000
OUTCOMES = ("stopped", "answered", "budget", "cancelled", "stalled", "estop", "pilot_override", LINK_LOST, "error")
SEEK_CATEGORY = "Seek"  # the category of a seek's episode (no benchmark category applies)


@dataclass(frozen=True)
class SeekRequest:
    """A need in words (or a landmark goal, or a question: `family`); `max_steps` None or 0: the
    family's budget for a goal (the run's max_steps; CityEQA's 50 for a question); `preempt`: replace
    an active goal."""

    need: str
    max_steps: Optional[int] = None
    preempt: bool = False
    family: str = DEFAULT_FAMILY


@dataclass(frozen=True)
class SeekAnswer:
    """Accepted (with the goal's id) or rejected with a code and a one-line reason."""

    accepted: bool
    # accepted, bad_need, bad_family, bad_budget, busy, estop, pilot_override, link_lost, no_fix, off_graph,
    # outside_geofence
    code: str
    reason: str
    goal_id: Optional[str] = None


@dataclass(frozen=True)
class SeekFeedback:
    """One step: where the vehicle stands, what it was told to do and why, how far it has come."""

    goal_id: str
    step: int
    node: str
    action: str  # move, back or stop
    direction: Optional[str]  # relative to the vehicle's heading (core.streets.directions)
    heading_deg: Optional[float]
    next_node: Optional[str]
    reason: str  # the decision's rationale
    guidance: str  # the one line a device shows or speaks
    distance_m: float  # travelled along the path so far


@dataclass(frozen=True)
class SeekResult:
    goal_id: str
    need: str
    outcome: str  # one of OUTCOMES
    satisfied: Optional[bool]  # None: unknown live (the policy stopped); False: the budget ran out
    message: str
    node: str  # where it ended
    lat: float
    lon: float
    path: tuple[str, ...]
    steps: int
    distance_m: float
    answer: Optional[str] = None  # a question's answer
    # The view the answer was read from: the view ahead (nearest the facing) at the answering node,
    # as (index, heading_deg, relative direction).
    answer_view: Optional[tuple[int, float, str]] = None


class SeekOutputs(Outputs):
    """Outputs plus the two a Seek adds (an action server turns them into feedback and result)."""

    def feedback(self, feedback: SeekFeedback) -> None:
        """One step of the active goal."""

    def result(self, result: SeekResult) -> None:
        """The goal ended."""


def path_length_m(graph: StreetGraph, path: Sequence[str]) -> float:
    return float(sum(graph.distance_m(a, b) for a, b in zip(path, path[1:])))


def check_request(request: SeekRequest, run_max_steps: int) -> Optional[SeekAnswer]:
    """The rejection a goal earns by its own fields (the need, the step budget), or None: the
    checks that need no vehicle, so `cityseeker seek` applies them before anything starts, with
    the server's codes and words. `run_max_steps` is the budget that 0 or none stands for."""
    need = request.need.strip() if isinstance(request.need, str) else ""
    if not need:
        return SeekAnswer(False, "bad_need", "the need is empty: say what to look for, e.g. 'I am thirsty'")
    if len(need) > MAX_NEED_CHARS:
        return SeekAnswer(False, "bad_need", f"the need is {len(need)} characters long; the limit is "
                                             f"{MAX_NEED_CHARS}")
    if not isinstance(request.family, str) or request.family not in family_names():
        return SeekAnswer(False, "bad_family", f"unknown task family {request.family!r}; known: "
                                               f"{', '.join(family_names())}")
    budget = request.max_steps
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or not 0 <= budget <= MAX_BUDGET_STEPS):
        return SeekAnswer(False, "bad_budget", f"max_steps must be an integer from 1 to {MAX_BUDGET_STEPS} "
                                               f"(0 or none: the run's {run_max_steps}), got {budget!r}")
    return None


class SeekSession(LiveLoop):
    """One Seek goal at a time on `world`. `submit` a goal with the vehicle's position; feed
    `view_set`, `decision`, `location` and `tick` as for a LiveLoop; `cancel` at any time."""

    def __init__(self, world: World, config: BenchmarkConfig, outputs: SeekOutputs, *,
                 decision_timeout_s: float = 10.0, stall_timeout_s: float = 120.0, altitude_m: float = 0.0,
                 estop: Optional[EStop] = None, geofence: Optional[Geofence] = None,
                 localiser: Optional[Callable[[], GraphLocaliser]] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(config, None, None, outputs, decision_timeout_s, stall_timeout_s, altitude_m, clock, estop)
        self.world, self.seek_outputs = world, outputs
        self.geofence = geofence
        self._make_localiser = localiser or (lambda: GraphLocaliser(world.graph, world.actions))
        self._lock = threading.RLock()
        self._count = 0
        self._queued: Optional[SeededEpisode] = None
        self._request: Optional[SeekRequest] = None
        self._goal_id: Optional[str] = None
        self._budget = config.max_steps
        self._ending: Optional[tuple[str, str]] = None  # (outcome, message) of an end from outside the loop
        self.last_result: Optional[SeekResult] = None

    # -- public --------------------------------------------------------------------------------

    @property
    def active(self) -> Optional[str]:
        """The active goal's id, or None."""
        with self._lock:
            return self._goal_id if self.session is not None else None

    def submit(self, request: SeekRequest, lat: Optional[float], lon: Optional[float]) -> SeekAnswer:
        """Accept the goal and start it, or reject it with its reason (nothing moves then)."""
        with self._lock:
            rejection = self._check(request, lat, lon)
            if isinstance(rejection, SeekAnswer):
                return rejection
            start = rejection
            if self.session is not None:
                self._stop("cancelled", f"preempted by a new goal: {request.need.strip()!r}")
            self._count += 1
            goal_id = f"seek-{self._count}"
            need = request.need.strip()
            episode = Episode(episode_id=goal_id, city=self.world.city, category=SEEK_CATEGORY, difficulty="",
                              instruction=need, request=need, start=start, target="", reference_path=(),
                              family=request.family)
            self._request, self._goal_id, self._ending = request, goal_id, None
            # 0: the family's budget for a goal given without one (CityEQA's 50 steps for a question)
            self._budget = request.max_steps or get_family(request.family).goal_budget(self.config.max_steps)
            self._queued = SeededEpisode(self.world, episode, 0)
            self.state = "starting"
            self._start_next()
            self._guard()
            return SeekAnswer(True, "accepted", f"seeking {need!r} from node {start} within {self._budget} steps",
                              goal_id)

    def cancel(self, reason: str = "cancelled by the operator") -> Optional[SeekResult]:
        """End the active goal and hold the vehicle; its result (None when no goal was active)."""
        with self._lock:
            if self.session is None:
                return None
            self._stop("cancelled", reason)
            return self.last_result

    def view_set(self, view_set: ViewSet) -> None:
        with self._lock:
            self._guard()
            super().view_set(view_set)
            self._guard()

    def decision(self, view_set_id: str, decision: Optional[Decision], records: list[dict[str, Any]],
                 error: Optional[str] = None, extras: Optional[dict[str, Any]] = None) -> None:
        with self._lock:
            self._guard()
            super().decision(view_set_id, decision, records, error, extras)
            self._guard()

    def location(self, lat: Optional[float], lon: Optional[float], node: Optional[str], on_node: bool) -> None:
        with self._lock:
            self._guard()
            super().location(lat, lon, node, on_node)

    def vehicle_status(self, code: str, reason: str) -> None:
        with self._lock:
            super().vehicle_status(code, reason)

    def tick(self) -> None:
        with self._lock:
            self._guard()
            super().tick()

    def status(self) -> SupervisorStatus:
        with self._lock:
            session = self.session
            step = self._pending[0].step if self._pending is not None else None
            return SupervisorStatus(self.state, self.reason, self.done, self.total, self.holds,
                                    session.episode.episode_id if session else None, None, None, step)

    # -- checks --------------------------------------------------------------------------------

    def _check(self, request: SeekRequest, lat: Optional[float], lon: Optional[float]) -> SeekAnswer | str:
        """The rejection, or the node the goal starts from."""
        rejection = check_request(request, self.config.max_steps)
        if rejection is not None:
            return rejection
        if self.session is not None and not request.preempt:
            return SeekAnswer(False, "busy", f"goal {self._goal_id} is active: cancel it, or send the new goal "
                                             f"with preempt to replace it")
        if self.estop is not None and self.estop.latched:
            return SeekAnswer(False, "estop", f"the e-stop is latched ({self.estop.check().reason}): reset it first")
        if self.pilot_override:
            return SeekAnswer(False, "pilot_override", "a pilot has the vehicle: give control back to the stack "
                                                       "(the vehicle bridge's ~/take_control) first")
        if self.link_lost:
            return SeekAnswer(False, LINK_LOST, "the vehicle bridge has lost its link to the vehicle: wait until "
                                                "it reconnects (its ~/safety status leaves link_error)")
        if lat is None or lon is None or not (math.isfinite(lat) and math.isfinite(lon)):
            return SeekAnswer(False, "no_fix", "no position fix: the vehicle cannot be placed on the street graph")
        loc = self._make_localiser().update(lat, lon)
        if not loc.on_graph or loc.node_id is None:
            return SeekAnswer(False, "off_graph", f"the vehicle is off the street graph of {self.world.city}: "
                                                  f"{loc.reason}")
        if self.geofence is not None and not self.geofence.contains(lat, lon):
            return SeekAnswer(False, "outside_geofence", f"the vehicle at ({lat:.6f}, {lon:.6f}) is "
                                                         f"{self.geofence.outside_by_m(lat, lon):.1f} m outside "
                                                         f"the {self.geofence.kind} geofence")
        return loc.node_id

    def _guard(self) -> None:
        """A latched e-stop ends the active goal (checked on every input, before and after)."""
        if self.session is not None and self.estop is not None and self.estop.latched:
            self._stop("estop", self.estop.check().reason)

    # -- the loop ------------------------------------------------------------------------------

    def _next_task(self) -> Optional[tuple[SeededEpisode, int]]:
        task, self._queued = self._queued, None
        return (task, 0) if task is not None else None

    def _max_steps(self) -> int:
        return self._budget

    def _guided(self, guidance: Guidance, view_set: ViewSet) -> None:
        super()._guided(guidance, view_set)
        assert self.live is not None and self.live.trajectory is not None and self._goal_id is not None
        self.seek_outputs.feedback(SeekFeedback(
            self._goal_id, self.live.steps, view_set.node, guidance.action, guidance.direction, guidance.heading_deg,
            guidance.next_node, guidance.reason, guidance.text,
            path_length_m(self.world.graph, self.live.trajectory.path)))

    def _vehicle_ended(self, outcome: str, message: str) -> None:
        """The goal ends pilot_override or link_lost, with no hold: the vehicle is not the stack's."""
        self._ending = (outcome, message)
        super()._vehicle_ended(outcome, message)

    def _stop(self, outcome: str, message: str) -> None:
        """End the active goal from outside the loop: hold first, then the result."""
        assert self.live is not None
        self._ending = (outcome, message)
        self._command(HOLD, message)
        self.live.abort(message)
        self._finish()

    def _complete(self, trajectory: Trajectory) -> None:
        assert self.session is not None and self._request is not None and self._goal_id is not None
        episode, graph = self.session.episode, self.world.graph
        self._pending, self._goal = None, None
        outcome, message = self._ending or self._outcome_of(trajectory, episode.instruction)
        satisfied = False if outcome == "budget" else None
        here = trajectory.path[-1]
        node = graph.nodes[here]
        result = SeekResult(self._goal_id, episode.instruction, outcome, satisfied, message, here, node.lat, node.lon,
                            tuple(trajectory.path), trajectory.steps, path_length_m(graph, trajectory.path),
                            trajectory.answer, self._answer_view() if trajectory.answer is not None else None)
        self.outputs.task_ended(self.world, episode, list(trajectory.path))
        self._log_loop_period()
        self.session, self.last_result, self._ending = None, result, None
        self.state, self.reason = "finished", f"{self._goal_id} {outcome}: {message}"
        self.outputs.log("info", self.reason)
        self._publish_status()
        self.seek_outputs.result(result)

    def _answer_view(self) -> Optional[tuple[int, float, str]]:
        """The view ahead in the view set the answer was given on."""
        last = self._last_view_set
        if last is None:
            return None
        ahead = min(last.views, key=lambda v: abs(circular_difference(v.heading, last.facing)), default=None)
        return (ahead.index, ahead.heading, ahead.relative) if ahead is not None else None

    def _outcome_of(self, trajectory: Trajectory, need: str) -> tuple[str, str]:
        """Where and after how many steps are the result's own fields; the message says why."""
        if trajectory.end_reason is EndReason.ANSWERED:
            return "answered", f"answered {need!r}: {trajectory.answer!r} (unverified live)"
        if trajectory.end_reason is EndReason.STOPPED:
            return "stopped", f"the policy believes {need!r} is met here (unverified live)"
        if trajectory.end_reason is EndReason.BUDGET_EXHAUSTED:
            return "budget", f"the need {need!r} was not satisfied within the budget of {self._budget} steps"
        if trajectory.end_reason is EndReason.STALLED:
            return "stalled", trajectory.error or "stalled"
        return "error", trajectory.error or "the goal ended with an error"
