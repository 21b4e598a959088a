"""The AirSim bridge's control step: safety gate + motion mode + hold-once, without ROS.

The decision layer is slow and may stall, so the bridge runs its own loop: `step()` (called at the
control rate) asks the gate what the vehicle may do now and turns changes of that answer into link
calls. A hold is sent once per transition, never every tick, and a command is sent again only when
what the gate allows changes, or after a hold.

Motion calls block on AirSim until the vehicle arrives (moveToPosition, rotateToYaw), so they run
on a worker thread with a link of their own ("latest job wins"); holds, state and images go
through the control link from the caller's thread. Every call the worker makes that moves the
vehicle passes one MotionGate (core/vehicles/airsim/motion_gate.py): a hold shuts it before it hovers, and
`step()` returns from a hold only once a hover was the last call the vehicle saw, so what it
reports is what the vehicle does.

Link failures never raise out of `step()`: the bridge reports LINK_ERROR, holds (the worker's job
is dropped) and reconnects every `reconnect_period_s`.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.client import AirSimLink, CameraFrame, Kinematics
from cityseeker_ros.core.vehicles.airsim.errors import AirSimError
from cityseeker_ros.core.vehicles.airsim.frames import enu_to_ned
from cityseeker_ros.core.vehicles.airsim.motion import FlyMotion, GeoPose, MotionMode, make_motion_mode
from cityseeker_ros.core.vehicles.airsim.motion_gate import MotionCancelled, MotionGate
from cityseeker_ros.core.vehicles.safety.codes import Check, SafetyCode
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Hold, Velocity
from cityseeker_ros.core.vehicles.safety.config import SafetyConfig
from cityseeker_ros.core.vehicles.safety.gate import SafetyGate, Verdict
from cityseeker_ros.core.vehicles.safety.geofence import Geofence

# Codes the bridge adds to core.vehicles.safety.codes.SafetyCode (SafetyMsg.code is a plain string).
LINK_ERROR = "link_error"  # AirSim unreachable or a call failed: holding, reconnecting
UNSUPPORTED = "unsupported_command"  # e.g. a velocity command in teleport mode

Clock = Callable[[], float]


class BridgeLink(AirSimLink):
    """AirSimLink plus the multirotor calls only the bridge needs (hover, velocity)."""

    def hover(self) -> None:
        """Hold position; AirSim cancels the vehicle's running task (moveTo*, rotate*) first."""
        self._call("hoverAsync", vehicle_name=self.vehicle)

    def move_by_velocity(self, v_ned, duration_s: float, yaw_rate_dps: float = 0.0) -> None:
        """Map-NED velocity for duration_s (blocks that long); yaw rate clockwise-positive (NED)."""
        vx, vy, vz = (float(c) for c in v_ned)
        self._move("moveByVelocityAsync", vx, vy, vz, float(duration_s),
                   self.lib.DrivetrainType.MaxDegreeOfFreedom,
                   self.lib.YawMode(is_rate=True, yaw_or_rate=float(yaw_rate_dps)), vehicle_name=self.vehicle)


def enu_velocity_to_airsim(anchor: Anchor, velocity: Velocity) -> tuple[np.ndarray, float]:
    """ROS ENU velocity (REP 103, yaw rate counter-clockwise) -> AirSim map NED velocity and
    AirSim yaw rate (degrees/s, clockwise): the inverse of Anchor.airsim_to_enu."""
    ned_true = enu_to_ned([velocity.east_m_s, velocity.north_m_s, velocity.up_m_s])
    c, s = math.cos(math.radians(anchor.yaw_offset_deg)), math.sin(math.radians(anchor.yaw_offset_deg))
    rotation = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])  # true NED -> map NED
    return rotation @ ned_true, -float(velocity.yaw_rate_deg_s)


@dataclass(frozen=True)
class BridgeStatus:
    """What the bridge is doing and why: published as SafetyMsg and diagnostics."""

    moving: bool
    code: str  # a SafetyCode value, LINK_ERROR or UNSUPPORTED
    reason: str
    estop: bool
    connected: bool

    @property
    def key(self) -> tuple[str, bool, bool]:
        """What a change of status means: republish when this changes."""
        return self.code, self.moving, self.estop


