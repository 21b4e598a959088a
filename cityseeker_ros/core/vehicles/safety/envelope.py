"""The envelope a motion command arrives in, checked before the bridge takes it as a decision: a
velocity must be in the frame the bridge flies (local ENU, REP 103), and every command must be
stamped recently. A velocity tagged "ned" or "base_link" flown as ENU goes the wrong way; a
command stamped in 1970 (an unset header) or far ahead (a clock gone wrong) is not a decision made
now, and taking it would feed the decision watchdog with it.

A hold is never refused: whatever its envelope, holding is the safe answer. The supervisor stamps
each command as it sends it, its one-second goal repeat included, so `max_age_s` bounds transport
delay and the clock offset between two computers, not how old the decision is (the gate's
decision watchdog bounds that).
"""
from __future__ import annotations

import math
from typing import Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.safety.codes import OK, Check, SafetyCode
from cityseeker_ros.core.vehicles.safety.commands import Command, Goal, Velocity

KINDS = ("goal", "velocity", "hold")
VELOCITY_FRAMES = ("enu", "")  # MotionCommand.msg: the velocity is local ENU; an empty frame_id means it
DEFAULT_MAX_AGE_S = 2.0  # the supervisor's goal repeat (1 s) re-stamps each command: 2 s is delay plus slack
MAX_AGE_BOUNDS_S = (0.05, 10.0)  # below: a loaded machine's delivery jitter; above: stale goals fly again


def check_max_age(value: object, name: str = "command_max_age_s") -> float:
    """The max-age parameter, or a ConfigError naming it and the allowed range."""
    low, high = MAX_AGE_BOUNDS_S
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise ConfigError(f"parameter {name} must be a number of seconds from {low:g} to {high:g}, got {value!r}")
    return float(value)


def kind_of(command: Command) -> str:
    """goal, velocity or hold: the kind check_envelope takes."""
    return "goal" if isinstance(command, Goal) else "velocity" if isinstance(command, Velocity) else "hold"


def check_envelope(kind: str, frame_id: Optional[str], stamp_s: float, now_s: float, max_age_s: float) -> Check:
    """Whether a command of `kind` (goal, velocity or hold) with header `frame_id` and stamp
    `stamp_s` (seconds, the sender's clock), received at `now_s` (the receiver's), may be taken
    as a decision: OK, BAD_FRAME or STALE_COMMAND with the reason in words."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "hold":
        return OK
    frame = (frame_id or "").strip()
    if kind == "velocity" and frame.lower() not in VELOCITY_FRAMES:
        return Check(False, SafetyCode.BAD_FRAME, f"a velocity in frame {frame!r} refused: the bridge flies local "
                                                  f"ENU only (header.frame_id 'enu' or empty)")
    if not math.isfinite(stamp_s) or stamp_s <= 0.0:
        return Check(False, SafetyCode.STALE_COMMAND, f"a {kind} with no valid stamp ({stamp_s!r}) refused: "
                                                      "stamp each command with the time it was sent")
    age = now_s - stamp_s
    if age > max_age_s:
        return Check(False, SafetyCode.STALE_COMMAND, f"a {kind} stamped {age:.1f} s ago refused (at most "
                                                      f"{max_age_s:g} s): not a decision made now")
    if -age > max_age_s:
        return Check(False, SafetyCode.STALE_COMMAND, f"a {kind} stamped {-age:.1f} s ahead of this clock "
                                                      f"refused (at most {max_age_s:g} s): are the clocks apart?")
    return OK
