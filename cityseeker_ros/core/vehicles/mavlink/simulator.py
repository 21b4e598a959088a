"""A MAVLink 2 vehicle simulator that ships with the project, so the MAVLink link is tested over real
MAVLink on loopback UDP without PX4 or ArduPilot binaries (neither SITL installs here).

It is a point-mass multirotor with speed limits, behind either autopilot's rules as far as the link
depends on them:

- HEARTBEAT with each flavour's custom_mode (PX4 main/sub mode bits, ArduCopter mode numbers), 1 Hz and
  once more on every mode or arming change; GLOBAL_POSITION_INT and ATTITUDE at 10 Hz, SYS_STATUS
  (battery) at 1 Hz, rates changeable with MAV_CMD_SET_MESSAGE_INTERVAL;
- arming with COMMAND_ACK results, a configurable pre-arm failure refused with a STATUSTEXT reason
  (PX4 "Preflight Fail: ..." and DENIED, ArduPilot "PreArm: ..." and FAILED);
- takeoff (PX4 AUTO.TAKEOFF then AUTO.LOITER; ArduPilot in GUIDED), position and velocity setpoints
  (SET_POSITION_TARGET_GLOBAL_INT / _LOCAL_NED) followed at up to the speed limits;
- PX4's offboard rules: OFFBOARD is refused (TEMPORARILY_REJECTED) unless setpoints arrived at 2 Hz or
  more during the last second; with no setpoint for COM_OF_LOSS_T in OFFBOARD it fails safe to the
  mode COM_OBL_RC_ACT names (default here 5, hold, since this vehicle has no RC; PX4's default is 0);
- ArduPilot's GUIDED velocity timeout (GUID_TIMEOUT, 3 s), BRAKE, LOITER, RTL, LAND;
- fence items through the mission protocol (MAV_MISSION_TYPE_FENCE) up and down, the fence parameters,
  and a breach action when the vehicle leaves the polygon or its ceiling;
- a few parameters with each flavour's value encoding (PX4 integers bytewise, ArduPilot cast);
- position targets flown like a position controller: towards the latest target at the vehicle's own
  cruise speed, with the target's velocity (when the setpoint carries one) as a feed-forward; a
  stream of targets that advances along a path (a carrot) is followed at the carrot's pace;
- for tests: `drop` (a fraction of datagrams lost each way), `stop_answering()`, counts of what it
  received, and `track` (its own position at each GLOBAL_POSITION_INT it sent: what a test computes
  the flown speed from).

Switches and adversarial knobs, each settable in the constructor / on the command line, and (the
knobs) at run time from Python (`sim.<method>(...)`, the simulator running in-process on a thread, as
the tests run it) or as a text line through `control(line)`, which the command line serves on a UDP
port (`--control-port`, answer "ok ..." or "error: ...") and on stdin (`--control-stdin`);
`send_control(port, line)` sends one from Python:

- `cruise_m_s` / `--cruise-speed M_S` / `cruise_speed M_S`: the vehicle's own cruise speed, what it
  flies a position target at unless DO_CHANGE_SPEED changed it;
- `ignore_speed_change` / `--ignore-speed-change` / `ignore_speed_change on|off`: MAV_CMD_DO_CHANGE_SPEED
  is acknowledged (ACCEPTED) but ignored, so the vehicle keeps its own cruise speed (a vehicle that
  does not honour the stack's speed limit);
- `param_echo` / `--no-param-echo` / `param_echo on|off`: PARAM_SET is stored but not answered with
  PARAM_VALUE (the stack then cannot confirm its fence parameters and must refuse to fly);
- `ignore(what, ack=True)` / `--ignore WHAT[:noack]` / `ignore WHAT [ack|noack]`: a command (a
  MAV_CMD_* name or number) or a message type (e.g. SET_POSITION_TARGET_GLOBAL_INT) is counted as
  received and never acted on; an ignored command is still acknowledged ACCEPTED with ack, and not
  answered at all without; an ignored PARAM_SET with ack is echoed with the unchanged value; other
  message types have no answer to give. `heed(what)` undoes it;
- `ack_delay_s` / `--ack-delay S` / `ack_delay S`: every answer to a received message (COMMAND_ACK,
  STATUSTEXT reasons, PARAM_VALUE, mission replies) leaves this late, in order; the effect itself
  (a mode change, arming) is immediate, as over a slow radio;
- `mode_switch(mode, after_s=0.0)` / `mode_switch MODE [AFTER_S]`: the pilot's RC mode switch (or the
  autopilot changing mode by itself), now or after `after_s` seconds; `rc_mode_switch(mode)` is the
  immediate form;
- `drop_link(seconds)` / `drop_link SECONDS`: nothing is sent or received for that long (the vehicle
  flies on, and PX4's offboard-loss failsafe acts as it would);
- `low_battery(fraction, failsafe_mode=None)` / `low_battery FRACTION [MODE]`: the battery reads
  `fraction` (0..1) from now on, draining from there; with a mode, the autopilot's battery failsafe
  switches to it (a mode the stack did not ask for);
- `state` (text only): one line with the mode, arming, position and battery, for scripts.
- `ground_m` / `--ground M` (switch only, <= 0): the ground's height relative to home farther than
  PAD_M (2 m) from it, as for a home on a roof or a hill top; 0 (the default) is flat ground at
  home's height. Below home the vehicle flies on down to that ground (what a floor below home is
  tested against).

Like PX4 SITL it sends to a UDP port (14540 for offboard APIs) from a port of its own, and answers
whoever spoke to it last:

    python -m cityseeker_ros.core.vehicles.mavlink.simulator --flavour px4 --port 14540 --home 47.3977,8.5456
    python -m cityseeker_ros.core.vehicles.mavlink.simulator --ignore-speed-change --cruise-speed 5 \\
        --control-port 14600   # then e.g. `echo "mode_switch POSCTL" | nc -u 127.0.0.1 14600`
"""
from __future__ import annotations

import argparse
import math
import random
import select
import socket
import struct
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.mavlink.flavours import Flavour, flavour_named

M_PER_DEG = 6378137.0 * math.pi / 180.0
TICK_S = 0.02
GAIN = 3.0  # 1/s: position error to velocity
CREEP_M_S = 0.5  # the slowest approach speed
ON_GROUND_M = 0.05
PAD_M = 2.0  # with ground_m below 0: home's own surface (a roof, a hill top) reaches this far from home
# Datagrams the link sends that move the vehicle (what the tests count after a stop or a takeover).
SETPOINTS = frozenset({"SET_POSITION_TARGET_GLOBAL_INT", "SET_POSITION_TARGET_LOCAL_NED"})
MOTION_COMMANDS = frozenset({mavlink.MAV_CMD_COMPONENT_ARM_DISARM, mavlink.MAV_CMD_DO_SET_MODE,
                             mavlink.MAV_CMD_NAV_TAKEOFF, mavlink.MAV_CMD_NAV_LAND,
                             mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH, mavlink.MAV_CMD_DO_CHANGE_SPEED})