Job = Union[Goal, Velocity]


class MotionWorker:
    """Runs blocking motion calls on their own thread and link; the newest job replaces any
    pending one. Goals run once, velocities repeat in `velocity_period_s` slices until replaced
    or cancelled (so a velocity never outlives the bridge by more than one slice).

    `make` builds the motion mode on a fresh link *in the worker's thread*: the msgpack-rpc
    client runs its event loop in the thread that made it, and fails in any other. The worker
    puts its MotionGate on that link, so every motion call of the mode is checked by the gate."""

    def __init__(self, make: Callable[[], MotionMode], velocity_period_s: float = 0.5,
                 start_timeout_s: float = 30.0) -> None:
        self.velocity_period_s = float(velocity_period_s)
        self.gate = MotionGate()
        self.motion: Optional[MotionMode] = None
        self._make, self._started, self._start_error = make, threading.Event(), None
        self._cv = threading.Condition()
        self._job: Optional[tuple[Job, int]] = None  # the pending job and its gate token
        self._busy = False  # a job is being executed
        self._closed = False
        self.error: Optional[str] = None  # the last failure, for the bridge to report
        self.done = 0  # jobs completed (goals arrived, velocity slices flown)
        self._thread = threading.Thread(target=self._run, name="airsim-motion", daemon=True)
        self._thread.start()
        if not self._started.wait(start_timeout_s):
            self.close(0.0)
            raise AirSimError(f"the motion link did not connect within {start_timeout_s:g} s")
        if self._start_error is not None:
            raise self._start_error

    @property
    def link(self) -> BridgeLink:
        return self.motion.link

    @property
    def idle(self) -> bool:
        """No job pending and none being executed: the worker sends nothing until the next submit."""
        with self._cv:
            return self._job is None and not self._busy

    def submit(self, job: Job) -> None:
        with self._cv:
            self._job = (job, self.gate.open())
            self._cv.notify()

    def hold(self, hover: Optional[Callable[[], None]]) -> int:
        """Drop the pending job and shut the gate: returns once `hover` (if any) was the last call
        the vehicle saw (MotionGate.hold)."""
        with self._cv:
            self._job = None
        return self.gate.hold(hover)

    def close(self, join_s: float = 0.5) -> None:
        """Stop taking jobs and refuse every further motion call; a call in flight is left to
        fail when its link closes."""
        self.gate.close()
        with self._cv:
            self._closed, self._job = True, None
            self._cv.notify()
        self._thread.join(timeout=join_s)

    def _run(self) -> None:
        try:
            self.motion = self._make()
            self.motion.link.gate = self.gate
        except Exception as exc:  # noqa: BLE001 - handed to the constructor's caller
            self._start_error = exc if isinstance(exc, AirSimError) else AirSimError(str(exc))
            self._started.set()
            return
        self._started.set()
        try:
            self._loop()
        finally:
            self.link.close()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while self._job is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                taken = self._job
                if isinstance(taken[0], Goal):
                    self._job = None  # a goal runs once; a velocity stays until replaced
                self._busy = True
            job, token = taken
            self.gate.begin(token)
            try:
                self._execute(job)
                self.done += 1
            except MotionCancelled:  # a hold or a newer job: nothing more of this one is sent
                with self._cv:
                    if self._job is taken:
                        self._job = None
            except Exception as exc:  # noqa: BLE001 - any failure is reported, never kills the thread
                with self._cv:
                    if self._job is taken:
                        self._job = None
                self.error = str(exc)
            finally:
                with self._cv:
                    self._busy = False

    def _execute(self, job: Job) -> None:
        if isinstance(job, Velocity):
            v_ned, yaw_rate = enu_velocity_to_airsim(self.motion.anchor, job)
            self.link.move_by_velocity(v_ned, self.velocity_period_s, yaw_rate)
            return
        anchor = self.motion.anchor
        heading = job.heading_deg
        if heading is None:  # keep facing where the vehicle faces now
            heading = anchor.yaw_to_heading(self.link.pose_ned()[1])
        if isinstance(self.motion, FlyMotion) and job.speed_m_s is not None:
            self.motion.max_speed_mps = max(0.1, float(job.speed_m_s))  # the worker owns its motion mode
        self.motion.go_to(GeoPose(job.lat, job.lon, anchor.alt + job.alt_m, float(heading)))


