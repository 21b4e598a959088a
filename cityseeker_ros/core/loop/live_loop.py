"""Live: the world is real (a camera on a walking user, a drone). View sets come from the camera,
and each decision becomes AR guidance and a motion goal for the vehicle, which its bridge passes
through the safety gate. The episode state (where the vehicle actually arrived, stalls) is a
`LiveEpisode` (core.loop.live); this loop sends the vehicle to each task's start, announces
the run once it stands there (the camera captures only then), repeats the goal under way every
second until the vehicle arrives somewhere new, and holds on a stop, a decision timeout or a stall.

Every episode ends in a hold the loop commands (a stop, the budget, an error, a stall, a cancel),
unless the vehicle is not the stack's to hold: a pilot took it over, or its bridge lost the link.
Either of those ends the episode under way and forgets its goal; nothing leaves the loop while it
lasts, and after a link return only a decision made after it moves the vehicle.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Optional

from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.guidance import Guidance, guide_action
from cityseeker_ros.core.loop.live import LiveEpisode, check_stall_timeout
from cityseeker_ros.core.loop.run_plan import RunPlan, SeededEpisode
from cityseeker_ros.core.loop.state_machine import EpisodeLoop, LiveProgress, Outputs, ViewSet
from cityseeker_ros.core.strategies.bcr_policy import BcrPolicy
from cityseeker_ros.core.streets.geodesy import geodesic_m
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.core.vehicles.bridge import LINK_ERROR, PILOT_OVERRIDE
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Hold
from cityseeker_ros.core.vehicles.safety.estop import EStop

LINK_LOST = "link_lost"  # how an episode or a Seek ends when the bridge loses its link (LINK_ERROR)
GOAL_REPEAT_S = 1.0  # a bridge that started late or lost the goal still gets it; its watchdog sees a live supervisor


class LiveLoop(EpisodeLoop):
    def __init__(self, config: BenchmarkConfig, plan: Optional[RunPlan], supervisor: Optional[BcrPolicy],
                 outputs: Outputs, decision_timeout_s: float, stall_timeout_s: float, altitude_m: float = 0.0,
                 clock: Callable[[], float] = time.monotonic, estop: Optional[EStop] = None) -> None:
        """`estop`: while it is latched no goal leaves (a hold does), and the goal under way is
        forgotten, so a reset moves nothing until a new decision."""
        super().__init__(config, plan, supervisor, outputs, decision_timeout_s, clock)
        self.estop = estop
        self.pilot_override = False  # the vehicle's bridge says a pilot took over: nothing leaves
        self.link_lost = False  # the vehicle's bridge lost its link after it had one: nothing leaves
        self._link_seen = False  # the bridge has reported a status other than LINK_ERROR (it connected)
        self._holding = False  # the last command that left was a hold
        self._last_view_set: Optional[ViewSet] = None  # the one acted on last: decided again after a reset
        self.stall_timeout_s = check_stall_timeout(stall_timeout_s)
        self.altitude_m = float(altitude_m)
        self.run = 0  # this loop's run number of the current task (the camera tags view sets with it)
        self.live: Optional[LiveEpisode] = None
        # the goal under way: the goal, its reason and view set, when it was last sent
        self._goal: Optional[tuple[Goal, str, Optional[str], float]] = None
        self._announced = False  # the run is published (the vehicle has reached the start)
        self._handled: Optional[str] = None

    # -- inputs --------------------------------------------------------------------------------

    def view_set(self, view_set: ViewSet) -> None:
        """A view set from the camera: a step once the vehicle stands somewhere new."""
        if self.session is None or self.live is None or view_set.run != self.run or view_set.done \
                or view_set.view_set_id == self._handled:
            return
        self._handled = view_set.view_set_id
        if not self.live.arrive(view_set.node) or self._pending is not None:
            return  # still at the node acted on: the vehicle has not arrived anywhere new
        self._goal = None
        self._progress("running")
        if self.live.done:
            self._finish()
            return
        self._last_view_set = view_set
        self._ask_or_act(view_set)

    def location(self, lat: Optional[float], lon: Optional[float], node: Optional[str], on_node: bool) -> None:
        """A localiser answer: the distance to the goal under way is the episode's progress; the
        run is announced once the vehicle stands on the task's start node."""
        if self.live is None or self.session is None:
            return
        if self._goal is not None and lat is not None and lon is not None:
            goal = self._goal[0]
            self.live.approach(geodesic_m(lat, lon, goal.lat, goal.lon))
        if not self._announced and on_node and node == self.session.episode.start:
            self._announced = True
            self._progress("running")

    # -- the loop ------------------------------------------------------------------------------

    def _max_steps(self) -> int:
        return self.config.max_steps

    def _begin(self, task: SeededEpisode, round: int) -> None:
        # The run is announced (and the camera looks) only once the vehicle is at the start, so
        # nothing is captured, or turned in place, on the way there.
        self.run += 1
        self.live = LiveEpisode(task.episode.start, self._max_steps(), self.stall_timeout_s, self.clock)
        self._announced, self._handled = False, None
        start = task.world.graph.nodes[task.episode.start]
        self._command(Goal(start.lat, start.lon, self.altitude_m), f"to the start of episode {task.episode.episode_id}")

    def _send(self, view_set: ViewSet, action: Action, reason: str = "", confidence: Optional[float] = None) -> None:
        """AR guidance and a motion goal (a stop holds and ends the episode)."""
        assert self.session is not None and self.live is not None
        world = self.session.world
        try:
            guidance = guide_action(world.graph, view_set.node, action, view_set.facing, reason, confidence,
                                    world.actions)
        except ConfigError as exc:  # an index the node does not have: the decision cannot be followed
            self.live.fail(str(exc))
            self._finish()
            return
        self.live.act(action, guidance.next_node)
        self._guided(guidance, view_set)
        if guidance.next_node is None:
            self._command(HOLD, guidance.text, view_set.view_set_id)
            self._finish()
            return
        there = world.graph.nodes[guidance.next_node]
        self._command(Goal(there.lat, there.lon, self.altitude_m, guidance.heading_deg), guidance.text,
                      view_set.view_set_id)

    def _guided(self, guidance: Guidance, view_set: ViewSet) -> None:
        self.outputs.guidance(guidance, view_set)

    def _decision_failed(self, view_set: ViewSet, error: str) -> None:
        assert self.live is not None
        self.live.fail(error)
        self._finish()

    def _tick(self, now: float) -> bool:
        if self._goal is not None and self.estop is not None and self.estop.latched:
            self._command(HOLD, f"{self.estop.check().reason}: holding")  # and the goal is forgotten
        if self.live is not None and self.session is not None and self.live.check_stall():
            self._on_stalled()
            return False
        if self._goal is not None and self._pending is None and now - self._goal[3] >= GOAL_REPEAT_S:
            goal, reason, view_set_id, _ = self._goal
            self._command(goal, reason, view_set_id)
        return True

    # -- the vehicle ---------------------------------------------------------------------------

    def vehicle_status(self, code: str, reason: str) -> None:
        """The vehicle bridge's status code. A pilot who takes over (PILOT_OVERRIDE) or a link lost
        after the bridge had one (LINK_ERROR; before its first connection that code only means it
        is connecting) ends the episode under way as an error that says so, forgets its goal, and
        nothing leaves this loop while the bridge reports it. The stack never takes the vehicle
        back by itself; after a link return only a new decision moves it (`_decide_again`)."""
        overridden = code == PILOT_OVERRIDE
        took_over = overridden and not self.pilot_override
        self.pilot_override = overridden
        lost = code == LINK_ERROR and self._link_seen
        lost_now, back = lost and not self.link_lost, self.link_lost and code != LINK_ERROR
        self.link_lost = lost
        self._link_seen = self._link_seen or code != LINK_ERROR
        if took_over:
            self._goal = None
            self.outputs.log("warning", f"pilot override: {reason}; the stack commands nothing")
            if self.live is not None and self.session is not None and not self.live.done:
                self._vehicle_ended(PILOT_OVERRIDE, f"pilot_override: {reason}")
        if lost_now:
            self._goal = None
            self.outputs.log("warning", f"link lost: {reason}; the stack commands nothing until it returns")
            if self.live is not None and self.session is not None and not self.live.done:
                self._vehicle_ended(LINK_LOST, f"link_lost: {reason}")
        if back:
            self.outputs.log("info", f"link back ({code}): nothing moves until a new decision")
            self._decide_again("a link return")

    def _vehicle_ended(self, outcome: str, message: str) -> None:
        """The vehicle is not the stack's to command (PILOT_OVERRIDE, LINK_LOST): the episode ends
        as an error saying why, with no hold."""
        assert self.live is not None
        self.live.abort(message)
        self._finish()

    # -- the e-stop (the vehicle's bridge has its own; this one keeps goals from leaving) ------

    def trigger_estop(self, source: str, reason: str) -> None:
        """Latch the e-stop: hold now, forget the goal under way (and a Seek ends its goal)."""
        if self.estop is None:
            raise ConfigError("this loop has no e-stop")
        self.estop.trigger(source, reason, held=True)
        self.tick()

    def release_estop(self, source: str) -> None:
        """`source` no longer asks for a stop; the latch stays until `reset_estop`."""
        if self.estop is not None:
            self.estop.release(source)

    def reset_estop(self) -> tuple[bool, str]:
        """Clear the latch; whether it cleared, and why not ("ok" when it did). Nothing moves
        until the next decision: the goal from before the e-stop was forgotten."""
        if self.estop is None:
            return False, "this loop has no e-stop"
        check = self.estop.reset()
        if check.ok:
            self._decide_again("an e-stop reset")
        return check.ok, check.reason

    def _decide_again(self, after: str) -> None:
        """After a reset (or a link return) the goal from before is gone: ask the policy again where
        the vehicle last stood (its new answer is what moves it), or head for the start again when
        the episode had not begun."""
        if self.session is None or self.live is None or self.live.done or self._pending is not None \
                or self._goal is not None:
            return
        if self.live.trajectory is None:
            start = self.session.world.graph.nodes[self.session.episode.start]
            self._command(Goal(start.lat, start.lon, self.altitude_m),
                          f"to the start of episode {self.session.episode.episode_id} (after {after})")
        elif self._last_view_set is not None:
            self._ask_or_act(self._last_view_set)

    def _on_hold(self) -> None:
        self._command(HOLD, self.reason)

    def _on_stalled(self) -> None:
        """No progress for stall_timeout_s: hold the vehicle, end the episode as stalled, and say
        why on the log and the status (the reason stays until the state changes)."""
        assert self.session is not None and self.live is not None and self.live.trajectory is not None
        reason = f"episode {self.session.episode.episode_id} seed {self.session.seed}: {self.live.trajectory.error}"
        self.outputs.log("warning", reason)
        self._command(HOLD, reason)
        self._finish()
        self.reason = f"{self.reason}; {reason}" if self.reason else reason
        self._publish_status()

    def _command(self, command: Command, reason: str, view_set_id: Optional[str] = None) -> None:
        if self.pilot_override or self.link_lost:  # not the stack's vehicle now: nothing leaves, a hold neither
            self._goal = None
            return
        if isinstance(command, Goal) and self.estop is not None and self.estop.latched:
            command, reason = HOLD, f"{self.estop.check().reason}: holding"
        self.outputs.command(command, reason, view_set_id)
        self._goal = (command, reason, view_set_id, self.clock()) if isinstance(command, Goal) else None
        self._holding = isinstance(command, Hold)

    def _progress(self, status: str) -> None:
        assert self.session is not None and self.live is not None
        session = self.session
        self.outputs.progress(LiveProgress(status, session.episode, session.seed, self.run, session.round,
                                           self.live.trajectory))

    def _finish(self) -> None:
        """The episode ended: a hold, unless the last command was one (or the vehicle is not the
        stack's: `_command` sends nothing then), so whatever ended it the vehicle is left held."""
        assert self.live is not None and self.live.trajectory is not None
        end = self.live.trajectory.end_reason
        if not self._holding and self.session is not None:
            self._command(HOLD, f"{self.session.episode.episode_id} ended ({end.value if end else 'ended'}): holding")
        self._goal = None
        self._progress("ended")
        self._pending = None
        self._complete(self.live.trajectory)
