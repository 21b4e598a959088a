"""What the monitor is fed: what left the stack, what the vehicle reported, and markers only the caller
knows. Link-neutral records, so the same rules judge MAVLink, AirSim and the walker; `t` is seconds on
one clock chosen by the caller (the monitor never reads a clock itself)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

# Sent.kind
POSITION, VELOCITY, TAKEOFF, ARM, DISARM = "position", "velocity", "takeoff", "arm", "disarm"
MODE, HOLD, LAND, RTL, TERMINATE, SPEED = "mode", "hold", "land", "rtl", "terminate", "speed"
SENT_KINDS = (POSITION, VELOCITY, TAKEOFF, ARM, DISARM, MODE, HOLD, LAND, RTL, TERMINATE, SPEED)
STOPS = frozenset({HOLD, LAND, RTL, TERMINATE})  # each gives the vehicle back to the autopilot or stops it

# Marker.kind
OPERATOR_TAKE_CONTROL, ESTOP_TRIP, ESTOP_RESET = "operator_take_control", "estop_trip", "estop_reset"
LINK_LOST, LINK_BACK, SESSION_END = "link_lost", "link_back", "session_end"
MARKER_KINDS = (OPERATOR_TAKE_CONTROL, ESTOP_TRIP, ESTOP_RESET, LINK_LOST, LINK_BACK, SESSION_END)

# Decision.command
GOAL_COMMAND, VELOCITY_COMMAND, HOLD_COMMAND = "goal", "velocity", "hold"
DECISION_COMMANDS = (GOAL_COMMAND, VELOCITY_COMMAND, HOLD_COMMAND)


@dataclass(frozen=True)
class Sent:
    """A message that left the stack towards the vehicle, as the vehicle saw it."""

    t: float
    kind: str  # one of SENT_KINDS
    lat: Optional[float] = None  # position setpoint or takeoff target (None: here / not given)
    lon: Optional[float] = None
    alt_m: Optional[float] = None  # metres above home (None: unknown, e.g. an AMSL target before home is known)
    velocity_enu: Optional[tuple[float, float, float]] = None  # m/s east, north, up (None: not given or not known)
    frame: str = ""  # the frame as sent, e.g. "global_relative_alt", "local_ned", "body_ned"
    mode: str = ""  # MODE/HOLD/LAND/RTL by mode change: the target mode's name
    control_mode: bool = False  # MODE: the target is the stack's control mode (PX4 OFFBOARD, ArduPilot GUIDED)
    speed_m_s: Optional[float] = None  # SPEED: the speed asked for

    def __post_init__(self) -> None:
        if self.kind not in SENT_KINDS:
            raise ValueError(f"Sent.kind must be one of {', '.join(SENT_KINDS)}, got {self.kind!r}")

    @property
    def moves(self) -> bool:
        """Can set the vehicle moving: a setpoint, a takeoff, arming, or entering the control mode."""
        return self.kind in (POSITION, VELOCITY, TAKEOFF, ARM) or (self.kind == MODE and self.control_mode)


@dataclass(frozen=True)
class Reported:
    """What the vehicle says about itself; a field left None was not in this report."""

    t: float
    lat: Optional[float] = None
    lon: Optional[float] = None
    alt_m: Optional[float] = None  # metres above home
    velocity_enu: Optional[tuple[float, float, float]] = None
    mode: Optional[str] = None
    armed: Optional[bool] = None
    battery: Optional[float] = None  # the charge left, 0..1


@dataclass(frozen=True)
class Decision:
    """A decision the stack made at `t` (its command, as decided, before any gate)."""

    t: float
    command: str  # one of DECISION_COMMANDS
    frame: str = "enu"  # a velocity's frame as tagged ("enu" or "" are the only ones to obey)
    stamp: Optional[float] = None  # the command's own stamp on the same clock as t (None: not stamped)
    goal: Optional[tuple[float, float, float]] = None  # GOAL: lat, lon, metres above home
    velocity: Optional[tuple[float, float, float]] = None  # VELOCITY: the three values as given, in `frame`

    def __post_init__(self) -> None:
        if self.command not in DECISION_COMMANDS:
            raise ValueError(f"Decision.command must be one of {', '.join(DECISION_COMMANDS)}, got {self.command!r}")


@dataclass(frozen=True)
class Marker:
    """Something the caller knows happened at `t`: an operator's take-control, an e-stop, the link, a session end."""

    t: float
    kind: str  # one of MARKER_KINDS
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in MARKER_KINDS:
            raise ValueError(f"Marker.kind must be one of {', '.join(MARKER_KINDS)}, got {self.kind!r}")


Observation = Union[Sent, Reported, Decision, Marker]


@dataclass(frozen=True)
class Violation:
    rule: str  # a name in rules.RULES
    t: float
    detail: str

    def to_dict(self) -> dict:
        return {"rule": self.rule, "t": round(self.t, 3), "detail": self.detail}

    def __str__(self) -> str:
        return f"t={self.t:.2f} s {self.rule}: {self.detail}"