LinkFactory = Callable[[str], BridgeLink]  # role "control" or "motion" -> a connected link


class AirSimBridge:
    """The bridge's control step. `link_factory(role)` makes and connects one BridgeLink; the
    bridge makes two, "control" (holds, state, images: short RPC timeout) and "motion" (blocking
    moves: a long one), and remakes them after a failure."""

    def __init__(self, gate: SafetyGate, anchor: Anchor, link_factory: LinkFactory,
                 motion: str = "teleport", motion_params: Optional[Mapping[str, Any]] = None,
                 velocity_period_s: float = 0.5, reconnect_period_s: float = 2.0,
                 state_from_pose: bool = False, clock: Clock = time.monotonic) -> None:
        self.gate, self.anchor, self.link_factory = gate, anchor, link_factory
        self.motion_name, self.motion_params = motion, dict(motion_params or {})
        self.velocity_period_s, self.reconnect_period_s = float(velocity_period_s), float(reconnect_period_s)
        self.state_from_pose, self.clock = bool(state_from_pose), clock
        self.control: Optional[BridgeLink] = None
        self.worker: Optional[MotionWorker] = None
        self.link_error: Optional[str] = None
        self._next_connect = -math.inf
        self._sent: Optional[Job] = None  # what the worker was last given since the last hold
        self._holding = True  # the vehicle starts at rest: no hover before the first motion
        # A link lost mid-motion: hover once it is back. Also at start with the e-stop latched (kept
        # across a restart): the bridge that latched it may have died with the vehicle moving.
        self._moving_when_lost = gate.estop.latched
        self.altitude_m: Optional[float] = None  # above the anchor, from the last state read
        self.holds = 0  # hold transitions sent (for diagnostics)

    # -- connection ----------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self.control is not None and self.worker is not None

    def ensure_connected(self, now: Optional[float] = None) -> bool:
        """Connect both links unless connected; retries no faster than reconnect_period_s."""
        if self.connected:
            return True
        now = self.clock() if now is None else now
        if now < self._next_connect:
            return False
        self._next_connect = now + self.reconnect_period_s
        control = None
        try:
            control = self.link_factory("control")
            worker = MotionWorker(lambda: make_motion_mode(self.motion_name, self.link_factory("motion"), self.anchor,
                                                           **self.motion_params), self.velocity_period_s)
        except AirSimError as exc:
            if control is not None:
                control.close()
            self.link_error = str(exc)
            return False
        self.control, self.worker = control, worker
        self.link_error, self._sent = None, None
        self._holding = not self._moving_when_lost  # False: the next hold verdict sends a hover
        return True

    def _fail(self, error: str) -> None:
        """Drop both links: the next step reconnects and starts from a hold."""
        self.link_error = error
        if self.connected:
            self._moving_when_lost = not self._holding
        worker, control = self.worker, self.control
        self.worker = self.control = None
        if worker is not None:
            worker.close()  # its thread closes the motion link
        if control is not None:
            control.close()

    def close(self) -> None:
        self._fail("closed")

    # -- inputs --------------------------------------------------------------------------------

    def command(self, command: Command, now: Optional[float] = None) -> Verdict:
        """A decision arrived (feeds the decision watchdog); the next step acts on it."""
        return self.gate.decision(command, now)

    def heartbeat(self, now: Optional[float] = None) -> None:
        self.gate.beat(now)

    def trip_estop(self, source: str, reason: str = "", held: bool = False) -> None:
        """Latch; a `held` source refuses the reset until `release_estop(source)`."""
        self.gate.estop.trigger(source, reason, held)

    def release_estop(self, source: str) -> None:
        self.gate.estop.release(source)

    def reset_estop(self) -> Check:
        """Clear the latch. Motion resumes only with a decision sent after the reset, never with one
        that arrived while the e-stop held the vehicle."""
        check = self.gate.estop.reset()
        if check.ok:
            self.gate.latest = HOLD
        return check

    # -- the control step ----------------------------------------------------------------------

    def step(self, now: Optional[float] = None) -> BridgeStatus:
        """What the vehicle should do now, done: motion on a change, one hold per transition."""
        now = self.clock() if now is None else now
        verdict = self.gate.tick(now, self.altitude_m)
        estop = self.gate.estop.latched
        if not self.ensure_connected(now):
            return BridgeStatus(False, LINK_ERROR, f"AirSim link down, holding: {self.link_error}", estop, False)
        if self.worker is not None and self.worker.error is not None:
            error, self.worker.error = self.worker.error, None
            self._fail(error)
            return BridgeStatus(False, LINK_ERROR, f"AirSim motion failed, holding: {error}", estop, False)
        command, code, reason = verdict.command, verdict.code.value, verdict.reason
        if isinstance(command, Velocity) and self.motion_name != "fly":
            command, code = Hold(), UNSUPPORTED
            reason = f"velocity commands need motion mode 'fly' (this bridge runs '{self.motion_name}')"
        try:
            if isinstance(command, Hold):
                self._hold()
            elif command != self._sent:
                self.worker.submit(command)
                self._sent, self._holding = command, False
        except AirSimError as exc:
            self._fail(str(exc))
            return BridgeStatus(False, LINK_ERROR, f"AirSim hold failed: {exc}", estop, False)
        return BridgeStatus(not isinstance(command, Hold), code, reason, estop, True)

    def _hold(self) -> None:
        """Shut the motion gate and hover; returns once a hover is the last call the vehicle saw.
        Marked held only then: a hold that fails leaves the bridge "moving", so the reconnect
        hovers first."""
        if self._holding:
            return
        # A teleported vehicle has no running task to stop (and may have no hover at all).
        hover = self.control.hover if isinstance(self.worker.motion, FlyMotion) else None
        self.worker.hold(hover)
        self._sent, self._holding = None, True
        self.holds += 1
        self._moving_when_lost = False

    # -- sensing (control link) ----------------------------------------------------------------

    def kinematics(self) -> Optional[Kinematics]:
        """The vehicle's state, or None while the link is down (a failure drops the link)."""
        if not self.ensure_connected():
            return None
        try:
            state = self.control.kinematics(self.anchor, from_pose=self.state_from_pose)
        except AirSimError as exc:
            self._fail(str(exc))
            return None
        self.altitude_m = state.alt - self.anchor.alt
        return state

    def grab(self, camera: str, depth: bool = False) -> Optional[CameraFrame]:
        """One camera frame, None while the link is down. A failure raises AirSimError and keeps
        the link: a misnamed camera must not stop the vehicle's motion."""
        if not self.ensure_connected():
            return None
        return self.control.grab(camera, depth=depth)


class Unfenced(Geofence):
    """No fence: for teleport benchmarks without a safety config, where the simulator has no
    airframe to protect and the e-stop is the only guard left."""

    kind = "none"

    def __init__(self) -> None:
        super().__init__(math.inf)

    def outside_by_m(self, lat: float, lon: float) -> float:
        return 0.0


def unguarded_config() -> SafetyConfig:
    """Teleport without a safety config: no fence, no ceiling, no heartbeat, no decision watchdog
    (a teleported vehicle does not move between decisions); the e-stop still latches."""
    return SafetyConfig(geofence=Unfenced(), decision_timeout_s=math.inf, heartbeat_timeout_s=None,
                        max_speed_m_s=math.inf, max_vertical_speed_m_s=math.inf, max_altitude_m=math.inf)


def status_level(status: BridgeStatus) -> str:
    """Diagnostics level: error on e-stop or a broken link, warn while holding, ok while moving."""
    if status.estop or status.code in (LINK_ERROR, SafetyCode.ESTOP.value):
        return "error"
    return "ok" if status.moving else "warn"
