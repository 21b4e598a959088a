"""A PX4 or ArduPilot vehicle over MAVLink 2 (pymavlink): the `VehicleLink` contract in autopilot terms.

- The stack flies in the flavour's control mode (PX4 OFFBOARD, ArduPilot GUIDED), entered only by an
  explicit `take_control()`. When the vehicle goes to a mode the stack did not ask for (a pilot's RC
  mode switch, the autopilot's own failsafe), the link refuses every further motion, `take_control()`
  included, with `PilotOverride` and never switches back on its own; only a stop (hold, land, return)
  after `operator_takes_control()` (the bridge's, on an operator's take-control) ends that.
- Setpoints are streamed by a `SetpointStreamer` that runs only while the owner's `keepalive()` (or a
  new command) is fresher than `keepalive_s`; a stalled owner is told so (StreamStopped) and holds.
- hold / land / return are the autopilot's own modes (PX4 AUTO.LOITER / AUTO.LAND / AUTO.RTL,
  ArduPilot BRAKE / LAND / RTL); they give control back to the autopilot.
- `VehicleState.foreign_mode`, in every state, not only while commanding: the link remembers the
  mode it last asked for (take_control: the control mode; hold, land, return: their modes; takeoff:
  PX4's AUTO.TAKEOFF, ArduPilot's GUIDED; arming asks for none). An armed vehicle reporting any other
  mode is in a foreign mode, except the autopilot's own next step (`Flavour.successors`: PX4
  AUTO.TAKEOFF -> AUTO.LOITER, AUTO.RTL -> AUTO.LAND; ArduPilot RTL -> LAND) and, while a request is
  pending (its mode not yet shown, and less than `settle_s` since it: every try of the command plus
  one 1 Hz heartbeat period), the mode the vehicle was in when it was asked and the modes asked just
  before it that the vehicle has not yet been seen to leave behind: once a heartbeat showed a
  request's mode, nothing asked before that request may show again (UDP keeps the autopilot's
  order), so a failsafe into an earlier mode is foreign. Before the stack asked
  for any mode, an armed vehicle in anything but the hold mode or the control mode is foreign (a
  pilot flies it); the control mode is a restarted stack's own, left with no setpoints, which the
  bridge's first hold ends; arming it from the ground counts as asking for the mode it arms in.
  It is sticky: only `take_control()`
  or a hold, land or return clears it, and meanwhile go_to, velocity, takeoff and arm raise
  `PilotOverride` and `_send_motion` sends nothing, so a late call from an old job never switches the
  vehicle back. What was asked survives a link loss and a reconnect of the same link, so a pilot's
  switch made while the link was down shows when it returns.
- `go_to` with a speed flies a carrot: position targets along the straight line from where the
  vehicle was at the call, advancing at that speed (in three dimensions, so a climb is no faster
  either), each with the carrot's velocity as a feed-forward where the flavour takes one, resent at
  the stream's rate and ending at the goal. MAV_CMD_DO_CHANGE_SPEED still goes out first, but the
  speed no longer depends on the autopilot honouring it.
- `link_lost` is true when nothing at all came from the vehicle for `link_loss_s` (0.6 s, so the
  bridge reports a loss within 1 s; telemetry streams at several messages a second). Both
  autopilots send HEARTBEAT at only 1 Hz, so a one-second heartbeat limit would flap on a healthy
  link (and on any lost datagram), while the telemetry the link asks for comes at 10 Hz; the state
  still reports `heartbeat_age_s` for whoever wants a stricter rule.

Every motion-related message (setpoints, arming, takeoff, mode changes, speed changes) leaves through
`_send_motion`, the one place a caller's gate can be checked against: a setpoint leaves only while the
link holds control (a hold releases it before its mode change goes out, so the stream stops there),
and a call run for a bridge's motion door sends nothing once a hold superseded it
(`motion_door.motion_allowed`).
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Optional, Union

from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.link import (
    Capabilities,
    ConnectReport,
    Fence,
    Heard,
    LinkError,
    PilotOverride,
    StreamStopped,
    VehicleLink,
    VehicleState,
)
from cityseeker_ros.core.vehicles.mavlink import fence as fence_protocol
from cityseeker_ros.core.vehicles.mavlink.command import run_command
from cityseeker_ros.core.vehicles.mavlink.connection import MavlinkConnection, Message
from cityseeker_ros.core.vehicles.mavlink.flavours import (
    FLAVOURS,
    Flavour,
    autopilot_name,
    flavour_named,
    heading_from_yaw,
)
from cityseeker_ros.core.vehicles.mavlink.streamer import SetpointStreamer
from cityseeker_ros.core.vehicles.mavlink.transport import parse_endpoint
from cityseeker_ros.core.vehicles.motion_door import MotionDropped, motion_allowed

# POSITION_TARGET_TYPEMASK bits
_IGNORE_POSITION = 1 | 2 | 4
_IGNORE_VELOCITY = 8 | 16 | 32
_IGNORE_ACCEL = 64 | 128 | 256
_IGNORE_YAW, _IGNORE_YAW_RATE = 1024, 2048
# Telemetry the link asks for (MAV_CMD_SET_MESSAGE_INTERVAL): ArduPilot sends little unless asked.
STREAMS_HZ = {"GLOBAL_POSITION_INT": 10.0, "ATTITUDE": 10.0, "SYS_STATUS": 1.0}
RELEASED, HELD, OVERRIDDEN = "released", "held", "overridden"
_SETPOINTS = frozenset({"SET_POSITION_TARGET_GLOBAL_INT", "SET_POSITION_TARGET_LOCAL_NED"})  # sent only while HELD
HEARTBEAT_PERIOD_S = 1.0  # both autopilots' HEARTBEAT rate: a mode change may show this late
M_PER_DEG = 6378137.0 * math.pi / 180.0


@dataclass(frozen=True)
class PositionSetpoint:
    lat: float
    lon: float
    alt_m: float  # above home
    heading_deg: Optional[float] = None


@dataclass(frozen=True)
class VelocitySetpoint:
    east_m_s: float
    north_m_s: float
    up_m_s: float
    yaw_rate_deg_s: float  # ENU: positive counter-clockwise


@dataclass(frozen=True)
class PathSetpoint:
    """A carrot: a point that leaves `start` at `started` (monotonic) and moves at `speed_m_s` along the
    straight line to `goal` (horizontal and vertical together), stopping there."""

    start: tuple[float, float, float]  # lat, lon, alt above home
    goal: PositionSetpoint
    speed_m_s: float
    started: float

    def at(self, now: float) -> tuple[PositionSetpoint, tuple[float, float, float]]:
        """Where the carrot is at `now`, and its velocity (m/s east, north, up; zero once there)."""
        lat0, lon0, alt0 = self.start
        east = (self.goal.lon - lon0) * M_PER_DEG * math.cos(math.radians(lat0))
        north, up = (self.goal.lat - lat0) * M_PER_DEG, self.goal.alt_m - alt0
        length = math.sqrt(east * east + north * north + up * up)
        travelled = self.speed_m_s * max(now - self.started, 0.0)
        if travelled >= length or length < 1e-6:
            return self.goal, (0.0, 0.0, 0.0)
        f = travelled / length
        point = PositionSetpoint(lat0 + f * (self.goal.lat - lat0), lon0 + f * (self.goal.lon - lon0),
                                 alt0 + f * up, self.goal.heading_deg)
        k = self.speed_m_s / length
        return point, (east * k, north * k, up * k)


@dataclass
class _ModeRequest:
    """The mode the stack last asked for, and what was there when it asked."""

    mode: str
    before: str  # the mode the vehicle showed when asked
    at: float  # monotonic
    shown: bool = False  # a heartbeat has shown `mode` since
    # the request's first message has left: a heartbeat showing `mode` before that is not the stack's
    # doing (the autopilot's failsafe into the very mode the stack was about to ask for: the PX4 soak)
    sent: bool = False
    acked: bool = False  # the autopilot accepted it: a heartbeat from now on shows it or a later change
    # modes asked for just before this one (within settle_s of each other): while this one is pending, a
    # heartbeat may still show one of them (an RTL asked, then OFFBOARD 0.3 s later: AUTO.RTL shows between)
    recent: frozenset = frozenset()
    failed: bool = False  # its call failed: the vehicle never took it
    # the request before it, while this one is unconfirmed: what counts again if this one fails
    previous: Optional[_ModeRequest] = None


Setpoint = Union[PositionSetpoint, VelocitySetpoint, PathSetpoint]


class MavlinkLink(VehicleLink):
    name = "mavlink"

    def __init__(self, endpoint: str = "udp://:14540", system_id: Optional[int] = None,
                 component_id: Optional[int] = None, flavour: str = "auto", source_system: int = 255,
                 source_component: int = mavlink.MAV_COMP_ID_MISSIONPLANNER, takeoff_alt_m: float = 10.0,
                 setpoint_hz: float = 10.0, keepalive_s: float = 0.5, prestream_s: float = 0.5,
                 link_loss_s: float = 0.6, command_timeout_s: float = 0.5, command_retries: int = 5) -> None:
        self.endpoint = parse_endpoint(endpoint)
        if flavour != "auto":
            flavour_named(flavour)
        self._flavour_name = flavour
        self.system_id, self.component_id = system_id, component_id
        self.source_system, self.source_component = source_system, source_component
        self.takeoff_alt_m = float(takeoff_alt_m)
        self.setpoint_hz, self.keepalive_s, self.prestream_s = setpoint_hz, keepalive_s, prestream_s
        self.link_loss_s = link_loss_s
        self.command_timeout_s, self.command_retries = command_timeout_s, command_retries
        self._conn: Optional[MavlinkConnection] = None
        self._flavour: Optional[Flavour] = None
        self._started = time.monotonic()
        # Control state, guarded by _motion_lock together with every motion send.
        self._motion_lock = threading.RLock()
        self._control = RELEASED
        self._confirmed = False  # a heartbeat has shown the control mode since take_control()
        self._override_reason: Optional[str] = None
        # foreign_mode's bookkeeping, under _motion_lock (module docstring); kept across reconnects
        self.settle_s = command_timeout_s * (command_retries + 1) + HEARTBEAT_PERIOD_S
        self._asked: Optional[_ModeRequest] = None
        self._operator_release = False  # an operator gave control back: the next stop may end a foreign mode
        self._foreign: Optional[str] = None  # the mode the vehicle is in, while it is foreign (sticky)
        self._streamer: Optional[SetpointStreamer[Setpoint]] = None
        self.motion_sent = 0
        self.report: Optional[ConnectReport] = None
        # Given to every connection this link opens, reconnects included (MavlinkConnection.on_wire): set it
        # before connect() to observe both directions of the wire (the flight monitor does).
        self.on_wire: Optional[Callable[[str, Message, float], None]] = None

    # -- connection ------------------------------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(arm=True, takeoff=True, go_to=True, velocity=True, hold=True, land=True, rtl=True,
                            fence=True, take_control=True, reports_foreign_mode=True)

    @property
    def flavour(self) -> Flavour:
        if self._flavour is None:
            raise LinkError("not connected: call connect() first")
        return self._flavour

    def connect(self, timeout_s: float = 3.0) -> ConnectReport:
        if self._conn is not None:
            raise LinkError(f"already connected to {self.endpoint.describe()}")
        started = time.monotonic()
        conn = MavlinkConnection(self.endpoint, self.source_system, self.source_component)
        conn.on_wire = self.on_wire
        conn.open(timeout_s)
        try:
            found = conn.wait_for_autopilot(max(timeout_s - (time.monotonic() - started), 0.0), self.system_id,
                                            self.component_id)
            if found is None:
                raise LinkError(self._nothing_heard(conn.heard(), timeout_s))
            system, component, autopilot = found
            name = autopilot_name(autopilot) if self._flavour_name == "auto" else self._flavour_name
            if name not in FLAVOURS:
                raise LinkError(f"system {system} on {self.endpoint.describe()} runs {name}, neither PX4 nor "
                                "ArduPilot; pass flavour='px4' or 'ardupilot' to speak one of them anyway")
            conn.choose(system, component)
        except BaseException:
            conn.close()
            raise
        self._flavour = flavour_named(name)
        with self._motion_lock:  # a new connection starts without control, as the vehicle sees it
            self._control, self._confirmed, self._override_reason = RELEASED, False, None

        def attach() -> None:
            """Under the connection's lock, so no heartbeat comes between the two: the heartbeats heard
            while connecting were never judged, and the next comes up to a second later. A pilot flying
            the vehicle now is foreign before connect() returns (the bridge's first read decides
            whether it may hold the vehicle)."""
            conn.on_message = self._on_message
            self._on_message(conn.latest["HEARTBEAT"])

        conn.snapshot_with(attach)
        self._conn = conn
        for message, hz in STREAMS_HZ.items():  # fire and forget: telemetry shows whether it worked
            conn.send(mavlink.MAVLink_command_long_message(
                system, component, mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, 0,
                float(getattr(mavlink, f"MAVLINK_MSG_ID_{message}")), 1e6 / hz, 0, 0, 0, 0, 0))
        heard = conn.heard()
        chosen = next(h for h in heard if (h.system_id, h.component_id) == (system, component))
        self.report = ConnectReport(self.endpoint.describe(), name, system, component, chosen.vehicle_type,
                                    conn.target_heartbeats, heard, conn.protocol, time.monotonic() - started)
        return self.report

    def _nothing_heard(self, heard: tuple[Heard, ...], timeout_s: float) -> str:
        where = self.endpoint.describe()
        wanted = "an autopilot" if self.system_id is None else f"system {self.system_id}"
        if self.component_id is not None:
            wanted += f" component {self.component_id}"
        if heard:
            return (f"no heartbeat from {wanted} on {where} within {timeout_s:g} s; heard "
                    + ", ".join(str(h) for h in heard) + "; set system_id / component_id to one of these")
        hint = {"udpin": "is the vehicle sending to this port (PX4 SITL sends to 14540)?",
                "udpout": "is the vehicle or router listening there?",
                "tcp": "is this the vehicle's MAVLink port (ArduPilot SITL: 5760)?",
                "serial": "are the device and baud rate right?"}[self.endpoint.scheme]
        return f"no MAVLink heartbeat on {where} within {timeout_s:g} s; {hint}"

    def _require_conn(self) -> MavlinkConnection:
        if self._conn is None:
            raise LinkError("not connected: call connect() first")
        return self._conn

    def close(self) -> None:
        """Stops the setpoint stream first: a PX4 in OFFBOARD then runs its offboard-loss failsafe."""
        streamer = self._streamer
        if streamer is not None:
            streamer.stop("the link was closed")
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- telemetry -------------------------------------------------------------------------------------
    def state(self) -> VehicleState:
        conn = self._require_conn()
        latest, heartbeat_t, message_t, (held, foreign) = conn.snapshot_with(self._control_probe)
        now = time.monotonic()
        heartbeat, position = latest.get("HEARTBEAT"), latest.get("GLOBAL_POSITION_INT")
        attitude, status = latest.get("ATTITUDE"), latest.get("SYS_STATUS")
        mode = self.flavour.mode_name(heartbeat.custom_mode) if heartbeat is not None else "unknown"
        lat = lon = alt = heading = roll = pitch = yaw = clock = battery = None
        velocity = (0.0, 0.0, 0.0)
        if position is not None:
            lat, lon, alt = position.lat / 1e7, position.lon / 1e7, position.relative_alt / 1000.0
            velocity = (position.vy / 100.0, position.vx / 100.0, -position.vz / 100.0)
            clock = position.time_boot_ms / 1000.0
            if position.hdg != 65535:
                heading = position.hdg / 100.0
        if attitude is not None:
            roll, pitch = math.degrees(attitude.roll), math.degrees(attitude.pitch)
            heading = heading_from_yaw(attitude.yaw)
        if heading is not None:
            yaw = (90.0 - heading + 180.0) % 360.0 - 180.0
        if status is not None and status.battery_remaining >= 0:
            battery = status.battery_remaining / 100.0
        in_control = held and mode == self.flavour.control_mode
        return VehicleState(
            lat=lat, lon=lon, alt_m=alt, heading_deg=heading, roll_deg=roll, pitch_deg=pitch, yaw_deg=yaw,
            velocity_enu=velocity,
            armed=bool(heartbeat is not None and heartbeat.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED),
            mode=mode, in_control=in_control, battery_fraction=battery, autopilot_time_s=clock,
            heartbeat_age_s=now - heartbeat_t if heartbeat_t is not None else math.inf,
            link_lost=self._lost(now, heartbeat_t, message_t), foreign_mode=foreign)

    def _control_probe(self) -> tuple[bool, Optional[str]]:
        with self._motion_lock:
            return self._control == HELD, self._foreign

    @property
    def link_lost(self) -> bool:
        if self._conn is None:
            return True
        _, heartbeat_t, message_t = self._conn.snapshot()
        return self._lost(time.monotonic(), heartbeat_t, message_t)

    def _lost(self, now: float, heartbeat_t: Optional[float], message_t: Optional[float]) -> bool:
        return heartbeat_t is None or message_t is None or now - message_t > self.link_loss_s

    @property
    def streaming(self) -> bool:
        """The setpoint stream is running (False before take_control() and after it stopped)."""
        streamer = self._streamer
        return streamer is not None and streamer.alive

    @property
    def override_reason(self) -> Optional[str]:
        return self._override_reason

    @property
    def foreign_mode(self) -> Optional[str]:
        with self._motion_lock:
            return self._foreign

    def _on_message(self, msg: Message) -> None:
        """On the reader thread, under the connection's lock: judge each heartbeat's mode (foreign or
        not), and notice the autopilot leaving the control mode by itself. Never blocks (nothing here
        waits for the connection's lock)."""
        if msg.get_type() != "HEARTBEAT" or self._flavour is None:
            return
        mode = self._flavour.mode_name(msg.custom_mode)
        armed = bool(msg.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
        streamer = None
        with self._motion_lock:
            became_foreign = self._judge_mode(mode, armed, time.monotonic())
            if self._control != HELD:
                return
            if mode == self._flavour.control_mode:
                self._confirmed = True
                return
            if not self._confirmed and not became_foreign:
                return  # a heartbeat sent before our mode change took effect
            self._control = OVERRIDDEN
            self._override_reason = (f"the autopilot left {self._flavour.control_mode} for {mode} by itself "
                                     "(pilot RC mode switch or failsafe); motion refused until an operator's "
                                     "take-control")
            streamer = self._streamer
        if streamer is not None:
            streamer.stop(self._override_reason, wait=False)  # _send_motion already refuses its next send

    def _judge_mode(self, mode: str, armed: bool, now: float) -> bool:
        """Under _motion_lock: update foreign_mode for a heartbeat showing `mode`; True when it has just
        become foreign (the rules are in the module docstring)."""
        flavour, asked = self.flavour, self._asked
        if asked is not None and asked.sent and mode == asked.mode:
            asked.shown, asked.previous = True, None
        if self._foreign is not None:
            self._foreign = mode  # sticky: it names the mode the vehicle is in now
            return False
        if not armed:
            return False
        if asked is None:  # the stack's control mode is its own (an earlier bridge's, a restart): held next
            foreign = mode not in (flavour.hold_mode, flavour.control_mode)
        else:
            allowed = {asked.mode, *flavour.successors.get(asked.mode, ())} if asked.sent else set()
            if not asked.shown and not asked.acked and now - asked.at <= self.settle_s:
                allowed.add(asked.before)  # its heartbeat may not show it yet (UDP keeps the autopilot's order)
                for earlier in asked.recent:
                    allowed |= {earlier, *flavour.successors.get(earlier, ())}
            foreign = mode not in allowed
        if foreign:
            self._foreign = mode
        return foreign

    def operator_takes_control(self) -> None:
        with self._motion_lock:
            self._operator_release = True

    def _ask_for(self, mode: str, clears: bool = False) -> Optional[_ModeRequest]:
        """Note `mode` as asked for before the request leaves (so its own heartbeat is never foreign);
        `clears` (hold, land, return) ends a foreign mode after `operator_takes_control()`, anything else
        (take_control included) is refused in one. Returns what was asked before, for `_unask`
        when the request fails."""
        shown = self._shown_mode()  # the connection's lock, never taken while holding _motion_lock
        with self._motion_lock:
            return self._note_request(mode, shown, clears)

    def _note_request(self, mode: str, shown: str, clears: bool) -> Optional[_ModeRequest]:
        """`_ask_for` for a caller that holds _motion_lock (and read `shown` before taking it)."""
        if self._foreign is not None and not (clears and self._operator_release):
            raise PilotOverride(self._refusal())
        now, old = time.monotonic(), self._asked
        recent: frozenset = frozenset()
        if old is not None and now - old.at <= self.settle_s:
            # UDP keeps the autopilot's order: once the vehicle showed `old`, what was asked before it
            # cannot show again (a failsafe into an earlier mode is foreign: the PX4 soak on 44a1858)
            recent = (frozenset() if old.shown else old.recent) | {old.mode}
        self._asked = _ModeRequest(mode, shown, now, recent=recent, previous=old)
        if clears:
            self._foreign, self._operator_release = None, False
        return old

    def _unask(self, old: Optional[_ModeRequest], mine: Optional[_ModeRequest] = None) -> None:
        """A request failed: the vehicle stays where it was, so the latest earlier request that did not
        fail is what counts (a take-control cut off by a link loss, then the loss's hold failing too:
        restoring the failed take-control made the hold mode the vehicle never left look foreign)."""
        with self._motion_lock:
            if mine is not None:
                mine.failed = True
            if mine is None or self._asked is mine:
                while old is not None and old.failed:
                    old = old.previous
                self._asked = old

    def _shown_mode(self) -> str:
        heartbeat = self._require_conn().snapshot()[0].get("HEARTBEAT")
        return self.flavour.mode_name(heartbeat.custom_mode) if heartbeat is not None else "unknown"

    def _refusal(self) -> str:
        """Under _motion_lock: why no motion may leave now (override or foreign mode)."""
        if self._control == OVERRIDDEN and self._override_reason:
            return self._override_reason
        return (f"the vehicle is in {self._foreign}, a mode the stack did not ask for (a pilot's switch or the "
                "autopilot's own failsafe); motion refused until an operator's take-control")

    # -- the one gated send ----------------------------------------------------------------------------
    def _send_motion(self, msg: Message) -> None:
        """Every motion-related message leaves here: setpoints, arming, takeoff, mode and speed changes."""
        with self._motion_lock:
            if self._control == OVERRIDDEN or self._foreign is not None:
                raise PilotOverride(self._refusal())
            if msg.get_type() in _SETPOINTS and self._control != HELD:
                raise LinkError("setpoint not sent: the link released control (a hold, land or return)")
            self._check_current()
            self._require_conn().send(msg)
            self.motion_sent += 1
            if self._asked is not None:
                self._asked.sent = True  # under the lock the reader judges heartbeats with

    def _owner_waiting(self) -> AbstractContextManager[None]:
        """While the owner waits inside a link call, its loop is alive: the stream's leash holds."""
        streamer = self._streamer
        return streamer.owner_waiting() if streamer is not None and streamer.alive else nullcontext()

    def _command(self, what: str, command: int, params: Sequence[float]) -> None:
        with self._owner_waiting():
            outcome = run_command(self._require_conn(), self._send_motion, command, params, self.command_timeout_s,
                                  self.command_retries)
        if not outcome.accepted:
            raise LinkError(outcome.refusal(what))

    def _set_mode(self, mode: str) -> None:
        """Once the autopilot accepted the change, the mode shown before it is no longer ours: a pilot
        who switches back to it right after is seen at the next heartbeat, not after the settle window."""
        self._command(f"{self.flavour.name} mode {mode}", mavlink.MAV_CMD_DO_SET_MODE,
                      self.flavour.set_mode_params(mode))
        with self._motion_lock:
            if self._asked is not None and self._asked.mode == mode:
                self._asked.acked, self._asked.previous = True, None

    def _ask_and_set_mode(self, mode: str, clears: bool = False) -> None:
        old = self._ask_for(mode, clears)
        mine = self._asked
        try:
            self._set_mode(mode)
        except BaseException:
            self._unask(old, mine)
            raise

    def _await_mode(self, mode: str) -> str:
        """Wait (as long as a command may take) for a heartbeat showing `mode`; the mode last shown.
        A superseded call stops waiting at once (a hold may have changed the mode before any heartbeat)."""
        deadline = time.monotonic() + self.command_timeout_s * (self.command_retries + 1)
        with self._owner_waiting():
            while True:
                shown = self.state().mode
                if shown == mode or time.monotonic() > deadline or not motion_allowed():
                    return shown
                time.sleep(0.02)

    def _check_current(self) -> None:
        """A call run for a bridge's motion door that a hold has superseded sends nothing more."""
        if not motion_allowed():
            raise LinkError("motion not sent: a hold came after this call was decided")

    def _check_not_overridden(self) -> None:
        with self._motion_lock:
            if self._control == OVERRIDDEN or self._foreign is not None:
                raise PilotOverride(self._refusal())

    # -- arming, takeoff, control ------------------------------------------------------------------------
    def arm(self) -> None:
        """Arms in the mode the vehicle is in. Arming it before the stack asked for any mode counts as
        asking for that one: the stack put the vehicle there, no pilot."""
        self._check_not_overridden()
        shown = self._shown_mode()
        with self._motion_lock:
            adopted = None if self._asked is not None else _ModeRequest(shown, shown, time.monotonic(), shown=True,
                                                                        sent=True)
            if adopted is not None:
                self._asked = adopted
        try:
            self._command("arming", mavlink.MAV_CMD_COMPONENT_ARM_DISARM, [1.0])
        except BaseException:
            if adopted is not None:
                self._unask(None, adopted)
            raise

    def takeoff(self, alt_m: Optional[float] = None, timeout_s: float = 30.0) -> None:
        alt = self.takeoff_alt_m if alt_m is None else float(alt_m)
        if not (math.isfinite(alt) and alt > 0):
            raise LinkError(f"takeoff height must be a positive number of metres; got {alt_m}")
        self._check_not_overridden()
        flavour = self.flavour
        if flavour.takeoff_mode is not None:
            self._ask_and_set_mode(flavour.takeoff_mode)
        position = self._position("takeoff")
        home_amsl = (position.alt - position.relative_alt) / 1000.0
        unset = math.nan if flavour.name == "px4" else 0.0  # PX4: NaN means "here" and "current yaw"
        old = self._ask_for(flavour.takeoff_shows)  # PX4 enters AUTO.TAKEOFF on the command itself
        mine = self._asked
        try:
            self._command(f"takeoff to {alt:g} m", mavlink.MAV_CMD_NAV_TAKEOFF,
                          [0.0, 0.0, 0.0, unset, unset, unset, flavour.takeoff_param7(alt, home_amsl)])
        except BaseException:
            self._unask(old, mine)
            raise
        if timeout_s <= 0:
            return
        deadline = time.monotonic() + timeout_s
        while True:  # there, and (PX4) out of AUTO.TAKEOFF: the autopilot itself says the climb is over
            state = self.state()
            if (state.alt_m or 0.0) >= alt - max(0.5, 0.05 * alt) and state.mode != "AUTO.TAKEOFF":
                return
            if state.foreign_mode is not None:  # a pilot took it during the climb
                raise PilotOverride(f"takeoff: at {state.alt_m or 0.0:.1f} m of {alt:g} m the vehicle went to "
                                    f"{state.foreign_mode}, a mode the stack did not ask for; motion refused "
                                    "until take_control()")
            if not motion_allowed():  # a hold came during the climb: it has the vehicle now
                raise LinkError(f"takeoff: superseded by a hold at {state.alt_m or 0.0:.1f} m of {alt:g} m")
            if time.monotonic() > deadline:
                raise LinkError(f"takeoff: at {state.alt_m or 0.0:.1f} m of {alt:g} m after {timeout_s:g} s "
                                f"(mode {state.mode})")
            time.sleep(0.05)

    def flown_altitude_m(self, alt_m: float) -> float:
        """A goal at or below home's height (0 m: the ground a walker's goal lies on, the supervisor's
        default) is flown at the takeoff height; a multirotor never cruises into the street."""
        return alt_m if alt_m > 0 else self.takeoff_alt_m

    def take_control(self) -> None:
        """Stream a hold-here setpoint, then enter the control mode (PX4 refuses OFFBOARD without a
        stream). Refused (PilotOverride) in a foreign mode: a late call must never switch the vehicle
        back from a pilot. The way back is an explicit stop (the operator's take-control makes the
        bridge hold first), which ends the foreign mode; this then enters the control mode."""
        flavour = self.flavour
        here = self._here()
        old = self._streamer
        if old is not None:
            old.stop("take_control() started a new stream")
        shown = self._shown_mode()
        with self._motion_lock:
            self._check_current()  # a hold that came first keeps the vehicle: no stream, no mode change
            asked_before = self._note_request(flavour.control_mode, shown, clears=False)
            mine = self._asked
            self._control, self._confirmed, self._override_reason = HELD, False, None
            streamer: SetpointStreamer[Setpoint] = SetpointStreamer(
                self._stream_setpoint, here, self.setpoint_hz, self.keepalive_s, name=f"{flavour.name} setpoint")
            self._streamer = streamer
        try:
            streamer.start()
            if flavour.needs_stream:
                with streamer.owner_waiting():
                    deadline = time.monotonic() + self.prestream_s
                    while time.monotonic() < deadline and motion_allowed():
                        time.sleep(0.01)
            self._set_mode(flavour.control_mode)  # asked for above, before the stream's first setpoint
            shown = self._await_mode(flavour.control_mode)
            if shown != flavour.control_mode:
                raise LinkError(f"{flavour.name} accepted {flavour.control_mode} but its heartbeat still shows "
                                f"{shown}")
            with self._motion_lock:  # seen in a heartbeat after the ACK: from now on, leaving it is an override
                if self._control == HELD:
                    self._confirmed = True
        except BaseException:
            with self._motion_lock:
                if self._control == HELD:
                    self._control = RELEASED
            streamer.stop("take_control() failed")
            self._unask(asked_before, mine)
            raise

    def keepalive(self) -> None:
        """StreamStopped when the stream died of a stale keepalive (the owner was late): the vehicle
        is in the control mode with no setpoints, and the owner must hold it now."""
        streamer = self._streamer
        if streamer is None:
            return
        try:
            streamer.keepalive()
        except StreamStopped:
            raise
        except LinkError:
            pass  # stopped by a stop, a pilot or a close: go_to/velocity will say why

    def _position(self, what: str) -> Message:
        """The latest GLOBAL_POSITION_INT, waiting for a first one as long as a command would."""
        conn = self._require_conn()
        deadline = time.monotonic() + self.command_timeout_s * (self.command_retries + 1)
        while True:
            position = conn.snapshot()[0].get("GLOBAL_POSITION_INT")
            if position is not None:
                return position
            if time.monotonic() > deadline:
                raise LinkError(f"{what}: no GLOBAL_POSITION_INT from the vehicle (no position fix?)")
            time.sleep(0.02)

    def _here(self) -> PositionSetpoint:
        self._position("take_control")
        s = self.state()
        return PositionSetpoint(s.lat, s.lon, s.alt_m, s.heading_deg)  # type: ignore[arg-type]

    def _require_control(self, what: str) -> SetpointStreamer[Setpoint]:
        with self._motion_lock:  # never calls into the connection while held (its reader takes this lock)
            if self._control == OVERRIDDEN or self._foreign is not None:
                raise PilotOverride(self._refusal())
            streamer = self._streamer if self._control == HELD else None
        if streamer is None:
            raise LinkError(f"{what}: the link does not hold control (vehicle in {self.state().mode}); "
                            "call take_control() first")
        return streamer

    # -- motion ----------------------------------------------------------------------------------------
    def go_to(self, lat: float, lon: float, alt_m: float, heading_deg: Optional[float] = None,
              speed_m_s: Optional[float] = None) -> None:
        values = [lat, lon, alt_m] + [v for v in (heading_deg, speed_m_s) if v is not None]
        if not all(math.isfinite(v) for v in values) or abs(lat) > 90 or abs(lon) > 180:
            raise LinkError(f"go_to: not a position: {lat}, {lon}, {alt_m} m, heading {heading_deg}")
        if speed_m_s is not None and speed_m_s <= 0:
            raise LinkError(f"go_to: speed must be positive; got {speed_m_s}")
        streamer = self._require_control("go_to")
        goal = PositionSetpoint(float(lat), float(lon), float(alt_m), heading_deg)
        setpoint: Setpoint = goal
        if speed_m_s is not None:
            self._command(f"speed {speed_m_s:g} m/s", mavlink.MAV_CMD_DO_CHANGE_SPEED, [1.0, speed_m_s, -1.0])
            here = self.state()  # after the command: the carrot starts where the vehicle is now
            if here.position_known:
                setpoint = PathSetpoint((here.lat, here.lon, here.alt_m), goal,  # type: ignore[arg-type]
                                        float(speed_m_s), time.monotonic())
        self._check_current()
        streamer.set(setpoint)
        self._send_setpoint(setpoint)

    def velocity(self, east_m_s: float, north_m_s: float, up_m_s: float = 0.0,
                 yaw_rate_deg_s: float = 0.0) -> None:
        if not all(math.isfinite(v) for v in (east_m_s, north_m_s, up_m_s, yaw_rate_deg_s)):
            raise LinkError(f"velocity: not a velocity: {east_m_s}, {north_m_s}, {up_m_s}, {yaw_rate_deg_s}")
        streamer = self._require_control("velocity")
        setpoint = VelocitySetpoint(float(east_m_s), float(north_m_s), float(up_m_s), float(yaw_rate_deg_s))
        self._check_current()
        streamer.set(setpoint)
        self._send_setpoint(setpoint)

    def _stream_setpoint(self, setpoint: Setpoint) -> None:
        """The stream's own sends ask the owner's gate first (`VehicleLink.set_owner_gate`): the motion
        door governs the owner's calls, not this thread, so a stop the owner has decided (an e-stop, a
        Seek's end, a close) stops the stream before the owner's hold is even scheduled (the PX4 soak
        under load: up to a third of a second of setpoints after an e-stop)."""
        if not self.owner_allows():
            raise MotionDropped("refused by the owner's gate: a stop is on its way")
        self._send_setpoint(setpoint)

    def _send_setpoint(self, setpoint: Setpoint) -> None:
        system, component = self._require_conn().target or (0, 0)
        boot_ms = int((time.monotonic() - self._started) * 1000) & 0xFFFFFFFF
        if isinstance(setpoint, (PositionSetpoint, PathSetpoint)):
            velocity: Optional[tuple[float, float, float]] = None
            if isinstance(setpoint, PathSetpoint):
                setpoint, velocity = setpoint.at(time.monotonic())
                if not self.flavour.position_feedforward:
                    velocity = None
            mask = _IGNORE_ACCEL | _IGNORE_YAW_RATE | (_IGNORE_VELOCITY if velocity is None else 0)
            east, north, up = velocity or (0.0, 0.0, 0.0)
            yaw = 0.0
            if setpoint.heading_deg is None:
                mask |= _IGNORE_YAW
            else:
                yaw = math.radians(setpoint.heading_deg)  # NED yaw: clockwise from north
            msg = mavlink.MAVLink_set_position_target_global_int_message(
                boot_ms, system, component, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, mask,
                int(round(setpoint.lat * 1e7)), int(round(setpoint.lon * 1e7)), setpoint.alt_m,
                north, east, -up, 0, 0, 0, yaw, 0)
        else:
            msg = mavlink.MAVLink_set_position_target_local_ned_message(
                boot_ms, system, component, mavlink.MAV_FRAME_LOCAL_NED, _IGNORE_POSITION | _IGNORE_ACCEL | _IGNORE_YAW,
                0, 0, 0, setpoint.north_m_s, setpoint.east_m_s, -setpoint.up_m_s, 0, 0, 0, 0,
                -math.radians(setpoint.yaw_rate_deg_s))
        self._send_motion(msg)

    def hold(self) -> None:
        self._give_back(self.flavour.hold_mode)

    def land(self) -> None:
        self._give_back(self.flavour.land_mode)

    def return_to_launch(self) -> None:
        self._give_back(self.flavour.rtl_mode)

    def _give_back(self, mode: str) -> None:
        """Hand the vehicle to one of the autopilot's own modes. Control is released before the mode
        change goes out, so no setpoint follows it (the stream's next send is refused and it stops);
        if the change is lost, the command's own retry comes well within PX4's offboard-loss time
        (COM_OF_LOSS_T, 1 s), whose failsafe would stop the vehicle anyway. An explicit stop from the
        owner: it goes out in a foreign mode too, and ends it (the owner decides when to stop a pilot;
        the bridge's authority machine never does without an operator's take-control)."""
        shown = self._shown_mode()
        with self._motion_lock:
            foreign = self._foreign
            asked_before = self._note_request(mode, shown, clears=True)
            mine = self._asked
            before, self._control = self._control, RELEASED  # our own switch is not an override
            reason, self._override_reason = self._override_reason, None
        try:
            self._set_mode(mode)
        except BaseException:
            with self._motion_lock:
                if self._control == RELEASED:
                    self._control, self._override_reason = before, reason
                if self._foreign is None:  # the vehicle never took the stop: the pilot's mode still stands,
                    self._foreign = foreign  # and the operator's release is spent (they must ask again)
            self._unask(asked_before, mine)
            raise
        streamer = self._streamer
        if streamer is not None:
            streamer.stop(f"handed to {mode}")
        self._await_mode(mode)  # so that state() says so on return; the switch itself was acknowledged

    # -- fence -----------------------------------------------------------------------------------------
    def upload_fence(self, polygon: Sequence[tuple[float, float]], max_alt_m: float,
                     breach_action: str = "hold") -> Fence:
        """Returns the fence as the vehicle holds it: vertices at MAVLink's 1e-7 degree resolution."""
        vertices = tuple((round(float(lat) * 1e7) / 1e7, round(float(lon) * 1e7) / 1e7) for lat, lon in polygon)
        fence = Fence(vertices, round(float(max_alt_m), 3), breach_action)  # a float32 parameter keeps ~7 digits
        with self._owner_waiting():
            fence_protocol.upload_fence(self._require_conn(), self.flavour, fence, self.command_timeout_s,
                                        self.command_retries)
        return fence

    def read_fence(self) -> Fence:
        with self._owner_waiting():
            return fence_protocol.read_fence(self._require_conn(), self.flavour, self.command_timeout_s,
                                             self.command_retries)