_REAL, _I8, _I16, _I32 = (mavlink.MAV_PARAM_TYPE_REAL32, mavlink.MAV_PARAM_TYPE_INT8, mavlink.MAV_PARAM_TYPE_INT16,
                          mavlink.MAV_PARAM_TYPE_INT32)
PARAMS = {
    "px4": {"COM_OF_LOSS_T": (1.0, _REAL), "COM_OBL_RC_ACT": (5, _I32), "GF_ACTION": (2, _I32),
            "GF_MAX_VER_DIST": (0.0, _REAL), "GF_MAX_HOR_DIST": (0.0, _REAL), "MIS_TAKEOFF_ALT": (2.5, _REAL),
            "RTL_RETURN_ALT": (30.0, _REAL), "NAV_DLL_ACT": (0, _I32)},
    "ardupilot": {"FENCE_ENABLE": (0, _I8), "FENCE_TYPE": (7, _I8), "FENCE_ACTION": (1, _I8),
                  "FENCE_ALT_MAX": (100.0, _REAL), "FS_GCS_ENABLE": (0, _I8), "RTL_ALT": (1500, _I32),
                  "GUID_TIMEOUT": (3.0, _REAL), "SYSID_MYGCS": (255, _I16)},
}
PX4_LOSS_ACTIONS = {0: "POSCTL", 1: "ALTCTL", 2: "MANUAL", 3: "AUTO.RTL", 4: "AUTO.LAND", 5: "AUTO.LOITER"}
PX4_FENCE_ACTIONS = {2: "AUTO.LOITER", 3: "AUTO.RTL", 5: "AUTO.LAND"}
AP_FENCE_ACTIONS = {1: "RTL", 2: "LAND", 3: "RTL", 4: "BRAKE"}
FENCE_COMMANDS = range(5000, 5005)  # return point, polygon inclusion/exclusion, circle inclusion/exclusion
MESSAGE_TYPES = frozenset(m.msgname for m in mavlink.mavlink_map.values())


class ControlError(ValueError):
    """A control request the simulator cannot carry out; one line naming what was wrong."""


def command_id(what: str | int) -> Optional[int]:
    """A MAV_CMD as a number or name (with or without the MAV_CMD_ prefix); None if `what` is not one."""
    if isinstance(what, int):
        return what
    text = what.strip().upper()
    if text.isdigit():
        return int(text)
    value = getattr(mavlink, text if text.startswith("MAV_CMD_") else f"MAV_CMD_{text}", None)
    return value if isinstance(value, int) else None


@dataclass
class Received:
    t: float  # monotonic
    type: str
    command: Optional[int] = None  # COMMAND_LONG's command


@dataclass
class _Upload:
    count: int
    items: list[Any]
    started: float
    by: tuple[int, int]  # the uploader's system and component
    asked: float = 0.0


