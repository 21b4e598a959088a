"""The named flight rules: one stable snake_case name and one statement each. docs/vehicles.md's table
is these lines; violations, reports and the randomized tests use the same names."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    name: str
    statement: str
    needs: str = ""  # markers a passive wire tap cannot see; such a rule is "not checked" there


NO_MOTION_AFTER_HOLD = "no_motion_after_hold"
PILOT_WINS = "pilot_wins"
INSIDE_FENCE = "inside_fence"
SPEED_LIMITS = "speed_limits"
NO_MOTION_AFTER_LINK_RETURN = "no_motion_after_link_return"
ENDS_IN_HOLD = "ends_in_hold"
REFUSES_BAD_FRAMES_AND_STALE_STAMPS = "refuses_bad_frames_and_stale_stamps"

RULES: dict[str, Rule] = {r.name: r for r in (
    Rule(NO_MOTION_AFTER_HOLD, "after the stack sends a hold, land, return or terminate, or an e-stop trips, nothing "
         "that moves (a setpoint, takeoff, arming, entering the control mode) leaves until a goal or velocity "
         "decided after that stop (and, for an e-stop, after its reset)", needs="decisions and e-stop markers"),
    Rule(PILOT_WINS, "once the armed vehicle reports a mode the stack did not ask for (a pilot's switch, the "
         "autopilot's own failsafe), no setpoint, arming, takeoff or entry into the control mode leaves "
         "until an operator's explicit take-control"),
    Rule(INSIDE_FENCE, "every position setpoint and takeoff target lies inside the fence, at or above the floor "
         "and at or below the ceiling; a velocity setpoint whose 1 s look-ahead from the reported position lies "
         "outside them is allowed only if it leads no further out (it heads back, or stops)"),
    Rule(SPEED_LIMITS, "the armed vehicle's observed ground and vertical speed stay within max_speed_m_s and "
         "max_vertical_speed_m_s plus the tolerance, except while a pilot holds it"),
    Rule(NO_MOTION_AFTER_LINK_RETURN, "from a link loss until a goal or velocity decided after the link came back, "
         "nothing that moves leaves", needs="link markers and decisions"),
    Rule(ENDS_IN_HOLD, "when a session ends (Seek end, cancel, shutdown, bridge close) the stack sends a hold (or "
         "the safety file's end_action; on a battery reported at or below rtl_battery_fraction, the return "
         "the bridge makes for it) within the deadline, unless the vehicle already holds on the stack's "
         "command, is disarmed, a pilot has it or the link is lost; nothing that moves leaves after the end "
         "until a new decision", needs="session-end markers and decisions"),
    Rule(REFUSES_BAD_FRAMES_AND_STALE_STAMPS, "a velocity decided in a frame other than ENU, or a command whose stamp "
         "is older than the maximum age or in the future, is never flown: no velocity setpoint along it and no "
         "position setpoint to its goal", needs="decisions"),
)}
