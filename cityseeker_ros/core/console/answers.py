"""What the console answers after Hold (or Cancel) and E-stop, in words true in the state the
vehicle bridge last reported.

Why here and not in each answer's caller: Hold and E-stop do not reach the vehicle in every
authority state (core.vehicles.authority). While a pilot has it the stack sends nothing at all,
e-stop included, until Take control back; while the link is down nothing reaches it; under a
latched e-stop its action (hold or land) stays in force. An answer that says "the vehicle holds"
then is the one thing an operator beside the vehicle must not be told."""
from __future__ import annotations

from enum import Enum
from typing import Optional

from cityseeker_ros.core.console.events import CommandDone, SafetyReport
from cityseeker_ros.core.vehicles.bridge import LINK_ERROR, PILOT_OVERRIDE, TERMINATED
from cityseeker_ros.core.vehicles.safety.codes import SafetyCode


class Situation(str, Enum):
    """Who the vehicle listens to, as the bridge's last safety status says."""

    UNKNOWN = "unknown"  # no status from the vehicle bridge yet
    STACK = "stack"  # the stack commands it: a hold or the e-stop's action reaches it
    PILOT = "pilot"  # a pilot took it (pilot_override): the stack sends nothing until Take control back
    LINK_DOWN = "link_down"  # the link is down: nothing reaches it until the link is back
    ESTOPPED = "estopped"  # the e-stop is latched: its action is in force until Reset
    TERMINATED = "terminated"  # the motors were cut


def situation(safety: Optional[SafetyReport]) -> Situation:
    """The situation of the bridge's latest status (`None`: none came yet). A pilot's takeover comes
    before a latched e-stop: the latch is set then, but the pilot keeps the sticks."""
    if safety is None:
        return Situation.UNKNOWN
    if safety.code == TERMINATED:
        return Situation.TERMINATED
    if safety.code == PILOT_OVERRIDE:
        return Situation.PILOT
    if safety.code == LINK_ERROR or not safety.connected:
        return Situation.LINK_DOWN
    if safety.estop or safety.code == SafetyCode.ESTOP.value:
        return Situation.ESTOPPED
    return Situation.STACK


PILOT_SAYS = "a pilot has the vehicle and the stack sends it nothing, E-stop included, until Take control back"
LINK_SAYS = "the link to the vehicle is down: nothing reaches it until the link is back"
ESTOP_ACTION = "the bridge's e-stop action (a hold, or a landing where so configured)"

_HOLD = {
    Situation.UNKNOWN: ": the supervisor sends a hold (no safety status from the vehicle bridge yet)",
    Situation.STACK: ": the supervisor holds the vehicle",
    Situation.PILOT: f", but {PILOT_SAYS}",
    Situation.LINK_DOWN: f", but {LINK_SAYS} (the bridge holds it first when it is)",
    Situation.ESTOPPED: f": the e-stop is latched and {ESTOP_ACTION} stays in force until Reset",
    Situation.TERMINATED: ": the motors were cut; nothing else reaches the vehicle",
}
_NOTHING = {
    Situation.UNKNOWN: "no safety status from the vehicle bridge yet (E-stop latches it whenever it hears it)",
    Situation.STACK: f"E-stop stops the vehicle with {ESTOP_ACTION}",
    Situation.PILOT: PILOT_SAYS,
    Situation.LINK_DOWN: LINK_SAYS,
    Situation.ESTOPPED: f"the e-stop is latched and {ESTOP_ACTION} stays in force until Reset",
    Situation.TERMINATED: "the motors were cut",
}
_ESTOP = {
    Situation.UNKNOWN: "the vehicle bridge latches it when it hears it (no safety status from it yet)",
    Situation.STACK: f"the latch is set and the vehicle stops with {ESTOP_ACTION}",
    Situation.PILOT: "the latch is set, but a pilot has the vehicle and keeps the sticks: nothing is sent to it "
                     "until Take control back, and then the e-stop's action",
    Situation.LINK_DOWN: "the latch is set, but the link to the vehicle is down: the bridge applies the e-stop's "
                         "action when the link is back",
    Situation.ESTOPPED: f"the latch was already set; {ESTOP_ACTION} stays in force until Reset",
    Situation.TERMINATED: "the latch is set; the motors were cut",
}


def hold_answer(command: str, cancelled: str, safety: Optional[SafetyReport]) -> CommandDone:
    """The answer to Hold or Cancel (`command`). `cancelled`: what was cancelled, in words ("the
    Seek is cancelled", "2 Seek goals cancelled"); "" when no Seek was under way (answered no)."""
    now = situation(safety)
    if not cancelled:
        return CommandDone(command, False, f"no Seek is under way: nothing to cancel; {_NOTHING[now]}")
    return CommandDone(command, True, cancelled + _HOLD[now])


def estop_answer(safety: Optional[SafetyReport]) -> CommandDone:
    """The answer to E-stop, once `/estop` true is published."""
    return CommandDone("estop", True, f"/estop true published: {_ESTOP[situation(safety)]}")
