"""The one safety-gated bridge for every vehicle link (AirSim, MAVLink, the simulated walker).

A link only translates; this bridge decides. Who may move the vehicle is one explicit state
machine (core/vehicles/authority.py: holding, starting, commanding, pilot, e-stopped...); the
bridge turns what it sees into that machine's events, carries out what it says, and asks it
(`may_send`) right before every message to the link, together with the safety gate (e-stop
latch, heartbeat, decision watchdog, geofence, limits) and the motion door (core/vehicles/
motion_door.py: a stop opens a new epoch and a call decided under an older one is dropped). Four
threads, so that nothing safety does ever waits behind a call that may block:

- safety (`tick()` every `safety_period_s`, woken at once by an e-stop or a command; an operator's
  request ticks at once on the caller's thread): feeds the events of the moment to the machine in
  priority order and sends the stops it asks for, always through the door; it calls nothing else
  on the link except `keepalive()`;
- motion: runs the link's motion calls (arm, takeoff, take_control, go_to, velocity), each one
  through the door, which asks the machine, the gate and the safety thread's liveness again right
  before the call; a result that comes back after the epoch moved is discarded;
- telemetry: reads `link.state()` every `state_period_s`; a state older than `link_timeout_s`
  (a stalled call, a dead link) counts as a lost link, so the loss is seen within a second
  whatever the link call does;
- connect: (re)connects the link (up to `connect_timeout_s`) without the safety thread waiting,
  and gives the vehicle the gate's geofence (`upload_fence`, with `fence_breach_action`) before
  the bridge counts as connected, so the autopilot keeps the fence if this computer dies. A circle
  goes up as the 16-gon around it (the autopilot's fence holds the gate's, so only the gate refuses
  near the edge); a link without the `fence` capability skips it, said once in the status.

What is reported is what was done: the status says "holding" only once the link's hold returned;
a link lost mid-move reports that the hold is not confirmed. Only a decision made after the last
stop moves the vehicle (a start, a reconnect, a reset, a take-control back all hold first). A mode
the stack did not ask for (`VehicleState.foreign_mode`, or `PilotOverride` from a link call) hands
the vehicle to the pilot in any state; the bridge then sends nothing until an operator's
`take_control()`, after which it holds until a newer decision. `close()` ends in the end action.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.authority import RTL_REFUSALS, Authority, Event, Send, State, Step
from cityseeker_ros.core.vehicles.link import (
    BREACH_ACTIONS,
    Fence,
    LinkError,
    PilotOverride,
    StreamStopped,
    VehicleLink,
    VehicleState,
)
from cityseeker_ros.core.vehicles.motion_door import MotionDoor, MotionDropped
from cityseeker_ros.core.vehicles.safety.bounds import check_takeoff_height, takeoff_height_problem
from cityseeker_ros.core.vehicles.safety.codes import Check, SafetyCode
from cityseeker_ros.core.vehicles.safety.commands import Command, Goal, Velocity
from cityseeker_ros.core.vehicles.safety.config import END_ACTIONS
from cityseeker_ros.core.vehicles.safety.gate import SafetyGate, Verdict
from cityseeker_ros.core.vehicles.safety.geofence import CircleFence, Geofence, PolygonFence
from cityseeker_ros.core.vehicles.safety.latch_file import LatchFile

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
SAFETY_STALLED = "safety_stalled"  # the safety thread has not ticked for a while: motion refused
MOVING_STATES = (State.COMMANDING, State.STARTING)

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
class Answer:
    """An operator's request answered (a Trigger service's success and message): whether it was
    carried out and, in words, what the vehicle does now or why nothing was sent."""

    ok: bool
    message: str


@dataclass(frozen=True)
class _Snapshot:
    state: VehicleState
    read_at: float  # time.monotonic() when the read started


class VehicleBridge:
    def __init__(self, link: VehicleLink, gate: SafetyGate, *, estop_action: str = "hold",
                 rtl_battery_fraction: Optional[float] = None, safety_period_s: float = 0.05,
                 state_period_s: float = 0.1, link_timeout_s: float = 0.5, velocity_period_s: float = 0.5,
                 connect_timeout_s: float = 3.0, reconnect_period_s: float = 2.0, hold_timeout_s: float = 2.0,
                 fence_breach_action: str = "hold", end_action: str = "hold", clock: Clock = time.monotonic,
                 start: bool = True) -> None:
        if estop_action not in ESTOP_ACTIONS:
            raise ConfigError(f"estop_action must be one of {', '.join(ESTOP_ACTIONS)} (cutting motors is a "
                              f"separate, confirmed request); got {estop_action!r}")
        if fence_breach_action not in BREACH_ACTIONS:
            raise ConfigError(f"fence_breach_action must be one of {', '.join(BREACH_ACTIONS)}; "
                              f"got {fence_breach_action!r}")
        if end_action not in END_ACTIONS:
            raise ConfigError(f"end_action must be one of {', '.join(END_ACTIONS)}; got {end_action!r}")
        if link.capabilities.takeoff:  # a 45 m takeoff under a 30 m ceiling once climbed to 45 m
            check_takeoff_height(getattr(link, "takeoff_alt_m", None), gate.limits)
        self.fence_breach_action = fence_breach_action
        self.fence: Optional[Fence] = None  # the geofence as the vehicle holds it, after a connect
        self._fence_note: Optional[str] = None  # why the vehicle holds no fence: in the status until read once
        self.link, self.gate, self.clock = link, gate, clock
        self.estop_action, self.rtl_battery_fraction = estop_action, rtl_battery_fraction
        self.safety_period_s, self.state_period_s = float(safety_period_s), float(state_period_s)
        self.link_timeout_s, self.velocity_period_s = float(link_timeout_s), float(velocity_period_s)
        self.connect_timeout_s, self.reconnect_period_s = float(connect_timeout_s), float(reconnect_period_s)
        self.capabilities = link.capabilities
        self.door = MotionDoor(hold_timeout_s=hold_timeout_s, stop_decided=self._stop_decided)
        self.authority = Authority(estop_action, end_action)
        # The authority machine and the decision numbers: changed under _gate_lock, never across a link call.
        self._gate_lock = threading.RLock()
        self._tick_lock = threading.Lock()  # one safety tick at a time
        self._lock = threading.Lock()  # the fields below
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._connected = False
        self._connect_attempts = 0
        self.connect_tried = threading.Event()  # set after the first connect attempt ended
        self._next_connect = -math.inf
        self._connected_at = time.monotonic()
        self._ever_connected = False
        self._link_error: Optional[str] = None
        self._snapshot: Optional[_Snapshot] = None
        self._last_tick = time.monotonic()  # when the safety thread last finished a tick
        # Requests from other threads, taken by the next tick: the newest decision number when asked
        # (a decision sent after the request counts as made after it), None when not asked.
        self._rtl_requested: Optional[int] = None
        self._rtl_step: Optional[Step] = None  # what the last RTL request did, once a tick applied it
        self._take_requested: Optional[int] = None
        self._end_requested: Optional[int] = None
        self._reset_at: Optional[int] = None
        # E-stop trips counted, and those the authority has handled: a trip reset before any tick
        # saw the latch (a stalled safety thread) is still an e-stop, and nothing moves meanwhile.
        self._estop_trips = self._estop_trips_handled = 0
        # losses the telemetry thread read, and those the safety thread handled: a stalled safety thread
        # may sleep through a whole outage, and the return must still be a reconnect (a hold first)
        self._losses_read = self._losses_handled = 0
        self._terminate_requested = False
        self._pilot_reported: Optional[str] = None  # a link call raised PilotOverride
        # A pilot's takeover outlives this process, as the e-stop latch does (a file beside it): a
        # restarted bridge must not fly a vehicle whose pilot switch its predecessor's last hold overrode.
        self._pilot_file = pilot_file_beside(gate.estop.latch_file)
        if self._pilot_file is not None:
            self._pilot_reported = self._pilot_file.load()
        self._stream_stopped: Optional[str] = None  # a link call raised StreamStopped: a hold is due
        # The safety thread's own bookkeeping of what it gave the motion thread.
        self._latest_seq = 0  # the decision number of gate.latest
        self._flying_seq: Optional[int] = None  # the decision the motion thread carries out
        self._sent: Optional[Command] = None  # that decision as filtered when given (re-given when it changes)
        self._job: Optional[tuple[Command, int, str]] = None  # (command, epoch, "fly" or "start")
        self._job_cv = threading.Condition()
        self._stop_confirmed: Optional[Send] = None  # the stop the link last returned from; None: not confirmed
        self._trust_after = -math.inf  # telemetry read before this is no evidence of a pilot (take-control)
        self._control_since: Optional[float] = None  # take_control() returned in this stint of commanding
        self._airborne = False  # armed and seen above ON_GROUND_M since the last disarm
        self._just_started = False  # the motion thread's: the next flight follows a flying start (said aloud)
        self._start_result: Optional[tuple[int, bool]] = None  # (epoch, flew) from the motion thread
        self._start_failed: Optional[tuple[int, str, str]] = None  # (decision number, code, reason)
        self._refused: Optional[tuple[str, str]] = None  # a moving decision not carried out: (code, reason)
        self._status = BridgeStatus(False, LINK_ERROR, "connecting to the vehicle", gate.estop.latched, False)
        self.holds = 0  # stop actions issued (for diagnostics and tests)
        self.stops: list[str] = []  # every stop action issued, in order
        # The flying start (arm, take off, take control before a goal): what it says, as it happens
        # (`on_event`, called on the motion thread: the node logs it).
        self.on_event: Optional[Callable[[str], None]] = None
        self.events: list[tuple[float, str]] = []  # (monotonic, line)
        self.takeoff_timeout_s = 30.0
        self._closing = False
        self.control_note = ""  # what the last take_control() did, in words (the node answers with it)
        link.set_owner_gate(self._link_may_move)
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
        """End in the end action (a hold by default: the vehicle is never left in the control mode
        for the autopilot's offboard-loss failsafe to handle), then stop the threads and close the link."""
        self._closing = True  # the link's own threads send nothing that moves from now on,
        self.door.close()  # nor does a motion call under way: the end's hold is the last word
        if self._tick_lock.acquire(timeout=self.door.hold_timeout_s):
            try:
                if self._connected and self._lost_reason_now() is None:
                    self._event(Event.SHUTDOWN)
                    foreign = self._foreign_after_end()
                    if foreign is not None:  # a pilot's switch crossed the end's hold: the next bridge must know
                        self._keep_pilot(True, f"a pilot switched to {foreign} as the bridge closed")
            finally:
                self._tick_lock.release()
        self._stop.set()
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
        """A decision arrived (feeds the decision watchdog); the safety thread acts on it at once.
        The verdict is the one the safety thread will act on (the goal as the link flies it)."""
        with self._gate_lock:
            self.gate.decision(command, now, position=self._position())
            self._latest_seq = self.authority.hear()
            verdict = self._verdict(now)
        self._wake.set()
        return verdict

    def heartbeat(self, now: Optional[float] = None) -> None:
        with self._gate_lock:
            self.gate.beat(now)

    def trip_estop(self, source: str, reason: str = "", held: bool = False) -> None:
        """Latch (saved to the latch file first), then hold (or land) at once on a thread of its own:
        a link that streams its last setpoint by itself (MAVLink) stops only at a stop, so a safety
        thread that is late must not leave it streaming meanwhile, and the caller (a topic's callback)
        never waits on the link (a stuck motion call holds a stop's door up to hold_timeout_s)."""
        with self._gate_lock:
            self.gate.estop.trigger(source, reason, held)
            self._estop_trips += 1
        threading.Thread(target=self._tick_unless_closed, name="estop tick", daemon=True).start()

    def _tick_unless_closed(self) -> None:
        if not self._stop.is_set():
            self._tick_now()

    def release_estop(self, source: str) -> None:
        with self._gate_lock:
            self.gate.estop.release(source)

    def reset_estop(self) -> Check:
        """Clear the latch. Motion resumes only with a decision sent after the reset."""
        with self._gate_lock:
            check = self.gate.estop.reset()
            if check.ok:
                self._reset_at = self.authority.heard
        if check.ok:
            self._tick_now()
        return check

    def return_to_launch(self) -> Answer:
        """Return to launch (the link's own RTL) until a newer decision, or say why not. The answer is
        the authority's: a state whose row takes no RTL (a pilot's takeover, a latched e-stop, a lost
        link, RTL_REFUSALS) refuses it, and so does one entered before the request was applied (a
        pilot's switch the same tick saw first). A request the safety thread could not apply in time
        stays asked for its next tick and is answered not confirmed."""
        if not self.capabilities.rtl:
            return Answer(False, f"the {self.link.name} link cannot return to launch")
        if self._lost_reason_now() is not None:
            return Answer(False, f"not returning to launch: {RTL_REFUSALS[State.DISCONNECTED]}")
        with self._gate_lock, self._lock:
            refusal = RTL_REFUSALS.get(self.authority.state)
            if refusal is None:
                self._rtl_requested, self._rtl_step = self.authority.heard, None
        if refusal is not None:
            return Answer(False, f"not returning to launch: {refusal}")
        if not self._tick_now():
            return Answer(False, "not confirmed: the safety thread did not answer in time; the vehicle returns "
                                 "when it ticks again, if the stack still has it then")
        with self._lock:
            step = self._rtl_step
        if step is None or step.after is not State.RETURNING:
            why = RTL_REFUSALS.get(step.before if step is not None else self.authority.state, "")
            return Answer(False, f"not returning to launch: {why or 'the request was not applied'}")
        return Answer(True, "returning to launch until the next decision")

    def end_seek(self) -> None:
        """A Seek ended or was cancelled: the end action now, even if the vehicle already held."""
        self._request("_end_requested")

    def terminate(self, confirm: str) -> None:
        """Cut the motors: the vehicle falls. Only with `confirm="CUT MOTORS"`, never an e-stop
        default; final until the bridge is remade."""
        if confirm != TERMINATE_CONFIRMATION:
            raise ConfigError(f'terminate needs confirm="{TERMINATE_CONFIRMATION}" (it cuts the motors); '
                              f"got {confirm!r}")
        if not self.capabilities.terminate:
            raise LinkError(f"the {self.link.name} link cannot cut the motors")
        with self._lock:
            self._terminate_requested = True
        self._wake.set()

    def take_control(self) -> bool:
        """An operator gives the stack control back after a pilot took it (the only way back).
        The vehicle holds until a decision newer than this arrives. True only when it ended a pilot's
        takeover the bridge had reported and the vehicle confirmed the hold; `control_note` says why
        not otherwise:

        - no takeover reported (`pilot`): nothing to give back. An operator who presses 2 ms after a
          pilot's switch the bridge has not yet seen cannot have meant to end it (the ArduPilot soak:
          the press was told yes, and the monitor took it for the end of the takeover);
        - the link is down: the operator cannot see who has the vehicle then, and a request kept for
          later would act on a vehicle the pilot may have taken again meanwhile;
        - the hold was not confirmed: a radio that dropped less than the link's loss time ago is not
          seen yet, the hold never arrives and the pilot still has the vehicle (the PX4 soak);
        - the safety thread could not apply it in time: dropped, not kept for later."""
        if self._lost_reason_now() is not None:
            return self._not_taken("the link is down: take control again once it is back")
        with self._gate_lock, self._lock:
            if self.authority.state is not State.PILOT:
                return self._not_taken(f"no pilot takeover to end: the stack is {self.authority.state.value}")
            self._take_requested = self.authority.heard
        if not self._tick_now():
            with self._lock:
                unapplied, self._take_requested = self._take_requested is not None, None
            if unapplied or not self._tick_lock.acquire(timeout=self.door.hold_timeout_s):
                return self._not_taken("the safety thread did not answer in time; the pilot keeps the vehicle")
            self._tick_lock.release()  # a tick was applying it: its stop has been sent
        if self.authority.state in (State.PILOT, State.DISCONNECTED) or self._stop_confirmed is None:
            return self._not_taken("the vehicle did not confirm the hold (the link may be down); the pilot "
                                   "keeps the vehicle: take control again once the link is back")
        self.control_note = "the stack has control; holding until a new decision"
        return True

    def _not_taken(self, why: str) -> bool:
        self.control_note = f"not taken: {why}"
        return False

    def _request(self, name: str) -> None:
        with self._gate_lock, self._lock:
            setattr(self, name, self.authority.heard)
        self._tick_now()

    def _tick_now(self) -> bool:
        """An operator's request takes effect before the call returns (its stop is on the wire), so
        a decision sent after the call is one made after that stop, as the vehicle sees it too; a
        stalled safety thread leaves it to the next tick (False)."""
        if self._tick_lock.acquire(timeout=self.door.hold_timeout_s):
            try:
                self._locked_tick(self.clock())
            finally:
                self._tick_lock.release()
            return True
        self._wake.set()
        return False

    # -- what the outside reads (never blocks on the link) ----------------------------------------

    def status(self) -> BridgeStatus:
        """The last tick's status, overruled by a link seen lost since and by a stalled safety
        thread. A once-only note rides on every tick's status until this has returned it."""
        status = self._current_status()
        with self._lock:
            if self._fence_note is not None and self._fence_note in status.reason:
                self._fence_note = None
        return status

    def _current_status(self) -> BridgeStatus:
        with self._lock:
            status = self._status
            lost = self._lost_reason()
        confirmed = self._stop_confirmed is not None
        if lost is not None and status.code != LINK_ERROR:
            return BridgeStatus(not confirmed, LINK_ERROR, f"{lost}; " + ("holding" if confirmed else
                                "hold not confirmed: the vehicle may still be moving"), self.gate.estop.latched, False)
        stalled = self._safety_stalled()
        if stalled is not None and self._connected:
            return BridgeStatus(not confirmed, SAFETY_STALLED, stalled + ("; holding" if confirmed else
                                "; motion refused until it ticks again"), self.gate.estop.latched, True)
        return status

    def _safety_stalled(self) -> Optional[str]:
        age = time.monotonic() - self._last_tick
        if age > self._stall_limit_s:
            return f"the safety thread has not ticked for {age:.1f} s"
        return None

    @property
    def _stall_limit_s(self) -> float:
        return max(0.5, 10 * self.safety_period_s)

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
            return None if time.monotonic() - self._connected_at < self.link_timeout_s else "no state from the vehicle"
        age = time.monotonic() - snap.read_at
        if age > self.link_timeout_s + self.state_period_s:
            return f"no state from the vehicle for {age:.1f} s"
        if snap.state.link_lost:
            return "the link reports the vehicle lost"
        return None

    def _lost_reason_now(self) -> Optional[str]:
        with self._lock:
            return self._lost_reason()

    def _as_flown(self, command: Command) -> Command:
        """The goal as the link will fly it (the altitude it really flies is the one checked)."""
        if isinstance(command, Goal) and command.valid():
            flown = self.link.flown_altitude_m(command.alt_m)
            if flown != command.alt_m:
                return Goal(command.lat, command.lon, flown, command.heading_deg, command.speed_m_s)
        return command

    def _verdict(self, now: Optional[float] = None) -> Verdict:
        """The gate's verdict on the latest decision: the goal as decided must pass (a goal below the
        floor is refused even on a link that would fly it at its own height), then as it is flown."""
        with self._gate_lock:
            position = self._position()
            verdict = self.gate.filter(self.gate.latest, now, position=position)
            flown = self._as_flown(self.gate.latest)
            if not verdict.moving or flown == self.gate.latest:
                return verdict
            return self.gate.filter(flown, now, position=position)

    def tick(self, now: Optional[float] = None) -> BridgeStatus:
        """One safety step: the events of this moment fed to the authority machine in priority
        order, what it says done, and the status. Called by the safety thread; callable from
        another (serialised)."""
        with self._tick_lock:
            return self._locked_tick(self.clock() if now is None else now)

    def _locked_tick(self, now: float) -> BridgeStatus:
        status = self._tick(now)
        with self._lock:
            if self._fence_note is not None and status.code != LINK_ERROR:
                status = BridgeStatus(status.moving, status.code, f"{status.reason}; {self._fence_note}",
                                      status.estop, status.connected)
            self._status = status
        self._last_tick = time.monotonic()
        return status

    def _tick(self, now: float) -> BridgeStatus:
        authority = self.authority
        with self._gate_lock:
            verdict, seq = self._verdict(now), self._latest_seq
            trips = self._estop_trips
            estop = self.gate.estop.latched or trips != self._estop_trips_handled
        with self._lock:
            lost = self._lost_reason()
            missed, self._losses_handled = self._losses_read != self._losses_handled, self._losses_read
            if lost is None and missed:
                lost = "the link was lost while the safety thread was stalled (back now)"
            terminate, rtl, take, end = (self._terminate_requested, self._rtl_requested, self._take_requested,
                                         self._end_requested)
            self._rtl_requested = self._take_requested = self._end_requested = None
            if take is not None:
                self._pilot_reported = None
            pilot = self._pilot_reported
            started, self._start_result = self._start_result, None
        snap = self._snapshot
        if terminate:
            self._event(Event.TERMINATE)
        if lost is not None:
            self._event(Event.LINK_LOST)
            held = self._stop_confirmed is not None
            return BridgeStatus(not held, LINK_ERROR, f"{lost}; " + ("holding" if held else
                                "hold not confirmed: the vehicle may still be moving"), estop, self._connected)
        foreign = pilot or self._foreign(snap)
        if authority.state is State.DISCONNECTED:
            self._event(Event.FOREIGN_MODE if foreign else Event.ESTOP if estop else Event.CONNECT)
        if take is not None:
            self._trust_after = time.monotonic()
            if self.authority.state is State.PILOT:
                self.link.operator_takes_control()  # only now may the hold end the pilot's mode
            self._event(Event.TAKE_CONTROL, asked_at=take)
            foreign = None
        if foreign:
            self._event(Event.FOREIGN_MODE)
        if estop:
            self._event(Event.ESTOP)
            self._estop_trips_handled = trips  # only now may motion that follows a reset leave
        elif authority.state is State.ESTOPPED:
            with self._gate_lock:
                reset_at, self._reset_at = self._reset_at, None
            self._event(Event.ESTOP_RESET, asked_at=reset_at)
        battery = snap.state.battery_fraction if snap is not None else None
        if self.rtl_battery_fraction is not None and battery is not None and battery < self.rtl_battery_fraction:
            self._event(Event.LOW_BATTERY)
        if rtl is not None:
            step = self._event(Event.RTL, asked_at=rtl)
            with self._lock:
                self._rtl_step = step
        if end is not None:
            self._event(Event.SEEK_END, asked_at=end)
        with self._lock:
            stream_stopped, self._stream_stopped = self._stream_stopped, None
        if stream_stopped is not None and authority.state in MOVING_STATES:
            log.warning("%s: holding (a newer decision flies again)", stream_stopped)
            self._event(Event.HOLD)
        if started is not None and authority.state is State.STARTING and started[0] == self.door.epoch:
            self._event(Event.STARTED if started[1] else Event.START_FAILED)
            self._flying_seq = self._sent = None  # in the air: the newest goal is given to fly, as a decision
        self._decide(verdict, seq, snap)
        if authority.may_send(Send.KEEPALIVE) and authority.state is not State.HOLDING:
            self._keepalive()
        return self._state_status(verdict, estop, foreign, battery)

    def _foreign(self, snap: Optional[_Snapshot]) -> Optional[str]:
        """Evidence that someone else changed the vehicle's mode: the link says so, or (for links that
        do not say) a vehicle that left the control mode while the stack commanded it. Not for a link
        that says so itself: on MAVLink `in_control` also reads false while the control mode's heartbeat
        is late or the stream stopped on a starved keepalive, and the bridge took that for a pilot (the
        PX4 soak at load 30: `pilot` with no pilot, and no end hold)."""
        if snap is None or snap.read_at <= self._trust_after:
            return None
        if snap.state.foreign_mode is not None:
            return f"the vehicle is in {snap.state.foreign_mode}, a mode the stack did not ask for"
        since = self._control_since
        if self.capabilities.reports_foreign_mode:
            return None
        if self.capabilities.take_control and self.authority.state is State.COMMANDING and since is not None \
                and snap.read_at > since and not snap.state.in_control:
            return f"the vehicle left the stack's mode (now {snap.state.mode})"
        return None

    def _event(self, event: Event, seq: Optional[int] = None, asked_at: Optional[int] = None) -> Step:
        """Feed one event; on leaving a moving state every motion call is refused from now on; a stop
        the machine asks for is sent at once."""
        with self._gate_lock:
            step = self.authority.handle(event, seq, asked_at)
        if step.changed:
            log.info("authority: %s --%s--> %s", step.before.value, event.value, step.after.value)
            if State.PILOT in (step.before, step.after):
                self._keep_pilot(step.after is State.PILOT, f"a pilot took the vehicle ({event.value})")
            if step.before in MOVING_STATES and step.after not in MOVING_STATES:
                self._cancel_job()
                self._flying_seq, self._control_since = None, None
                self.door.open()  # a call decided before this moment is refused
            if step.after in (State.PILOT, State.DISCONNECTED):
                self._stop_confirmed = None
        if step.send is not None:
            self._send_stop(step.send)
        return step

    def _decide(self, verdict: Verdict, seq: int, snap: Optional[_Snapshot]) -> None:
        """The latest decision, as the gate lets it through now, in a state that may move."""
        authority = self.authority
        self._refused = None
        if authority.state not in (State.HOLDING, State.COMMANDING, State.STARTING, State.RETURNING,
                                   State.LANDING):
            return
        command, refusal = verdict.command, None
        if isinstance(command, Velocity) and not self.capabilities.velocity:
            refusal = (UNSUPPORTED, f"the {self.link.name} link takes no velocity commands")
        elif isinstance(command, Goal) and not self.capabilities.go_to:
            refusal = (UNSUPPORTED, f"the {self.link.name} link takes no goals")
        if not verdict.moving or refusal is not None:
            self._refused = refusal
            self._event(Event.HOLD)
            return
        if authority.state is State.COMMANDING and (seq == self._flying_seq or command == self._sent):
            if seq != self._flying_seq and self._event(Event.DECISION, seq).after is State.COMMANDING:
                self._flying_seq = seq  # the same command decided again (a goal repeated): not sent again
            elif command != self._sent:  # the same decision, clamped anew (a speed, a velocity near the floor)
                self._submit(command, "fly")
            return
        if authority.state is State.STARTING:
            if isinstance(command, Velocity):
                self._event(Event.HOLD)  # a velocity stops the climb; a newer goal is flown after it
            elif authority.is_fresh(seq):
                self._event(Event.DECISION, seq)
            return
        if not authority.is_fresh(seq) or self.gate.estop.latched:  # an e-stop that came during this tick
            return                                                    # is fed on the next one, first
        failed = self._start_failed
        if failed is not None and failed[0] == seq:  # a refused flying start is not retried for this decision
            return
        if isinstance(command, Goal) and self._needs_flying_start(snap):
            refused = self._takeoff_refusal()
            if refused is not None:
                self._start_failed = (seq, TAKEOFF_FAILED, refused)
                self._say(f"{TAKEOFF_FAILED}: {refused}")
                return
            if self._event(Event.START, seq).after is State.STARTING:
                self._flying_seq = seq
                self._submit(command, "start")
            return
        if isinstance(command, Velocity) and snap is not None and self.capabilities.arm and not snap.state.armed:
            self._refused = (UNSUPPORTED, "a velocity needs an armed vehicle in the air: send a goal first "
                                          "(its flying start arms and takes off)")
            return
        if self._event(Event.DECISION, seq).after is State.COMMANDING:
            self._flying_seq = seq
            self._submit(command, "fly")

    def _takeoff_refusal(self) -> Optional[str]:
        """Checked again right before a start: a link's height may have been changed since."""
        problem = takeoff_height_problem(getattr(self.link, "takeoff_alt_m", None), self.gate.limits)
        return None if problem is None else f"{problem}; not flying this goal"

    def _state_status(self, verdict: Verdict, estop: bool, foreign: Optional[str],
                      battery: Optional[float]) -> BridgeStatus:
        state = self.authority.state
        held = self._stop_confirmed is not None
        if state is State.TERMINATED:
            return BridgeStatus(False, TERMINATED, "motors cut on a confirmed request", estop, True)
        if state is State.PILOT:
            why = foreign or self._pilot_reported or "a pilot took over"
            return BridgeStatus(False, PILOT_OVERRIDE, f"{why}: the stack sends nothing until take_control()",
                                estop, True)
        if state is State.ESTOPPED:
            check = self.gate.estop.check()
            action = "" if self.estop_action == "hold" else "; landing"
            return BridgeStatus(False, SafetyCode.ESTOP.value, f"{check.reason}{action}", estop, True)
        if state is State.LOW_BATTERY:
            level = f"battery {battery:.0%}" if battery is not None else "battery low"
            return BridgeStatus(False, LOW_BATTERY, f"{level} below {self.rtl_battery_fraction:.0%}: "
                                f"returning to launch", estop, True)
        if state is State.RETURNING:
            return BridgeStatus(False, RETURNING, "return to launch requested; returning to launch", estop, True)
        if state is State.LANDING:
            return BridgeStatus(False, "landing", "the run ended; landing", estop, True)
        failed = self._start_failed
        if failed is not None and failed[0] == self._latest_seq and state is State.HOLDING:
            return BridgeStatus(False, failed[1], failed[2], estop, True)
        if self._refused is not None:
            return BridgeStatus(False, self._refused[0], self._refused[1], estop, True)
        if state is State.HOLDING:
            if verdict.moving and not self.authority.is_fresh(self._latest_seq):
                return BridgeStatus(False, SafetyCode.HOLD_REQUESTED.value,
                                    "holding: waiting for a decision made after the hold", estop, True)
            reason = verdict.reason if held else f"{verdict.reason}; hold not confirmed"
            return BridgeStatus(not held, verdict.code.value, reason, estop, True)
        if state is State.STARTING:
            return BridgeStatus(True, verdict.code.value, "flying start: arming and taking off", estop, True)
        return BridgeStatus(True, verdict.code.value, verdict.reason, estop, True)

    def _capable(self, send: Send) -> Send:
        if send is Send.LAND and not self.capabilities.land:
            return Send.HOLD
        if send is Send.RTL and not self.capabilities.rtl:
            return Send.HOLD
        return send

    def _cancel_job(self) -> None:
        with self._job_cv:
            self._job = None
        self._sent = None

    def _send_stop(self, send: Send) -> None:
        """Send a stop through the door (every motion call decided before it is refused), asking the
        authority right before each message; report it only once the link returned."""
        send = self._capable(send)
        calls = {Send.HOLD: self.link.hold, Send.LAND: self.link.land, Send.RTL: self.link.return_to_launch,
                 Send.TERMINATE: self.link.terminate}
        self._cancel_job()
        self._stop_confirmed = None

        def stop() -> None:
            if not self.authority.may_send(send):
                raise _NotAllowed(send.value)
            calls[send]()

        try:
            self.door.hold(stop)
        except _NotAllowed:
            return
        except PilotOverride as exc:
            self._pilot_says(exc)
            return
        except LinkError as exc:
            self._link_failed(f"{send.value} failed: {exc}")
            return
        with self._gate_lock:
            self.authority.stopped()
        self._stop_confirmed = send
        self.holds += 1
        self.stops.append(send.value)

    def _link_may_move(self) -> bool:
        """The owner's gate a link asks right before each message that moves the vehicle, on its own
        threads too (MAVLink's setpoint stream, which the door does not govern). A stop decided (an
        e-stop trip, a Seek's end, an RTL, a close) refuses at once, before its hold is scheduled: under
        load the hold's thread may wait a third of a second for a core (found by the PX4 soak). Plain
        reads, no lock: the link asks under its own lock."""
        return self.authority.state in MOVING_STATES and not self._stop_decided() and self._pilot_reported is None

    def _stop_decided(self) -> bool:
        """A stop decided that the safety thread may not have applied yet: an e-stop (latched, or a trip
        not yet handled), a link loss read and not yet handled, a Seek's end, an RTL, a close. Plain
        reads: a link may ask under its own lock."""
        return (self._closing or self.gate.estop.latched or self._estop_trips != self._estop_trips_handled
                or self._losses_read != self._losses_handled
                or self._end_requested is not None or self._rtl_requested is not None)

    def _foreign_after_end(self) -> Optional[str]:
        """The mode a pilot switched to, as the link saw it up to the end's hold (links with modes)."""
        if not self.capabilities.take_control:
            return None
        try:
            return self.link.state().foreign_mode
        except LinkError:
            return None

    def _keep_pilot(self, taken: bool, why: str) -> None:
        """Save (or, on an operator's take-control, remove) the pilot's takeover; a disk that refuses
        leaves it in memory and says a restart would forget it."""
        if self._pilot_file is None:
            return
        try:
            self._pilot_file.save(why) if taken else self._pilot_file.clear()
        except OSError as exc:
            log.error("%s could not be %s (%s): a restart would %s", self._pilot_file.path,
                      "written" if taken else "removed", exc, "forget the pilot's takeover" if taken else
                      "still take the vehicle for the pilot's")

    def _pilot_says(self, exc: PilotOverride) -> None:
        """A link call found a pilot in charge: the next tick hands the vehicle over (FOREIGN_MODE)."""
        with self._lock:
            self._pilot_reported = str(exc)
        self._wake.set()

    def _submit(self, command: Command, kind: str) -> None:
        epoch = self.door.open()
        with self._job_cv:
            self._job = (command, epoch, kind)
            self._job_cv.notify_all()
        self._sent, self._stop_confirmed = command, None

    def _keepalive(self) -> None:
        try:
            self.link.keepalive()
        except StreamStopped as exc:
            self._hold_due(f"keepalive: {exc}")
        except LinkError as exc:
            self._link_failed(f"keepalive failed: {exc}")

    def _hold_due(self, why: str) -> None:
        """The link's stream stopped because this bridge's loop was late: the next tick holds (the
        link is fine; a reconnect would leave the vehicle to the autopilot's failsafe meanwhile)."""
        with self._lock:
            self._stream_stopped = why
        self._wake.set()

    def _link_failed(self, error: str) -> None:
        with self._lock:
            self._link_error = error
        self._wake.set()

    # -- the motion thread ------------------------------------------------------------------------

    def _allowed(self, send: Send, matches: Callable[[Command], bool]) -> Callable[[], bool]:
        """Asked by the door right before the call: the authority lets this kind of message out, the
        safety thread is alive, the link is not lost and the gate, now, lets a command that `matches`."""
        def allowed() -> bool:
            if not self.authority.may_send(send) or self._safety_stalled() is not None:
                return False
            if self._stop_decided():
                return False
            with self._lock:
                if self._pilot_reported is not None or self._lost_reason() is not None:
                    return False
            return matches(self._verdict().command)
        return allowed

    def _motion_loop(self) -> None:
        while not self._stop.is_set():
            with self._job_cv:
                while self._job is None and not self._stop.is_set():
                    self._job_cv.wait(0.5)
                if self._stop.is_set():
                    return
                job = self._job
                command, epoch, kind = job
                if isinstance(command, Goal):
                    self._job = None  # a goal runs once; a velocity repeats until replaced
            try:
                if kind == "start":
                    self._run_start(command, epoch)
                else:
                    self._fly(command, epoch, lambda now, c=command: now == c)
            except MotionDropped:
                pass
            except PilotOverride as exc:
                self._pilot_says(exc)
            except StreamStopped as exc:
                self._hold_due(f"{type(command).__name__.lower()} failed: {exc}")
            except LinkError as exc:
                if self.door.current(epoch):  # else a stop superseded the call and the link refused the rest
                    self._link_failed(f"{type(command).__name__.lower()} failed: {exc}")
            except Exception as exc:  # noqa: BLE001 - any failure is reported, never kills the thread
                self._link_failed(f"{type(command).__name__.lower()} failed: {exc!r}")
            if isinstance(command, Velocity):
                self._until_replaced(job, self.velocity_period_s if not self.capabilities_velocity_blocks else 0.0)

    def _until_replaced(self, job: tuple, timeout_s: float) -> None:
        """Wait until a velocity is due again, or sooner when a newer job replaces it: a velocity
        clamped near the floor or ceiling must reach the vehicle at once, not after the repeat period
        (the link streams the last setpoint meanwhile: a 1 m/s descent passed the floor so)."""
        deadline = time.monotonic() + timeout_s
        with self._job_cv:
            while self._job is job and not self._stop.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._job_cv.wait(remaining)

    @property
    def capabilities_velocity_blocks(self) -> bool:
        """A link whose velocity call lasts one slice (AirSim) is re-sent at once."""
        return bool(getattr(self.link, "velocity_blocks", False))

    def _fly(self, command: Command, epoch: int, matches: Callable[[Command], bool]) -> None:
        snap = self._snapshot
        started, self._just_started = self._just_started, False
        if self.capabilities.take_control and (self._control_since is None or snap is None
                                               or not snap.state.in_control):
            if started:
                self._say("taking control (the autopilot's control mode, with the setpoint stream)")
            self.door.send(epoch, self._allowed(Send.TAKE_CONTROL, matches), lambda: self.link.take_control())
            if self.door.current(epoch):
                self._control_since = time.monotonic()
            if started:
                self._say(f"in control ({self._mode()}): flying the goal")
        if isinstance(command, Goal):
            self.door.send(epoch, self._allowed(Send.GO_TO, matches), lambda: self.link.go_to(
                command.lat, command.lon, command.alt_m, command.heading_deg, command.speed_m_s))
        else:
            self.door.send(epoch, self._allowed(Send.VELOCITY, matches), lambda: self.link.velocity(
                command.east_m_s, command.north_m_s, command.up_m_s, command.yaw_rate_deg_s))

    def _run_start(self, command: Command, epoch: int) -> None:
        """The flying start, then back to the safety thread (STARTED or START_FAILED): it gives the
        newest goal to fly, which any goal decided during the climb may have replaced."""
        flew = False
        try:
            flew = self._flying_start(command, epoch)
            if flew:
                self._airborne = self._just_started = True
        finally:
            with self._lock:
                self._start_result = (epoch, flew)
            self._wake.set()

    def _needs_flying_start(self, snap: Optional[_Snapshot]) -> bool:
        """A link that arms and takes off, disarmed or on the ground (as it says now, not as the last
        telemetry tick saw it): it takes off before a goal. A vehicle that flew since it was armed
        is in the air, even below home's height (the floor may be below it)."""
        if snap is None or not (self.capabilities.arm and self.capabilities.takeoff):
            return False
        try:
            state = self.link.state()
        except LinkError:
            state = snap.state
        if not state.armed:
            return True
        return not self._airborne and state.alt_m is not None and state.alt_m < ON_GROUND_M

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

    def _flying_start(self, command: Command, epoch: int) -> bool:
        """Arm (if disarmed) and take off to the link's configured height, each through the door. A
        refusal (the autopilot's words) is kept for this decision; nothing else is sent."""
        started = time.monotonic()
        goal = lambda now: isinstance(now, Goal)  # noqa: E731 - any goal keeps the start going
        state = self._snapshot.state if self._snapshot is not None else None
        if state is None or not state.armed:
            self._say("arming")
            try:
                self.door.send(epoch, self._allowed(Send.ARM, goal), lambda: self.link.arm())
            except (PilotOverride, MotionDropped):
                raise
            except LinkError as exc:
                if not self.door.current(epoch):  # a stop came while arming: it speaks for itself
                    raise MotionDropped(str(exc)) from None
                return self._start_refused(ARMING_DENIED, f"{exc}; not flying this goal")
            self._say(f"armed in {time.monotonic() - started:.1f} s")
        height = getattr(self.link, "takeoff_alt_m", None)
        self._say("taking off" + (f" to {height:g} m" if height is not None else ""))
        climb = time.monotonic()
        try:
            self.door.send(epoch, self._allowed(Send.TAKEOFF, goal),
                           lambda: self.link.takeoff(None, self.takeoff_timeout_s))
        except PilotOverride:
            raise
        except LinkError as exc:
            if not self.door.current(epoch):  # a stop came during the climb: it speaks for itself
                raise MotionDropped(str(exc)) from None
            return self._start_refused(TAKEOFF_FAILED, f"{exc}; not flying this goal")
        self._say(f"took off in {time.monotonic() - climb:.1f} s ({time.monotonic() - started:.1f} s since the goal)")
        return True

    def _start_refused(self, code: str, reason: str) -> bool:
        self._start_failed = (self._flying_seq or 0, code, reason)
        self._say(f"{code}: {reason}")
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
            if state.link_lost:  # counted before the snapshot shows it: a tick that sees the loss handles the count
                with self._lock:
                    self._losses_read += 1
            self._snapshot = _Snapshot(state, started)
            if not state.armed:
                self._airborne = False
            elif state.alt_m is not None and state.alt_m >= ON_GROUND_M:
                self._airborne = True
            if state.link_lost or state.foreign_mode is not None:
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
                if self._stop.is_set():  # closed while connecting: leave nothing open behind close()
                    self.link.close()
                    return
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
            self._connect_attempts += 1
            self.connect_tried.set()
            self._wake.set()


class _NotAllowed(Exception):
    """The authority no longer lets this stop out (a pilot took the vehicle in the meantime)."""


def pilot_file_beside(estop_file: Optional[LatchFile]) -> Optional[LatchFile]:
    """Where a bridge keeps a pilot's takeover: beside its e-stop latch (`x.json` -> `x.pilot.json`);
    None when the e-stop keeps no file."""
    if estop_file is None:
        return None
    path = estop_file.path
    return LatchFile(path.with_name(f"{path.stem}.pilot{path.suffix or '.json'}"), what="pilot takeover",
                     until="an operator's take-control")


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
