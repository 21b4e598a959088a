"""Why the gate let a command through or held the vehicle: a machine-readable code for the node to
publish (and a test to assert on) next to a sentence for the operator."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class SafetyCode(str, Enum):
    OK = "ok"
    SPEED_CLAMPED = "speed_clamped"  # passed, slower than asked
    HOLD_REQUESTED = "hold_requested"  # the decision itself was HOLD
    NO_DECISION = "no_decision"  # decision watchdog expired
    HEARTBEAT_LOST = "heartbeat_lost"  # supervisor heartbeat stale or never seen
    ESTOP = "estop"  # e-stop latched
    OUTSIDE_GEOFENCE = "outside_geofence"
    ABOVE_MAX_ALTITUDE = "above_max_altitude"
    BELOW_MIN_ALTITUDE = "below_min_altitude"  # a goal under the floor (below ground)
    INVALID_COMMAND = "invalid_command"  # NaN/inf or an unknown command type
    RESET_REFUSED = "reset_refused"  # e-stop reset while a trigger is still asserted
    BAD_FRAME = "bad_frame"  # a velocity in a frame other than ENU: refused, not flown as ENU
    STALE_COMMAND = "stale_command"  # a command stamped too long ago (or ahead): refused, not flown as new


@dataclass(frozen=True)
class Check:
    """The answer of one safety monitor."""

    ok: bool
    code: SafetyCode
    reason: str


OK = Check(True, SafetyCode.OK, "ok")