class MavlinkSimulator:
    """One simulated vehicle on a loopback (or any) UDP socket; `start()` runs it on a thread."""

    def __init__(self, flavour: str = "px4", port: int = 14540, host: str = "127.0.0.1",
                 home: Sequence[float] = (47.397742, 8.545594, 488.0), system_id: int = 1, component_id: int = 1,
                 listen_port: int = 0, max_speed_m_s: float = 12.0, cruise_m_s: float = 8.0,
                 max_climb_m_s: float = 3.0, max_descent_m_s: float = 2.0, position_hz: float = 10.0,
                 attitude_hz: float = 10.0, heartbeat_hz: float = 1.0, status_hz: float = 1.0,
                 prearm_failure: Optional[str] = None, drop: float = 0.0, seed: int = 0,
                 params: Optional[dict[str, float]] = None, ignore_speed_change: bool = False,
                 param_echo: bool = True, ack_delay_s: float = 0.0,
                 ignore: Sequence[str | int] = (), ignore_ack: bool = True, ground_m: float = 0.0) -> None:
        self.flavour: Flavour = flavour_named(flavour)
        if not (math.isfinite(ground_m) and ground_m <= 0.0):
            raise ControlError(f"ground_m: must be a number of metres <= 0 (the ground below home's height); "
                               f"got {ground_m}")
        self.ground_m = float(ground_m)
        self.target = (host, int(port))
        self.home = (float(home[0]), float(home[1]), float(home[2]) if len(home) > 2 else 0.0)
        self.system_id, self.component_id = system_id, component_id
        self.max_speed, self.cruise = max_speed_m_s, cruise_m_s
        self.max_climb, self.max_descent = max_climb_m_s, max_descent_m_s
        self.prearm_failure = prearm_failure
        self.drop = drop
        self._rng = random.Random(seed)
        self.params: dict[str, list[float]] = {k: [v, t] for k, (v, t) in PARAMS[self.flavour.name].items()}
        for name, value in (params or {}).items():
            if name not in self.params:
                raise ValueError(f"simulator has no parameter {name}; known: {', '.join(self.params)}")
            self.params[name][0] = value
        self._rates = {"HEARTBEAT": heartbeat_hz, "GLOBAL_POSITION_INT": position_hz, "ATTITUDE": attitude_hz,
                       "SYS_STATUS": status_hz}
        self._due = dict.fromkeys(self._rates, 0.0)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, listen_port))
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()
        self.control_sock: Optional[socket.socket] = None
        self.peer: Optional[tuple[str, int]] = None
        self._mav = mavlink.MAVLink(None, srcSystem=system_id, srcComponent=component_id)
        self._parser = mavlink.MAVLink(None)
        self._parser.robust_parsing = True
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.silent = False
        self._silent_until = 0.0  # drop_link(): deaf and mute until then
        self.param_echo = param_echo
        self.ack_delay_s = 0.0
        self.set_ack_delay(ack_delay_s)
        self._ignored_commands: dict[int, bool] = {}  # command -> still acknowledged
        self._ignored_messages: dict[str, bool] = {}  # message type -> answered (PARAM_SET: old value)
        for what in ignore:
            self.ignore(what, ignore_ack)
        if ignore_speed_change:
            self.ignore(mavlink.MAV_CMD_DO_CHANGE_SPEED, ack=True)
        self._answering = False  # inside _handle: what is sent is an answer (ack_delay_s applies)
        self._later: list[tuple[float, Any]] = []  # delayed answers, in order
        self._switches: list[tuple[float, str]] = []  # scheduled mode_switch()es
        self.boot = time.monotonic()
        # vehicle state: metres east, north, up of home; m/s; compass degrees
        self.mode = "AUTO.LOITER" if self.flavour.name == "px4" else "STABILIZE"
        self.armed = False
        self.pos = [0.0, 0.0, 0.0]
        self.vel = [0.0, 0.0, 0.0]
        self.heading = 0.0
        self.yaw_rate = 0.0
        self.battery = 1.0
        self.hold_point = [0.0, 0.0, 0.0]
        self.takeoff_alt: Optional[float] = None
        # ("position", e, n, u, heading|None, (ve, vn, vu) feed-forward) or ("velocity", ve, vn, vu, rate)
        self.goal: Optional[tuple] = None
        self.goal_t = 0.0
        self.last_setpoint: Optional[tuple] = None
        self.setpoint_times: deque[float] = deque(maxlen=200)
        self.fence: list[Any] = []
        self._upload: Optional[_Upload] = None
        self._completed_upload = 0
        self._breached = False
        # what tests read
        self.received: deque[Received] = deque(maxlen=200_000)
        self.counts: Counter[str] = Counter()
        self.dropped = {"in": 0, "out": 0}  # datagrams lost on purpose each way
        self.sent = 0
        self.texts: list[str] = []
        self.modes: list[tuple[float, str, str]] = []  # (t, mode, why)
        self.failsafes: list[tuple[float, str]] = []
        self.track: deque[tuple[float, float, float, float]] = deque(maxlen=100_000)  # (t, east, north, up)

    # -- life ------------------------------------------------------------------------------------------
    def start(self) -> MavlinkSimulator:
        self._thread = threading.Thread(target=self._run, name=f"mavlink simulator {self.flavour.name}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self.sock.close()
        if self.control_sock is not None:
            self.control_sock.close()

    def __enter__(self) -> MavlinkSimulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- test hooks and adversarial knobs (the module docstring says what each does) -------------------
    def rc_mode_switch(self, mode: str) -> None:
        """A pilot flips the RC mode switch: the autopilot changes mode without being asked."""
        self.mode_switch(mode)

    def mode_switch(self, mode: str, after_s: float = 0.0) -> None:
        """The pilot's (or the autopilot's own) mode change, now or `after_s` seconds from now."""
        if mode not in self.flavour.modes:
            raise ControlError(f"mode_switch: {self.flavour.name} has no mode {mode!r}; known: "
                               f"{', '.join(self.flavour.modes)}")
        if not (math.isfinite(after_s) and after_s >= 0):
            raise ControlError(f"mode_switch: after_s must be a number of seconds >= 0; got {after_s}")
        with self._lock:
            if after_s == 0:
                self._set_mode(mode, "RC mode switch")
            else:
                self._switches.append((time.monotonic() + after_s, mode))

    def stop_answering(self) -> None:
        self.silent = True

    def resume_answering(self) -> None:
        self.silent = False
        self._silent_until = 0.0

    def drop_link(self, seconds: float) -> None:
        """Send and receive nothing for `seconds`; the vehicle flies on meanwhile."""
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ControlError(f"drop_link: seconds must be a number >= 0; got {seconds}")
        with self._lock:
            self._silent_until = time.monotonic() + seconds

    @property
    def deaf(self) -> bool:
        """Sending and receiving nothing now (stop_answering() or a drop_link() under way)."""
        return self.silent or time.monotonic() < self._silent_until

    def low_battery(self, fraction: float, failsafe_mode: Optional[str] = None) -> None:
        if not (math.isfinite(fraction) and 0.0 <= fraction <= 1.0):
            raise ControlError(f"low_battery: fraction must be within 0..1; got {fraction}")
        if failsafe_mode is not None and failsafe_mode not in self.flavour.modes:
            raise ControlError(f"low_battery: {self.flavour.name} has no mode {failsafe_mode!r}")
        with self._lock:
            self.battery = fraction
            self._due["SYS_STATUS"] = 0.0
            if failsafe_mode is not None:
                self.failsafes.append((time.monotonic(), f"low battery -> {failsafe_mode}"))
                self._text(f"Low battery {fraction:.0%}: {failsafe_mode}")
                self._set_mode(failsafe_mode, "battery failsafe")

    def ignore(self, what: str | int, ack: bool = True) -> None:
        """Never act on a command (MAV_CMD_* name or number) or a message type; see the module docstring."""
        command = command_id(what)
        with self._lock:
            if command is not None:
                self._ignored_commands[command] = ack
                return
            name = str(what).strip().upper()
            if name not in MESSAGE_TYPES:
                raise ControlError(f"ignore: {what!r} is neither a MAV_CMD nor a MAVLink message type")
            self._ignored_messages[name] = ack

    def heed(self, what: str | int) -> None:
        """Undo ignore(what)."""
        command = command_id(what)
        with self._lock:
            if command is not None:
                self._ignored_commands.pop(command, None)
            else:
                self._ignored_messages.pop(str(what).strip().upper(), None)

    @property
    def ignore_speed_change(self) -> bool:
        return mavlink.MAV_CMD_DO_CHANGE_SPEED in self._ignored_commands

    def set_ack_delay(self, seconds: float) -> None:
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ControlError(f"ack_delay: seconds must be a number >= 0; got {seconds}")
        self.ack_delay_s = float(seconds)

    def set_cruise(self, speed_m_s: float) -> None:
        if not (math.isfinite(speed_m_s) and speed_m_s > 0):
            raise ControlError(f"cruise_speed: must be a positive number of m/s; got {speed_m_s}")
        with self._lock:
            self.cruise = min(float(speed_m_s), self.max_speed)

    def control(self, line: str) -> str:
        """One text request (the command line's control port and stdin): "ok ..." or "error: ..."."""
        words = line.split()
        if not words:
            return "error: empty request"
        verb, args = words[0].lower(), words[1:]
        try:
            if verb == "state":
                with self._lock:
                    e, n, u = self.pos
                    return (f"ok mode {self.mode} armed {int(self.armed)} east {e:.2f} north {n:.2f} up {u:.2f} "
                            f"battery {self.battery:.3f}")
            handlers = {
                "mode_switch": (1, 2, lambda a: self.mode_switch(a[0], float(a[1]) if len(a) > 1 else 0.0)),
                "drop_link": (1, 1, lambda a: self.drop_link(float(a[0]))),
                "low_battery": (1, 2, lambda a: self.low_battery(float(a[0]), a[1] if len(a) > 1 else None)),
                "ignore": (1, 2, lambda a: self.ignore(a[0], _ack_word(a[1]) if len(a) > 1 else True)),
                "heed": (1, 1, lambda a: self.heed(a[0])),
                "ack_delay": (1, 1, lambda a: self.set_ack_delay(float(a[0]))),
                "cruise_speed": (1, 1, lambda a: self.set_cruise(float(a[0]))),
                "ignore_speed_change": (1, 1, lambda a: (self.ignore if _on_word(a[0]) else self.heed)(
                    mavlink.MAV_CMD_DO_CHANGE_SPEED)),
                "param_echo": (1, 1, lambda a: setattr(self, "param_echo", _on_word(a[0]))),
            }
            if verb not in handlers:
                return f"error: unknown request {verb!r}; known: state, {', '.join(handlers)}"
            least, most, handler = handlers[verb]
            if not least <= len(args) <= most:
                return f"error: {verb} takes {least}{f'..{most}' if most != least else ''} argument(s); got {len(args)}"
            handler(args)
        except (ControlError, ValueError) as exc:
            return f"error: {exc}"
        return f"ok {line.strip()}"

    def count(self, types: Sequence[str] | frozenset[str] = SETPOINTS, since: float = 0.0,
              commands: Optional[frozenset[int]] = None) -> int:
        """Messages of `types` received after monotonic time `since` (COMMAND_LONG filtered by `commands`)."""
        with self._lock:
            return sum(1 for r in self.received if r.t > since and (
                r.type in types or (commands is not None and r.type == "COMMAND_LONG" and r.command in commands)))

    def count_motion(self, since: float = 0.0) -> int:
        return self.count(SETPOINTS, since, MOTION_COMMANDS)

    @property
    def position(self) -> tuple[float, float, float]:
        """(lat, lon, metres above home)."""
        with self._lock:
            lat, lon = self._latlon(self.pos[0], self.pos[1])
            return lat, lon, self.pos[2]

    def param(self, name: str) -> float:
        with self._lock:
            return self.params[name][0]

    # -- geometry ----------------------------------------------------------------------------------------
    def _latlon(self, east: float, north: float) -> tuple[float, float]:
        lat0, lon0, _ = self.home
        return lat0 + north / M_PER_DEG, lon0 + east / (M_PER_DEG * math.cos(math.radians(lat0)))

    def _en(self, lat: float, lon: float) -> tuple[float, float]:
        lat0, lon0, _ = self.home
        return (lon - lon0) * M_PER_DEG * math.cos(math.radians(lat0)), (lat - lat0) * M_PER_DEG

    # -- the loop ----------------------------------------------------------------------------------------
    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            deadline = last + TICK_S
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                sockets = [self.sock] + ([self.control_sock] if self.control_sock is not None else [])
                ready = _readable(sockets, remaining)
                if self.sock in ready:
                    self._receive()
                if self.control_sock is not None and self.control_sock in ready:
                    self._serve_control()
            now = time.monotonic()
            with self._lock:
                self._due_events(now)
                self._step(now - last, now)
                self._telemetry(now)
            last = now

    def serve_control(self, port: int = 0) -> int:
        """Answer `control()` lines on a UDP port of `self.target`'s host (0: any free one); the port."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((self.target[0], port))
        sock.setblocking(False)
        self.control_sock = sock
        return sock.getsockname()[1]

    def _serve_control(self) -> None:
        assert self.control_sock is not None
        try:
            data, sender = self.control_sock.recvfrom(4096)
        except OSError:
            return
        answer = self.control(data.decode("utf-8", "replace"))
        try:
            self.control_sock.sendto(answer.encode("utf-8"), sender)
        except OSError:
            pass

    def _due_events(self, now: float) -> None:
        """Scheduled pilot switches and late answers whose time has come."""
        if self._switches:
            due = [m for t, m in self._switches if t <= now]
            self._switches = [(t, m) for t, m in self._switches if t > now]
            for mode in due:
                self._set_mode(mode, "RC mode switch")
        while self._later and self._later[0][0] <= now:
            _, msg = self._later.pop(0)
            self._transmit(msg)

    def _receive(self) -> None:
        try:
            data, sender = self.sock.recvfrom(65535)
        except OSError:
            return
        if self.deaf:
            return
        if self.drop and self._rng.random() < self.drop:
            self.dropped["in"] += 1
            return
        self.peer = sender
        try:
            msgs = self._parser.parse_buffer(data) or []
        except mavlink.MAVError:
            return
        with self._lock:
            if self.deaf:  # a drop_link() that came while this datagram was parsed: never heard
                return
            self._answering = True
            try:
                for msg in msgs:
                    if msg.get_type() != "BAD_DATA":
                        self._handle(msg)
            finally:
                self._answering = False

    def _send(self, msg: Any) -> None:
        if self._answering and self.ack_delay_s > 0:
            self._later.append((time.monotonic() + self.ack_delay_s, msg))
            return
        self._transmit(msg)

    def _transmit(self, msg: Any) -> None:
        buf = msg.pack(self._mav)
        self._mav.seq = (self._mav.seq + 1) % 256
        if self.deaf:
            return
        if self.drop and self._rng.random() < self.drop:
            self.dropped["out"] += 1
            return
        self.sent += 1
        try:
            self.sock.sendto(bytes(buf), self.peer or self.target)
        except OSError:
            pass  # nobody listening yet: a vehicle keeps talking

    def _text(self, text: str, severity: int = mavlink.MAV_SEVERITY_CRITICAL) -> None:
        self.texts.append(text)
        self._send(mavlink.MAVLink_statustext_message(severity, text.encode("ascii")[:50]))

    # -- messages in -------------------------------------------------------------------------------------
    def _handle(self, msg: Any) -> None:
        kind = msg.get_type()
        now = time.monotonic()
        self.received.append(Received(now, kind, getattr(msg, "command", None) if kind == "COMMAND_LONG" else None))
        self.counts[kind] += 1
        addressed = getattr(msg, "target_system", self.system_id)
        if addressed not in (0, self.system_id):
            return
        if kind == "COMMAND_LONG" and msg.command in self._ignored_commands:
            if self._ignored_commands[msg.command]:
                self._ack(msg, mavlink.MAV_RESULT_ACCEPTED)  # says yes, does nothing
            return
        if kind in self._ignored_messages:
            if self._ignored_messages[kind] and kind == "PARAM_SET" and msg.param_id in self.params:
                self._send_param(msg.param_id)  # the old value: refused without a word
            return
        if kind == "COMMAND_LONG":
            self._command(msg)
        elif kind in SETPOINTS:
            self._setpoint(msg, now)
        elif kind in ("PARAM_SET", "PARAM_REQUEST_READ", "PARAM_REQUEST_LIST"):
            self._param(msg)
        elif kind.startswith("MISSION_"):
            self._mission(msg, now)

    def _ack(self, msg: Any, result: int) -> None:
        self._send(mavlink.MAVLink_command_ack_message(msg.command, result, 0, 0, msg.get_srcSystem(),
                                                       msg.get_srcComponent()))

    def _command(self, msg: Any) -> None:
        c = msg.command
        if c == mavlink.MAV_CMD_COMPONENT_ARM_DISARM:
            self._ack(msg, self._arm(msg.param1 == 1.0, msg.param2 == 21196.0))
        elif c == mavlink.MAV_CMD_DO_SET_MODE:
            self._ack(msg, self._mode_command(msg))
        elif c == mavlink.MAV_CMD_NAV_TAKEOFF:
            self._ack(msg, self._takeoff(msg.param7))
        elif c == mavlink.MAV_CMD_NAV_LAND:
            self._set_mode(self.flavour.land_mode, "MAV_CMD_NAV_LAND")
            self._ack(msg, mavlink.MAV_RESULT_ACCEPTED)
        elif c == mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH:
            self._set_mode(self.flavour.rtl_mode, "MAV_CMD_NAV_RETURN_TO_LAUNCH")
            self._ack(msg, mavlink.MAV_RESULT_ACCEPTED)
        elif c == mavlink.MAV_CMD_DO_CHANGE_SPEED:
            if msg.param2 > 0:
                self.cruise = min(msg.param2, self.max_speed)
            self._ack(msg, mavlink.MAV_RESULT_ACCEPTED)
        elif c == mavlink.MAV_CMD_SET_MESSAGE_INTERVAL:
            name = mavlink.mavlink_map.get(int(msg.param1))
            name = name.msgname if name is not None else ""
            if name in self._rates and name != "HEARTBEAT":
                interval = msg.param2
                self._rates[name] = 0.0 if interval < 0 else (self._rates[name] if interval == 0 else 1e6 / interval)
                self._ack(msg, mavlink.MAV_RESULT_ACCEPTED)
            else:
                self._ack(msg, mavlink.MAV_RESULT_DENIED)
        else:
            self._ack(msg, mavlink.MAV_RESULT_UNSUPPORTED)

    def _ground(self) -> float:
        """The ground's height relative to home below the vehicle: home's own within PAD_M of it, else
        ground_m (0 unless set: flat ground at home's height)."""
        return 0.0 if math.hypot(self.pos[0], self.pos[1]) <= PAD_M else self.ground_m

    def _airborne(self) -> bool:
        return self.pos[2] > self._ground() + ON_GROUND_M

    def _arm(self, arm: bool, force: bool) -> int:
        if not arm:
            if self._airborne() and not force:
                self._text("Disarming denied: not landed")
                return mavlink.MAV_RESULT_DENIED
            self._set_armed(False)
            return mavlink.MAV_RESULT_ACCEPTED
        if self.armed:
            return mavlink.MAV_RESULT_ACCEPTED
        if self.prearm_failure:
            if self.flavour.name == "px4":
                self._text(f"Preflight Fail: {self.prearm_failure}")
                return mavlink.MAV_RESULT_DENIED
            self._text(f"PreArm: {self.prearm_failure}")
            return mavlink.MAV_RESULT_FAILED
        self._set_armed(True)
        return mavlink.MAV_RESULT_ACCEPTED

    def _set_armed(self, armed: bool) -> None:
        if armed != self.armed:
            self.armed = armed
            self._due["HEARTBEAT"] = 0.0
            if not armed:
                self.vel = [0.0, 0.0, 0.0]
                self.goal = None
                self.takeoff_alt = None

    def _mode_command(self, msg: Any) -> int:
        if not int(msg.param1) & mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED:
            return mavlink.MAV_RESULT_UNSUPPORTED
        if self.flavour.name == "px4":
            custom = int(msg.param2) << 16 | int(msg.param3) << 24
        else:
            custom = int(msg.param2)
        mode = self.flavour.mode_name(custom)
        if mode not in self.flavour.modes:
            self._text(f"Unknown mode {custom}")
            return mavlink.MAV_RESULT_DENIED
        if mode == "OFFBOARD" and mode != self.mode:
            recent = [t for t in self.setpoint_times if t > time.monotonic() - 1.0]
            if len(recent) < 2:
                self._text("Switching to Offboard is currently not available: no setpoint stream (need 2 Hz)")
                return mavlink.MAV_RESULT_TEMPORARILY_REJECTED
        if mode == "AUTO.TAKEOFF" and not self.armed:
            self._text("Takeoff denied: not armed")
            return mavlink.MAV_RESULT_DENIED
        self._set_mode(mode, "MAV_CMD_DO_SET_MODE")
        return mavlink.MAV_RESULT_ACCEPTED

    def _set_mode(self, mode: str, why: str) -> None:
        if mode == self.mode:
            return
        self.mode = mode
        self.modes.append((time.monotonic(), mode, why))
        self._due["HEARTBEAT"] = 0.0
        self.hold_point = list(self.pos)
        self.yaw_rate = 0.0
        if mode not in ("AUTO.TAKEOFF", "GUIDED"):
            self.takeoff_alt = None
        if mode == self.flavour.control_mode:
            self.goal = self.last_setpoint if self.flavour.name == "px4" else None
            self.goal_t = time.monotonic()
        else:
            self.goal = None

    def _takeoff(self, param7: float) -> int:
        if not self.armed:
            self._text("Takeoff denied: vehicle not armed")
            return mavlink.MAV_RESULT_DENIED
        if self.flavour.name == "px4":
            alt = param7 - self.home[2] if math.isfinite(param7) else self.params["MIS_TAKEOFF_ALT"][0]
            self._set_mode("AUTO.TAKEOFF", "MAV_CMD_NAV_TAKEOFF")
        else:
            if self.mode != "GUIDED":
                self._text("Takeoff: switch to GUIDED first")
                return mavlink.MAV_RESULT_FAILED
            alt = param7
        if not alt > 0:
            return mavlink.MAV_RESULT_DENIED
        self.takeoff_alt = alt
        self.goal = None
        return mavlink.MAV_RESULT_ACCEPTED

    def _setpoint(self, msg: Any, now: float) -> None:
        mask = msg.type_mask
        heading = None if mask & 1024 else math.degrees(msg.yaw) % 360.0
        if not mask & 7:  # a position
            if msg.get_type() == "SET_POSITION_TARGET_GLOBAL_INT":
                east, north = self._en(msg.lat_int / 1e7, msg.lon_int / 1e7)
                up = msg.alt - self.home[2] if msg.coordinate_frame == mavlink.MAV_FRAME_GLOBAL_INT else msg.alt
            else:
                east, north, up = msg.y, msg.x, -msg.z
            feedforward = (0.0, 0.0, 0.0) if mask & 56 else (msg.vy, msg.vx, -msg.vz)  # NED -> ENU
            goal: tuple = ("position", east, north, up, heading, feedforward)
        elif not mask & 56:  # a velocity
            rate = 0.0 if mask & 2048 else -math.degrees(msg.yaw_rate)  # NED clockwise -> ENU counter-clockwise
            goal = ("velocity", msg.vy, msg.vx, -msg.vz, rate)
        else:
            return
        self.setpoint_times.append(now)
        self.last_setpoint = goal
        if self.mode != self.flavour.control_mode:
            return  # PX4 remembers it for OFFBOARD; ArduPilot outside GUIDED ignores it
        if self.flavour.name == "ardupilot" and not (self.armed and self._airborne()):
            return
        self.goal, self.goal_t = goal, now
        self.takeoff_alt = None  # a target during a GUIDED takeoff replaces it, as in ArduCopter

    # -- parameters --------------------------------------------------------------------------------------
    def _param_wire(self, name: str) -> tuple[float, int]:
        value, kind = self.params[name]
        if kind == _REAL:
            return float(value), kind
        if self.flavour.bytewise_params:
            return struct.unpack("<f", struct.pack("<i", int(value)))[0], kind
        return float(int(value)), kind

    def _send_param(self, name: str) -> None:
        wire, kind = self._param_wire(name)
        names = list(self.params)
        self._send(mavlink.MAVLink_param_value_message(name.encode("ascii"), wire, kind, len(names), names.index(name)))

    def _param(self, msg: Any) -> None:
        kind = msg.get_type()
        if kind == "PARAM_REQUEST_LIST":
            for name in self.params:
                self._send_param(name)
            return
        names = list(self.params)
        name = msg.param_id
        if kind == "PARAM_REQUEST_READ" and msg.param_index >= 0:
            name = names[msg.param_index] if msg.param_index < len(names) else ""
        if name not in self.params:
            return  # both autopilots stay silent about a parameter they lack
        if kind == "PARAM_SET":
            stored = self.params[name][1]
            if stored != _REAL and self.flavour.bytewise_params and msg.param_type != _REAL:
                value: float = struct.unpack("<i", struct.pack("<f", msg.param_value))[0]
            else:
                value = int(msg.param_value) if stored != _REAL else float(msg.param_value)
            self.params[name][0] = value
            if not self.param_echo:
                return
        self._send_param(name)

    # -- mission protocol, fence only --------------------------------------------------------------------
    def _mission_ack(self, msg: Any, result: int) -> None:
        self._send(mavlink.MAVLink_mission_ack_message(msg.get_srcSystem(), msg.get_srcComponent(), result,
                                                       mavlink.MAV_MISSION_TYPE_FENCE))

    def _ask(self, seq: int, now: float) -> None:
        upload = self._upload
        if upload is None:
            return
        upload.asked = now
        self._send(mavlink.MAVLink_mission_request_int_message(*upload.by, seq, mavlink.MAV_MISSION_TYPE_FENCE))

    def _mission(self, msg: Any, now: float) -> None:
        kind = msg.get_type()
        if getattr(msg, "mission_type", mavlink.MAV_MISSION_TYPE_FENCE) != mavlink.MAV_MISSION_TYPE_FENCE:
            self._send(mavlink.MAVLink_mission_ack_message(msg.get_srcSystem(), msg.get_srcComponent(),
                                                           mavlink.MAV_MISSION_UNSUPPORTED, msg.mission_type))
            return
        if kind == "MISSION_COUNT":
            if msg.count == 0:
                self.fence, self._upload = [], None
                self._mission_ack(msg, mavlink.MAV_MISSION_ACCEPTED)
                return
            self._upload = _Upload(msg.count, [], now, (msg.get_srcSystem(), msg.get_srcComponent()))
            self._ask(0, now)
        elif kind == "MISSION_ITEM_INT":
            upload = self._upload
            if upload is None:
                if msg.seq == self._completed_upload - 1:
                    self._mission_ack(msg, mavlink.MAV_MISSION_ACCEPTED)  # our ACK was lost; say it again
                return
            if msg.seq != len(upload.items):
                self._ask(len(upload.items), now)
                return
            if msg.command not in FENCE_COMMANDS:
                self._upload = None
                self._mission_ack(msg, mavlink.MAV_MISSION_UNSUPPORTED)
                return
            upload.items.append(msg)
            if len(upload.items) < upload.count:
                self._ask(len(upload.items), now)
                return
            self.fence, self._upload, self._completed_upload = upload.items, None, upload.count
            self._breached = False
            self._mission_ack(msg, mavlink.MAV_MISSION_ACCEPTED)
        elif kind == "MISSION_REQUEST_LIST":
            self._send(mavlink.MAVLink_mission_count_message(msg.get_srcSystem(), msg.get_srcComponent(),
                                                             len(self.fence), mavlink.MAV_MISSION_TYPE_FENCE))
        elif kind in ("MISSION_REQUEST_INT", "MISSION_REQUEST"):
            if not 0 <= msg.seq < len(self.fence):
                self._mission_ack(msg, mavlink.MAV_MISSION_INVALID_SEQUENCE)
                return
            item = self.fence[msg.seq]
            self._send(mavlink.MAVLink_mission_item_int_message(
                msg.get_srcSystem(), msg.get_srcComponent(), msg.seq, item.frame, item.command, 0, 0, item.param1,
                item.param2, item.param3, item.param4, item.x, item.y, item.z, mavlink.MAV_MISSION_TYPE_FENCE))
        elif kind == "MISSION_CLEAR_ALL":
            self.fence = []
            self._mission_ack(msg, mavlink.MAV_MISSION_ACCEPTED)

    # -- physics and autopilot rules -----------------------------------------------------------------------
    def _step(self, dt: float, now: float) -> None:
        upload = self._upload
        if upload is not None:
            if now - upload.started > 10.0:
                self._upload = None  # the ground station gave up
            elif now - upload.asked > 0.3:
                self._ask(len(upload.items), now)
        if self.armed:
            self.battery = max(0.0, self.battery - dt / 1800.0)  # a 30-minute pack
        want = self._autopilot(now)
        for i in range(3):
            self.vel[i] = want[i]
        self.pos = [p + v * dt for p, v in zip(self.pos, self.vel)]
        ground = self._ground()
        if self.pos[2] <= ground:
            self.pos[2] = ground
            self.vel[2] = max(self.vel[2], 0.0)
        self.heading = (self.heading + self.yaw_rate * -1.0 * dt) % 360.0  # ENU rate: counter-clockwise
        if self.armed and self._airborne():
            self._check_fence()

    def _autopilot(self, now: float) -> list[float]:
        """The velocity the autopilot wants now (ENU)."""
        mode, px4 = self.mode, self.flavour.name == "px4"
        if mode == "OFFBOARD" and now - self._last_setpoint_t() > self.params["COM_OF_LOSS_T"][0]:
            action = PX4_LOSS_ACTIONS.get(int(self.params["COM_OBL_RC_ACT"][0]), "AUTO.LOITER")
            self.failsafes.append((now, f"offboard lost -> {action}"))
            self._text("Failsafe activated: no offboard setpoints")
            self._set_mode(action, "offboard loss failsafe")
            mode = action
        if not self.armed:
            return [0.0, 0.0, 0.0]
        if self.takeoff_alt is not None and mode in ("AUTO.TAKEOFF", "GUIDED"):
            if self.pos[2] >= self.takeoff_alt - 0.05:
                self.hold_point = [self.pos[0], self.pos[1], self.takeoff_alt]
                self.takeoff_alt = None
                if px4:
                    self._set_mode("AUTO.LOITER", "takeoff complete")
                    self.hold_point[2] = self.pos[2]
            else:
                return self._towards([self.hold_point[0], self.hold_point[1], self.takeoff_alt], self.cruise)
        if mode in ("AUTO.LAND", "LAND"):
            return self._descend()
        if mode in ("AUTO.RTL", "RTL"):
            return self._return(now)
        if mode == self.flavour.control_mode and self.goal is not None:
            goal = self.goal
            if goal[0] == "position":
                self._turn_to(goal[4])
                return self._towards(list(goal[1:4]), self.cruise, goal[5])
            if not px4 and now - self.goal_t > self.params["GUID_TIMEOUT"][0]:
                self.goal = None  # ArduCopter stops when velocity commands stop coming
                self.hold_point = list(self.pos)
            else:
                self.yaw_rate = goal[4]
                return self._limit(list(goal[1:4]))
        return self._towards(self.hold_point, self.max_speed) if self._airborne() else [0.0, 0.0, 0.0]

    def _last_setpoint_t(self) -> float:
        return self.setpoint_times[-1] if self.setpoint_times else -math.inf

    def _limit(self, v: list[float]) -> list[float]:
        horizontal = math.hypot(v[0], v[1])
        if horizontal > self.max_speed:
            v[0], v[1] = v[0] * self.max_speed / horizontal, v[1] * self.max_speed / horizontal
        v[2] = min(max(v[2], -self.max_descent), self.max_climb)
        return v

    def _towards(self, goal: list[float], speed: float,
                 feedforward: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> list[float]:
        """A position controller: the target's velocity (feed-forward) plus a proportional pull onto the
        target, with a creep speed at the end so a goal is reached rather than neared; horizontally
        at most `speed` (the cruise speed) and the vehicle's limit."""
        de, dn, du = goal[0] - self.pos[0], goal[1] - self.pos[1], goal[2] - self.pos[2]
        dist = math.hypot(de, dn)
        pull = max(dist * GAIN, min(CREEP_M_S, dist / TICK_S))
        scale = pull / dist if dist > 1e-9 else 0.0
        east, north = feedforward[0] + de * scale, feedforward[1] + dn * scale
        horizontal, cap = math.hypot(east, north), min(speed, self.max_speed)
        if horizontal > cap:
            east, north = east * cap / horizontal, north * cap / horizontal
        up = feedforward[2] + math.copysign(max(abs(du) * GAIN, min(CREEP_M_S, abs(du) / TICK_S)), du)
        return self._limit([east, north, up])

    def _turn_to(self, heading: Optional[float]) -> None:
        if heading is None:
            self.yaw_rate = 0.0
            return
        error = (heading - self.heading + 180.0) % 360.0 - 180.0
        self.yaw_rate = -max(-90.0, min(90.0, error * GAIN))  # ENU sign

    def _descend(self) -> list[float]:
        if not self._airborne():
            self.pos[2] = self._ground()
            self._set_armed(False)
            self._text("Landing detected", mavlink.MAV_SEVERITY_INFO)
            return [0.0, 0.0, 0.0]
        return [0.0, 0.0, -self.max_descent]

    def _return(self, now: float) -> list[float]:
        alt = self.params["RTL_RETURN_ALT"][0] if self.flavour.name == "px4" else self.params["RTL_ALT"][0] / 100.0
        far = math.hypot(self.pos[0], self.pos[1]) > 0.5
        if far and self.pos[2] < alt - 0.5:
            return [0.0, 0.0, self.max_climb]
        if far:
            return self._towards([0.0, 0.0, max(self.pos[2], alt)], self.cruise)
        return self._descend()

    def _check_fence(self) -> None:
        if self.flavour.name == "px4":
            action_value, ceiling = int(self.params["GF_ACTION"][0]), self.params["GF_MAX_VER_DIST"][0]
            active = action_value > 0 and (self.fence or ceiling > 0)
            action = PX4_FENCE_ACTIONS.get(action_value)
        else:
            action_value, ceiling = int(self.params["FENCE_ACTION"][0]), self.params["FENCE_ALT_MAX"][0]
            active = int(self.params["FENCE_ENABLE"][0]) == 1
            action = AP_FENCE_ACTIONS.get(action_value)
        if not active:
            return
        polygon = [self._en(item.x / 1e7, item.y / 1e7) for item in self.fence
                   if item.command == mavlink.MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION]
        outside = (len(polygon) >= 3 and not _inside(self.pos[0], self.pos[1], polygon)) or (
            ceiling > 0 and self.pos[2] > ceiling)
        if outside and not self._breached:
            self._breached = True
            self.failsafes.append((time.monotonic(), f"geofence breach -> {action or 'report'}"))
            self._text("Geofence breached")
            if action is not None:
                self._set_mode(action, "geofence breach")
        elif not outside:
            self._breached = False

    # -- messages out ------------------------------------------------------------------------------------
    def _telemetry(self, now: float) -> None:
        for name, hz in self._rates.items():
            if hz <= 0 or now < self._due[name]:
                continue
            self._due[name] = now + 1.0 / hz
            self._send(self._message(name, now))

    def _message(self, name: str, now: float) -> Any:
        boot_ms = int((now - self.boot) * 1000) & 0xFFFFFFFF
        if name == "HEARTBEAT":
            base = mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | (mavlink.MAV_MODE_FLAG_SAFETY_ARMED if self.armed else 0)
            status = mavlink.MAV_STATE_ACTIVE if self.armed else mavlink.MAV_STATE_STANDBY
            return mavlink.MAVLink_heartbeat_message(mavlink.MAV_TYPE_QUADROTOR, self.flavour.autopilot_id, base,
                                                     self.flavour.custom_mode(self.mode), status, 3)
        if name == "GLOBAL_POSITION_INT":
            self.track.append((now, *self.pos))
            lat, lon = self._latlon(self.pos[0], self.pos[1])
            return mavlink.MAVLink_global_position_int_message(
                boot_ms, int(round(lat * 1e7)), int(round(lon * 1e7)), int((self.home[2] + self.pos[2]) * 1000),
                int(self.pos[2] * 1000), int(self.vel[1] * 100), int(self.vel[0] * 100), int(-self.vel[2] * 100),
                int(self.heading * 100) % 36000)
        if name == "ATTITUDE":
            yaw = (math.radians(self.heading) + math.pi) % (2 * math.pi) - math.pi
            return mavlink.MAVLink_attitude_message(boot_ms, 0.0, 0.0, yaw, 0.0, 0.0, math.radians(-self.yaw_rate))
        sensors = mavlink.MAV_SYS_STATUS_SENSOR_3D_GYRO | mavlink.MAV_SYS_STATUS_SENSOR_GPS
        return mavlink.MAVLink_sys_status_message(sensors, sensors, sensors, 100, int(12600 + 4200 * self.battery),
                                                  1000 if self.armed else 50, int(round(self.battery * 100)),
                                                  0, 0, 0, 0, 0, 0)


def _readable(sockets: list[socket.socket], timeout_s: float) -> list[socket.socket]:
    """The sockets with a datagram waiting, after at most `timeout_s`. poll(), not select(): select
    cannot watch a descriptor numbered 1024 or more, which a long process (a soak) reaches."""
    poller = select.poll()
    for sock in sockets:
        poller.register(sock, select.POLLIN)
    ready = {fd for fd, _ in poller.poll(max(timeout_s, 0.0) * 1000.0)}
    return [sock for sock in sockets if sock.fileno() in ready]


def _inside(x: float, y: float, polygon: list[tuple[float, float]]) -> bool:
    """Ray casting; the boundary counts as either side."""
    inside = False
    for (x1, y1), (x2, y2) in zip(polygon, polygon[1:] + polygon[:1]):
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            inside = not inside
    return inside


def _on_word(word: str) -> bool:
    if word.lower() in ("on", "1", "true", "yes"):
        return True
    if word.lower() in ("off", "0", "false", "no"):
        return False
    raise ControlError(f"want on or off; got {word!r}")


def _ack_word(word: str) -> bool:
    if word.lower() in ("ack", "noack"):
        return word.lower() == "ack"
    raise ControlError(f"want ack or noack; got {word!r}")


def send_control(port: int, line: str, host: str = "127.0.0.1", timeout_s: float = 2.0) -> str:
    """Send one control line to a simulator's control port (`--control-port`); its answer."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout_s)
        sock.sendto(line.encode("utf-8"), (host, port))
        try:
            return sock.recvfrom(4096)[0].decode("utf-8", "replace")
        except TimeoutError:
            return f"error: no answer from the simulator's control port {host}:{port} within {timeout_s:g} s"


def _ignored(text: str) -> tuple[str, bool]:
    what, _, ack = text.partition(":")
    if ack not in ("", "ack", "noack") or command_id(what) is None and what.strip().upper() not in MESSAGE_TYPES:
        raise argparse.ArgumentTypeError(f"--ignore wants a MAV_CMD or message type, optionally :ack or :noack; "
                                         f"got {text!r}")
    return what, ack != "noack"


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"want a number >= 0; got {text!r}")
    return value


def _non_positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value <= 0):
        raise argparse.ArgumentTypeError(f"want a number <= 0; got {text!r}")
    return value


def _positive(text: str) -> float:
    value = _non_negative(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"want a number > 0; got {text!r}")
    return value


def _home(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) not in (2, 3):
        raise argparse.ArgumentTypeError(f"--home wants LAT,LON or LAT,LON,AMSL_M; got {text!r}")
    return values


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cityseeker_ros.core.vehicles.mavlink.simulator",
        description="A simulated PX4 or ArduPilot multirotor speaking MAVLink 2 over UDP.")
    parser.add_argument("--flavour", choices=("px4", "ardupilot"), default="px4")
    parser.add_argument("--port", type=int, default=14540, help="UDP port the link listens on (PX4 SITL: 14540)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--home", type=_home, default=(47.397742, 8.545594, 488.0), help="LAT,LON[,AMSL_M]")
    parser.add_argument("--system-id", type=int, default=1)
    parser.add_argument("--prearm-failure", default=None, help="refuse arming with this reason")
    parser.add_argument("--drop", type=float, default=0.0, help="fraction of datagrams lost each way")
    parser.add_argument("--duration", type=float, default=0.0, help="seconds to run (0: until Ctrl-C)")
    parser.add_argument("--cruise-speed", type=_positive, default=8.0, metavar="M_S",
                        help="the vehicle's own cruise speed for position targets (default 8 m/s)")
    parser.add_argument("--ignore-speed-change", action="store_true",
                        help="acknowledge MAV_CMD_DO_CHANGE_SPEED but keep flying at the cruise speed")
    parser.add_argument("--no-param-echo", action="store_true", help="store PARAM_SET without answering PARAM_VALUE")
    parser.add_argument("--ignore", type=_ignored, action="append", default=[], metavar="WHAT[:noack]",
                        help="never act on this MAV_CMD or message type (repeatable); :noack leaves a command "
                             "unanswered, else it is acknowledged ACCEPTED")
    parser.add_argument("--ground", type=_non_positive, default=0.0, metavar="M",
                        help="the ground's height relative to home away from it (<= 0: home on a roof or a hill top)")
    parser.add_argument("--ack-delay", type=_non_negative, default=0.0, metavar="S",
                        help="send every answer (COMMAND_ACK, PARAM_VALUE, ...) this many seconds late")
    parser.add_argument("--control-port", type=int, default=None, metavar="PORT",
                        help="answer control lines (mode_switch MODE [AFTER_S], drop_link S, low_battery F "
                             "[MODE], ignore WHAT [ack|noack], heed WHAT, ack_delay S, cruise_speed M_S, "
                             "ignore_speed_change on|off, param_echo on|off, state) on this UDP port (0: any)")
    parser.add_argument("--control-stdin", action="store_true", help="read the same control lines from stdin")
    args = parser.parse_args(argv)
    sim = MavlinkSimulator(args.flavour, args.port, args.host, args.home, system_id=args.system_id,
                           prearm_failure=args.prearm_failure, drop=args.drop, cruise_m_s=args.cruise_speed,
                           ignore_speed_change=args.ignore_speed_change, param_echo=not args.no_param_echo,
                           ack_delay_s=args.ack_delay, ground_m=args.ground)
    for what, ack in args.ignore:
        sim.ignore(what, ack)
    control = f"; control lines on udp {args.host}:{sim.serve_control(args.control_port)}" \
        if args.control_port is not None else ""
    sim.start()
    print(f"{args.flavour} simulator, system {args.system_id}: MAVLink 2 to udp {args.host}:{args.port} from "
          f"{sim.address[0]}:{sim.address[1]}; connect a link to udp://{args.host}:{args.port}{control}", flush=True)
    if args.control_stdin:
        def read_stdin() -> None:
            for line in sys.stdin:
                if line.strip():
                    print(sim.control(line), flush=True)
        threading.Thread(target=read_stdin, name="simulator control stdin", daemon=True).start()
    try:
        if args.duration > 0:
            time.sleep(args.duration)
        else:
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        sim.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
