"""The one safety-gated bridge for every vehicle link (AirSim, MAVLink, the simulated walker).

A link only translates; this bridge decides. It owns the safety gate (e-stop latch, heartbeat,
decision watchdog, geofence, limits), the motion door (core/vehicles/motion_door.py: a hold bumps
an epoch and a motion call decided under an older one is dropped) and four threads, so that
nothing safety does ever waits behind a call that may block:

- safety (`tick()` every `safety_period_s`, woken at once by an e-stop, a command or a request):
  asks the gate what may happen now and acts on changes. It is the only thread that calls the
  link's hold, land, return-to-launch and terminate, always through the door, and it calls
  nothing else on the link except `keepalive()`;
- motion: runs the link's motion calls (go_to, velocity, take_control), each one through the
  door, which asks the gate again right before the call; a result that comes back after the
  epoch moved is discarded;
- telemetry: reads `link.state()` every `state_period_s`; a state older than `link_timeout_s`
  (a stalled call, a dead link) counts as a lost link, so the loss is seen within a second
  whatever the link call does;
- connect: (re)connects the link (up to `connect_timeout_s`) without the safety thread waiting,
  and gives the vehicle the gate's geofence (`upload_fence`, with `fence_breach_action`) before
  the bridge counts as connected, so the autopilot keeps the fence if this computer dies. A circle
  goes up as the 16-gon around it (the autopilot's fence holds the gate's, so only the gate refuses
  near the edge); a link without the `fence` capability skips it, said once in the status.

What is reported is what was done: the status says "holding" only once the link's hold returned
(or the vehicle reports itself held); a link lost mid-move reports that the hold is not
confirmed. A bridge that starts, or a link that comes back, holds first, whatever it finds, and
after a reconnect nothing moves until a command arrives that was decided after it. When the
vehicle leaves the stack's mode by itself (`VehicleState.in_control` turns False, or the link
raises `PilotOverride`), the bridge stops commanding, reports `pilot_override`, and gives the
stack control back only on an explicit `take_control()`.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, Union

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.link import (
    BREACH_ACTIONS,
    Fence,
    LinkError,
    PilotOverride,
    VehicleLink,
    VehicleState,
)
from cityseeker_ros.core.vehicles.motion_door import MotionDoor, MotionDropped
from cityseeker_ros.core.vehicles.safety.codes import Check, SafetyCode
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Hold, Velocity
from cityseeker_ros.core.vehicles.safety.gate import SafetyGate, Verdict
from cityseeker_ros.core.vehicles.safety.geofence import CircleFence, Geofence, PolygonFence

log = logging.getLogger("cityseeker_ros.vehicle_bridge")

# Codes the bridge adds to core.vehicles.safety.codes.SafetyCode (SafetyStatus.code is a plain string).
LINK_ERROR = "link_error"  # the link is down or a call failed: holding (or trying to), reconnecting
UNSUPPORTED = "unsupported_command"  # e.g. a velocity command to a link without velocity control
PILOT_OVERRIDE = "pilot_override"  # the autopilot left the stack's mode: the stack commands nothing
LOW_BATTERY = "low_battery"  # below the safety file's rtl_battery_fraction: returning to launch
RETURNING = "return_to_launch"  # returning to launch on request
TERMINATED = "terminated"  # motors cut on a confirmed request
ARMING_DENIED = "arming_denied"  # the flying start: the autopilot refused to arm (its words in the reason)
TAKEOFF_FAILED = "takeoff_failed"  # the flying start: the takeoff was refused or did not reach its height
ON_GROUND_M = 0.5  # below this height above home a vehicle with arm and takeoff takes off before a goal

ESTOP_ACTIONS = ("hold", "land")  # cutting motors is never an e-stop action: see terminate()
CIRCLE_VERTICES = 16  # a circular geofence goes to the autopilot as the polygon around it
TERMINATE_CONFIRMATION = "CUT MOTORS"

Clock = Callable[[], float]
Position = tuple[Optional[float], Optional[float], Optional[float]]


@dataclass(frozen=True)
class BridgeStatus:
    """What the bridge's safety gate let through and why, latched: published as SafetyStatus.msg
    (`connected` travels as its code: only LINK_ERROR means the link is down) and diagnostics."""

    moving: bool
    code: str  # a SafetyCode value or one of the codes above
    reason: str
    estop: bool
    connected: bool
    stamp: Optional[Stamp] = None  # set when it is published

    @property
    def key(self) -> tuple[str, bool, bool]:
        """What a change of status means: republish when this changes."""
        return self.code, self.moving, self.estop


def status_level(status: BridgeStatus) -> str:
    """Diagnostics level: error on e-stop, a broken link or a cut; warn while holding; ok while moving."""
    if status.estop or status.code in (LINK_ERROR, SafetyCode.ESTOP.value, TERMINATED, PILOT_OVERRIDE):
        return "error"
    return "ok" if status.moving else "warn"


@dataclass(frozen=True)
class _Snapshot:
    state: VehicleState
    read_at: float  # time.monotonic() when the read started


# What the safety thread wants the vehicle to do: a stop action by name, or a command to fly.
Action = Union[str, Goal, Velocity]
STOPS = ("hold", "land", "rtl", "terminate")


class VehicleBridge:
    def __init__(self, link: VehicleLink, gate: SafetyGate, *, estop_action: str = "hold",
                 rtl_battery_fraction: Optional[float] = None, safety_period_s: float = 0.05,
                 state_period_s: float = 0.1, link_timeout_s: float = 0.5, velocity_period_s: float = 0.5,
                 connect_timeout_s: float = 3.0, reconnect_period_s: float = 2.0, hold_timeout_s: float = 2.0,
                 fence_breach_action: str = "hold", clock: Clock = time.monotonic, start: bool = True) -> None:
        if estop_action not in ESTOP_ACTIONS:
            raise ConfigError(f"estop_action must be one of {', '.join(ESTOP_ACTIONS)} (cutting motors is a "
                              f"separate, confirmed request); got {estop_action!r}")
        if fence_breach_action not in BREACH_ACTIONS:
            raise ConfigError(f"fence_breach_action must be one of {', '.join(BREACH_ACTIONS)}; "
                              f"got {fence_breach_action!r}")
        self.fence_breach_action = fence_breach_action
        self.fence: Optional[Fence] = None  # the geofence as the vehicle holds it, after a connect
        self._fence_note: Optional[str] = None  # why the vehicle holds no fence: in the status until read once
        self.link, self.gate, self.clock = link, gate, clock
        self.estop_action, self.rtl_battery_fraction = estop_action, rtl_battery_fraction
        self.safety_period_s, self.state_period_s = float(safety_period_s), float(state_period_s)
        self.link_timeout_s, self.velocity_period_s = float(link_timeout_s), float(velocity_period_s)
        self.connect_timeout_s, self.reconnect_period_s = float(connect_timeout_s), float(reconnect_period_s)
        self.capabilities = link.capabilities
        self.door = MotionDoor(hold_timeout_s=hold_timeout_s)
        self._gate_lock = threading.RLock()  # the gate's state; never held across a link call
        self._tick_lock = threading.Lock()  # one safety tick at a time
        self._lock = threading.Lock()  # the fields below
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._connected = False
        self._connecting = False
        self._connect_attempts = 0
        self.connect_tried = threading.Event()  # set after the first connect attempt ended
        self._next_connect = -math.inf
        self._connected_at = time.monotonic()
        self._ever_connected = False
        self._link_error: Optional[str] = None
        self._snapshot: Optional[_Snapshot] = None
        self._done: Optional[str] = None  # the stop action last confirmed ("hold", "land"...), None while moving
        self._sent: Optional[Command] = None  # the command given to the motion thread since the last stop
        self._job: Optional[tuple[Command, int]] = None
        self._job_cv = threading.Condition()
        self._commanding_since: Optional[float] = None  # monotonic: the stack holds control since
        self._override: Optional[str] = None
        self._rtl_requested = False
        self._terminate_requested = False
        self._status = BridgeStatus(False, LINK_ERROR, "connecting to the vehicle", gate.estop.latched, False)
        self.holds = 0  # stop actions issued (for diagnostics and tests)
        self.stops: list[str] = []  # every stop action issued, in order
        # The flying start (arm, take off, take control before a goal): what it says, as it happens
        # (`on_event`, called on the motion thread: the node logs it), and a refusal kept in the
        # status until a new decision: (the command it was for, code, reason).
        self.on_event: Optional[Callable[[str], None]] = None
        self.events: list[tuple[float, str]] = []  # (monotonic, line)
        self.takeoff_timeout_s = 30.0
        self._start_failed: Optional[tuple[Command, str, str]] = None
        self._starting: Optional[Command] = None  # the goal whose flying start runs (its speed may be re-clamped)
        self._just_started = False  # the motion thread's: the next motion after a flying start takes control
        self._threads = [threading.Thread(target=target, name=f"vehicle-{name}", daemon=True)
                         for name, target in (("safety", self._safety_loop), ("motion", self._motion_loop),
                                              ("telemetry", self._telemetry_loop), ("connect", self._connect_loop))]
        if start:
            self.start()

    def start(self) -> None:
        for thread in self._threads:
            if not thread.is_alive():
                thread.start()

    def close(self, join_s: float = 1.0) -> None:
        """Stop the threads and close the link; a motion call in flight is refused from now on."""
        self._stop.set()
        self.door.close()
        self._wake.set()
        with self._job_cv:
            self._job = None
            self._job_cv.notify_all()
        for thread in self._threads:
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=join_s)
        try:
            self.link.close()
        except LinkError:
            pass

    # -- inputs (any thread; none waits on the link) ----------------------------------------------

    def command(self, command: Command, now: Optional[float] = None) -> Verdict:
        """A decision arrived (feeds the decision watchdog); the safety thread acts on it at once."""
        with self._gate_lock:
            verdict = self.gate.decision(command, now, position=self._position())
        self._wake.set()
        return verdict

    def heartbeat(self, now: Optional[float] = None) -> None:
        with self._gate_lock:
            self.gate.beat(now)

    def trip_estop(self, source: str, reason: str = "", held: bool = False) -> None:
        """Latch (saved to the latch file first); the safety thread holds (or lands) at once."""
        with self._gate_lock:
            self.gate.estop.trigger(source, reason, held)
        self._wake.set()

    def release_estop(self, source: str) -> None:
        with self._gate_lock:
            self.gate.estop.release(source)

    def reset_estop(self) -> Check:
        """Clear the latch. Motion resumes only with a decision sent after the reset."""
        with self._gate_lock:
            check = self.gate.estop.reset()
            if check.ok:
                self.gate.latest = HOLD
        self._wake.set()
        return check

    def return_to_launch(self) -> None:
        """Return to launch (the link's own RTL); latched until the next decision."""
        with self._lock:
            self._rtl_requested = True
        self._wake.set()

    def terminate(self, confirm: str) -> None:
        """Cut the motors: the vehicle falls. Only with `confirm="CUT MOTORS"`, never an e-stop
        default; latched until the bridge is remade."""
        if confirm != TERMINATE_CONFIRMATION:
            raise ConfigError(f'terminate needs confirm="{TERMINATE_CONFIRMATION}" (it cuts the motors); '
                              f"got {confirm!r}")
        if not self.capabilities.terminate:
            raise LinkError(f"the {self.link.name} link cannot cut the motors")
        with self._lock:
            self._terminate_requested = True
        self._wake.set()

    def take_control(self) -> None:
        """An operator gives the stack control back after a pilot took it (the only way back).
        The vehicle holds until a decision newer than this arrives."""
        with self._lock:
            self._override = None
        with self._gate_lock:
            self.gate.latest = HOLD
        self._wake.set()

    # -- what the outside reads (never blocks on the link) ----------------------------------------

    def status(self) -> BridgeStatus:
        """The last tick's status, overruled by a link seen lost since (a safety thread stuck in a
        hold cannot make it stale). A once-only note rides on every tick's status until this has
        returned it, so the reader that publishes sees it however fast the safety thread ticks."""
        status = self._current_status()
        with self._lock:
            if self._fence_note is not None and self._fence_note in status.reason:
                self._fence_note = None
        return status

    def _current_status(self) -> BridgeStatus:
        with self._lock:
            status = self._status
            lost = self._lost_reason()
            done = self._done
        if lost is not None and status.code != LINK_ERROR:
            held = done is not None
            return BridgeStatus(not held, LINK_ERROR, f"{lost}; " + ("holding" if held else
                                "hold not confirmed: the vehicle may still be moving"), self.gate.estop.latched, False)
        return status

    @property
    def state(self) -> Optional[VehicleState]:
        """The vehicle's last state (None before the first, or while it is stale)."""
        snap = self._snapshot
        if snap is None or time.monotonic() - snap.read_at > self.link_timeout_s + self.state_period_s:
            return None
        return snap.state

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def moving(self) -> bool:
        return self._current_status().moving

    # -- the safety thread ------------------------------------------------------------------------

    def _safety_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.safety_period_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - the safety thread never dies
                log.exception("safety tick failed")

    def _position(self) -> Optional[Position]:
        snap = self._snapshot
        if snap is None or time.monotonic() - snap.read_at > self.link_timeout_s + self.state_period_s:
            return None
        s = snap.state
        return s.lat, s.lon, s.alt_m

    def _lost_reason(self) -> Optional[str]:
        """Why the link counts as lost now, or None (caller holds self._lock)."""
        if not self._connected:
            return f"link down: {self._link_error or 'not connected'}"
        if self._link_error is not None:
            return f"link error: {self._link_error}"
        snap = self._snapshot
        if snap is None:
            return None if self._connected_at_age() < self.link_timeout_s else "no state from the vehicle"
        age = time.monotonic() - snap.read_at
        if age > self.link_timeout_s + self.state_period_s:
            return f"no state from the vehicle for {age:.1f} s"
        if snap.state.link_lost:
            return "the link reports the vehicle lost"
        return None

    def _connected_at_age(self) -> float:
        return time.monotonic() - self._connected_at

    def _as_flown(self, command: Command) -> Command:
        """The goal as the link will fly it (the altitude it really flies is the one checked)."""
        if isinstance(command, Goal) and command.valid():
            flown = self.link.flown_altitude_m(command.alt_m)
            if flown != command.alt_m:
                return Goal(command.lat, command.lon, flown, command.heading_deg, command.speed_m_s)
        return command

    def _verdict(self, now: Optional[float] = None) -> Verdict:
        with self._gate_lock:
            return self.gate.filter(self._as_flown(self.gate.latest), now, position=self._position())

    def tick(self, now: Optional[float] = None) -> BridgeStatus:
        """One safety step: what the vehicle should do now, done (a stop once per transition, a new
        command once), and the status. Called by the safety thread; callable from another (serialised)."""
        with self._tick_lock:
            status = self._tick(self.clock() if now is None else now)
            with self._lock:
                if self._fence_note is not None and status.code != LINK_ERROR:
                    status = BridgeStatus(status.moving, status.code, f"{status.reason}; {self._fence_note}",
                                          status.estop, status.connected)
                self._status = status
            return status

    def _tick(self, now: float) -> BridgeStatus:
        verdict = self._verdict(now)
        estop = self.gate.estop.latched
        with self._lock:
            lost = self._lost_reason()
            override, terminate, rtl = self._override, self._terminate_requested, self._rtl_requested
        if terminate:
            return self._stop_with("terminate", TERMINATED, "motors cut on a confirmed request", estop)
        if lost is not None:
            if self._ever_connected:  # the goal flown when the link failed is forgotten
                self._forget_goal()
            if self._connected:
                status = self._stop_with("hold", LINK_ERROR, lost, estop)
                held = status.code == LINK_ERROR and self._done == "hold"
                return BridgeStatus(not held, LINK_ERROR, f"{lost}; " + ("holding" if held else
                                    "hold not confirmed: the vehicle may still be moving"), estop, self._connected)
            held = self._done is not None
            return BridgeStatus(not held, LINK_ERROR, f"{lost}; " + ("holding" if held else
                                "hold not confirmed: the vehicle may still be moving"), estop, False)
        if estop:
            return self._stop_with(self._capable(self.estop_action), verdict.code.value, verdict.reason, estop)
        snap = self._snapshot
        if override is None and self.capabilities.take_control and snap is not None \
                and self._commanding_since is not None and snap.read_at > self._commanding_since \
                and not snap.state.in_control:
            override = self._set_override(f"the vehicle left the stack's mode (now {snap.state.mode})")
        if override is not None:
            self._cancel_job()
            return BridgeStatus(False, PILOT_OVERRIDE, f"{override}: the stack sends nothing until take_control()",
                                estop, True)
        battery = snap.state.battery_fraction if snap is not None else None
        if self.rtl_battery_fraction is not None and battery is not None and battery < self.rtl_battery_fraction:
            return self._stop_with(self._capable("rtl"), LOW_BATTERY, f"battery {battery:.0%} below "
                                   f"{self.rtl_battery_fraction:.0%}: returning to launch", estop)
        if rtl:
            return self._stop_with(self._capable("rtl"), RETURNING, "return to launch requested", estop)
        command, code, reason = verdict.command, verdict.code.value, verdict.reason
        if isinstance(self.gate.latest, Velocity) and not self.capabilities.velocity \
                and verdict.code not in (SafetyCode.ESTOP, SafetyCode.HEARTBEAT_LOST, SafetyCode.NO_DECISION):
            command, code = HOLD, UNSUPPORTED
            reason = f"the {self.link.name} link takes no velocity commands"
        if isinstance(command, Goal) and not self.capabilities.go_to:
            command, code, reason = HOLD, UNSUPPORTED, f"the {self.link.name} link takes no goals"
        if self._done is None and self._sent is None:  # started or came back: hold first, whatever it finds
            first = self._stop_with("hold", code, reason, estop)
            if self._done != "hold":
                return first
        failed = self._start_failed
        if failed is not None and isinstance(command, Goal):  # a refused flying start is not retried
            if failed[0] == command:                          # for the same goal, only for a new one
                return BridgeStatus(False, failed[1], failed[2], estop, True)
            self._start_failed = None
        if isinstance(command, Hold):
            return self._stop_with("hold", code, reason, estop)
        if command != self._sent and not (self._starting is not None and isinstance(command, Goal)):
            self._submit(command)  # a new goal waits for a flying start under way: every goal needs it
        self._keepalive()
        return BridgeStatus(True, code, reason, estop, True)

    def _capable(self, action: str) -> str:
        if action == "land" and not self.capabilities.land:
            return "hold"
        if action == "rtl" and not self.capabilities.rtl:
            return "hold"
        return action

    def _forget_goal(self) -> None:
        """The link failed: the goal it was flying is forgotten; only a newer decision moves it."""
        with self._gate_lock:
            self.gate.latest = HOLD
        self._cancel_job()

    def _cancel_job(self) -> None:
        with self._job_cv:
            self._job = None
        self._sent = None

    def _set_override(self, why: str) -> str:
        with self._lock:
            if self._override is None:
                self._override = why
            self._commanding_since = None
            return self._override

    def _stop_with(self, action: str, code: str, reason: str, estop: bool) -> BridgeStatus:
        """Issue a stop action once per transition, through the door; report it only once issued."""
        if self._done != action:
            self._cancel_job()
            calls = {"hold": self.link.hold, "land": self.link.land, "rtl": self.link.return_to_launch,
                     "terminate": self.link.terminate}
            try:
                self.door.hold(calls[action])
            except PilotOverride as exc:
                self._set_override(str(exc))
                return BridgeStatus(False, PILOT_OVERRIDE, str(exc), estop, True)
            except LinkError as exc:
                self._link_failed(f"{action} failed: {exc}")
                return BridgeStatus(True, LINK_ERROR, f"{action} failed ({exc}): hold not confirmed", estop,
                                    self._connected)
            self._done, self._sent, self._commanding_since = action, None, None
            self.holds += 1
            self.stops.append(action)
        words = {"hold": "holding", "land": "landing", "rtl": "returning to launch", "terminate": "motors cut"}
        return BridgeStatus(False, code, reason if action == "hold" else f"{reason}; {words[action]}", estop, True)

    def _submit(self, command: Command) -> None:
        epoch = self.door.open()
        with self._job_cv:
            self._job = (command, epoch)
            self._job_cv.notify_all()
        self._sent, self._done = command, None
        with self._lock:
            self._rtl_requested = False

    def _keepalive(self) -> None:
        try:
            self.link.keepalive()
        except LinkError as exc:
            self._link_failed(f"keepalive failed: {exc}")

    def _link_failed(self, error: str) -> None:
        with self._lock:
            self._link_error = error
        self._wake.set()

    # -- the motion thread ------------------------------------------------------------------------

    def _gate_lets(self, matches: Callable[[Command], bool]) -> bool:
        """The gate, now, lets through a command that `matches`: no pilot override, the link not
        lost, the e-stop not latched."""
        with self._lock:
            if self._override is not None or self._lost_reason() is not None:
                return False
        return matches(self._verdict().command) and not self.gate.estop.latched

    def _still_allowed(self, command: Command, same_place: bool = False) -> Callable[[], bool]:
        """Asked by the door right before the call: the gate, now, still lets this very command through."""
        if same_place:
            return lambda: self._gate_lets(lambda now: _same_place(now, command))
        return lambda: self._gate_lets(lambda now: now == command)

    def _start_allowed(self) -> bool:
        """Asked by the door before arming and the takeoff: the gate, now, lets a goal through."""
        return self._gate_lets(lambda now: isinstance(now, Goal))

    def _motion_loop(self) -> None:
        while not self._stop.is_set():
            with self._job_cv:
                while self._job is None and not self._stop.is_set():
                    self._job_cv.wait(0.5)
                if self._stop.is_set():
                    return
                command, epoch = self._job
                if isinstance(command, Goal):
                    self._job = None  # a goal runs once; a velocity repeats until replaced
            try:
                self._run(command, epoch)
            except MotionDropped:
                pass
            except PilotOverride as exc:
                self._set_override(str(exc))
                self._wake.set()
            except LinkError as exc:
                if self.door.epoch == epoch:  # else a hold superseded the call and the link refused the rest
                    self._link_failed(f"{type(command).__name__.lower()} failed: {exc}")
            except Exception as exc:  # noqa: BLE001 - any failure is reported, never kills the thread
                self._link_failed(f"{type(command).__name__.lower()} failed: {exc!r}")
            if isinstance(command, Velocity):
                self._stop.wait(self.velocity_period_s if not self.capabilities_velocity_blocks else 0.0)

    @property
    def capabilities_velocity_blocks(self) -> bool:
        """A link whose velocity call lasts one slice (AirSim) is re-sent at once."""
        return bool(getattr(self.link, "velocity_blocks", False))

    def _run(self, command: Command, epoch: int) -> None:
        snap = self._snapshot
        now = self._needs_flying_start(snap)
        if now is None:
            self._fly(command, epoch, self._still_allowed(command), snap)
            return
        # Any goal the gate lets through keeps the start going (a street walk decides its next goal
        # while the vehicle still climbs); a hold, a velocity or the e-stop stops it. Once it flies,
        # a newer goal, or this one with the speed clamped now, follows as a job of its own.
        self._starting = command
        try:
            if self._flying_start(command, epoch, self._start_allowed, now):
                self._just_started = True
                if _same_place(self._verdict().command, command):
                    self._fly(command, epoch, self._still_allowed(command, same_place=True), snap)
        finally:
            self._starting = None
            self._wake.set()

    def _fly(self, command: Command, epoch: int, allowed: Callable[[], bool], snap: Optional[_Snapshot]) -> None:
        started, self._just_started = self._just_started, False
        if self.capabilities.take_control and (started or snap is None or not snap.state.in_control):
            if started:
                self._say("taking control (the autopilot's control mode, with the setpoint stream)")
            self.door.send(epoch, allowed, lambda: self.link.take_control())
            if started:
                self._say(f"in control ({self._mode()}): flying the goal")
        if self._commanding_since is None:
            self._commanding_since = time.monotonic()
        if isinstance(command, Goal):
            self.door.send(epoch, allowed, lambda: self.link.go_to(
                command.lat, command.lon, command.alt_m, command.heading_deg, command.speed_m_s))
        else:
            self.door.send(epoch, allowed, lambda: self.link.velocity(
                command.east_m_s, command.north_m_s, command.up_m_s, command.yaw_rate_deg_s))

    def _needs_flying_start(self, snap: Optional[_Snapshot]) -> Optional[VehicleState]:
        """A link that arms and takes off, disarmed or on the ground (as it says now, not as the last
        telemetry tick saw it): its state, and it takes off before any goal; else None."""
        if snap is None or not (self.capabilities.arm and self.capabilities.takeoff):
            return None
        try:
            state = self.link.state()
        except LinkError:
            state = snap.state
        on_ground = not state.armed or (state.alt_m is not None and state.alt_m < ON_GROUND_M)
        return state if on_ground else None

    def _say(self, line: str) -> None:
        self.events.append((time.monotonic(), line))
        log.info(line)
        if self.on_event is not None:
            try:
                self.on_event(line)
            except Exception:  # noqa: BLE001 - a listener never stops the flight
                log.exception("flying start listener failed")

    def _mode(self) -> str:
        try:
            return self.link.state().mode
        except LinkError:
            return "mode unknown"

    def _flying_start(self, command: Command, epoch: int, allowed: Callable[[], bool], state: VehicleState) -> bool:
        """Arm (if disarmed) and take off to the link's configured height, each through the door. A
        refusal (the autopilot's words) becomes the status, kept for this goal; nothing else is sent."""
        started = time.monotonic()
        if not state.armed:
            self._say("arming")
            try:
                self.door.send(epoch, allowed, lambda: self.link.arm())
            except PilotOverride:
                raise
            except LinkError as exc:
                return self._start_refused(command, ARMING_DENIED, f"{exc}; not flying this goal")
            self._say(f"armed in {time.monotonic() - started:.1f} s")
        height = getattr(self.link, "takeoff_alt_m", None)
        self._say("taking off" + (f" to {height:g} m" if height is not None else ""))
        climb = time.monotonic()
        try:
            self.door.send(epoch, allowed, lambda: self.link.takeoff(None, self.takeoff_timeout_s))
        except PilotOverride:
            raise
        except LinkError as exc:
            if self.door.epoch != epoch:  # a hold came during the climb: it speaks for itself
                raise MotionDropped(str(exc)) from None
            return self._start_refused(command, TAKEOFF_FAILED, f"{exc}; not flying this goal")
        self._say(f"took off in {time.monotonic() - climb:.1f} s ({time.monotonic() - started:.1f} s since the goal)")
        return True

    def _start_refused(self, command: Command, code: str, reason: str) -> bool:
        self._start_failed = (command, code, reason)
        self._say(f"{code}: {reason}")
        self._wake.set()
        return False

    # -- the telemetry and connect threads ---------------------------------------------------------

    def _telemetry_loop(self) -> None:
        while not self._stop.wait(self.state_period_s):
            if not self._connected:
                continue
            started = time.monotonic()
            try:
                state = self.link.state()
            except LinkError as exc:
                self._link_failed(f"state failed: {exc}")
                continue
            except Exception as exc:  # noqa: BLE001 - reported as a link failure
                self._link_failed(f"state failed: {exc!r}")
                continue
            self._snapshot = _Snapshot(state, started)
            if state.link_lost:
                self._wake.set()

    def _upload_fence(self) -> None:
        """Give the autopilot the gate's geofence and ceiling (on every connect: a rebooted vehicle
        may have lost it); a failed upload fails the connect, so nothing moves without it."""
        if not self.capabilities.fence:
            if self.fence is None and self._fence_note is None and not self._ever_connected:
                self._fence_note = (f"the {self.link.name} link keeps no geofence on the vehicle: "
                                    "only this bridge fences")
                log.warning(self._fence_note)
            return
        polygon = autopilot_polygon(self.gate.geofence)
        if polygon is None:
            return
        try:
            self.fence = self.link.upload_fence(polygon, self.gate.geofence.max_altitude_m, self.fence_breach_action)
        except LinkError as exc:
            raise LinkError(f"geofence upload to the vehicle failed: {exc}") from None

    def _connect_loop(self) -> None:
        while not self._stop.wait(0.01):
            with self._lock:
                need = not self._connected or self._link_error is not None
            if not need or self.clock() < self._next_connect:
                continue
            self._next_connect = self.clock() + self.reconnect_period_s
            with self._lock:
                was = self._connected
                self._connected = False
            if was:  # wait for the safety thread to have tried its hold on the failed link
                self._wake.set()
                time.sleep(2 * self.safety_period_s)
            try:
                self.link.close()
            except Exception:  # noqa: BLE001 - closing a broken link may fail too
                pass
            try:
                self.link.connect(self.connect_timeout_s)
                self._upload_fence()
                started = time.monotonic()
                first = _Snapshot(self.link.state(), started)  # the gate fences from where it is
            except Exception as exc:  # noqa: BLE001 - reported, retried
                with self._lock:
                    self._link_error = str(exc)
                    self._connect_attempts += 1
                self.connect_tried.set()
                continue
            with self._lock:
                self._snapshot = first
                self._connected_at = time.monotonic()
                self._link_error = None
                self._connected = self._ever_connected = True
                self._done, self._sent = None, None  # started or came back: hold first
            if self._connect_attempts:  # a reconnect: only a decision made after it moves the vehicle
                self._forget_goal()
            self._connect_attempts += 1
            self.connect_tried.set()
            self._wake.set()


def _same_place(a: Optional[Command], b: Optional[Command]) -> bool:
    """Two goals to one place, height and heading (their speeds may differ)."""
    return isinstance(a, Goal) and isinstance(b, Goal) and \
        (a.lat, a.lon, a.alt_m, a.heading_deg) == (b.lat, b.lon, b.alt_m, b.heading_deg)


def autopilot_polygon(geofence: Geofence) -> Optional[list[tuple[float, float]]]:
    """The (lat, lon) polygon an autopilot holds for `geofence`: a polygon as it is, a circle as the
    CIRCLE_VERTICES-gon whose edges touch it (it contains the circle); None for no fence."""
    if isinstance(geofence, PolygonFence):
        return list(geofence.points)
    if isinstance(geofence, CircleFence):
        corner = geofence.radius_m / math.cos(math.pi / CIRCLE_VERTICES)
        return [destination(geofence.lat, geofence.lon, 360.0 * i / CIRCLE_VERTICES, corner)
                for i in range(CIRCLE_VERTICES)]
    return None
