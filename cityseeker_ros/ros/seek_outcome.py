"""A Seek goal's feedback and end as plain values, and the lines `cityseeker seek` prints for them.

No rclpy here: the Seek client (nodes/seek_client.py) fills these from the action's messages,
and `cityseeker seek` (ros/launcher.py) prints a goal it refuses before anything starts, as the
server would, with the same line and JSON record.

The action's status (SUCCEEDED, ABORTED, CANCELED) is not in the line: a spent budget is
SUCCEEDED as an action (the goal ran its course) while its need was not met, and the two words
side by side read as a contradiction. The line says how the goal ended, in words that say one
thing: "arrived" (the policy stopped), "answered", "budget spent", "cancelled", "failed
(stalled|estop|error)", "pilot took over", "link lost", "rejected (CODE)". The JSON record keeps
the status.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

# `cityseeker seek`'s exit codes (and `python -m cityseeker_ros.nodes.seek_client`'s): the goal ran
# its course (arrived, answered, or its budget was spent), it ended otherwise (cancelled, failed), an
# error (no server, a node that failed, a bad configuration), the goal was rejected, a pilot took
# the vehicle, the vehicle bridge lost its link. The last two are the vehicle's, not the stack's:
# a script can tell them from a failure.
EXIT_SUCCEEDED, EXIT_ENDED, EXIT_ERROR, EXIT_REJECTED, EXIT_PILOT_OVERRIDE, EXIT_LINK_LOST = 0, 1, 2, 3, 4, 5
REJECTED_STATUS = "aborted"  # how the server ends a refused goal (rclpy's REJECT carries no reason)
ENDINGS = {"found": "arrived", "answered": "answered", "budget": "budget spent", "cancelled": "cancelled",
           "failed": "failed", "pilot_override": "pilot took over", "link_lost": "link lost"}
EXIT_OF = {"found": EXIT_SUCCEEDED, "answered": EXIT_SUCCEEDED, "budget": EXIT_SUCCEEDED,
           "rejected": EXIT_REJECTED, "pilot_override": EXIT_PILOT_OVERRIDE, "link_lost": EXIT_LINK_LOST}


@dataclass(frozen=True)
class SeekStep:
    """One feedback message, as plain values."""

    step: int
    steps_left: int
    node: str
    action: str
    heading_deg: Optional[float]
    direction: str
    reason: str
    distance_m: float
    lat: Optional[float]
    lon: Optional[float]

    def line(self) -> str:
        heading = f" heading {self.heading_deg:.0f} deg" if self.heading_deg is not None else ""
        direction = f" {self.direction}" if self.direction else ""
        reason = " ".join(self.reason.split())[:160]
        return (f"step {self.step} ({self.steps_left} left) at {self.node}: {self.action}{direction}{heading}, "
                f"{self.distance_m:.1f} m so far" + (f" - {reason}" if reason else ""))


@dataclass(frozen=True)
class SeekOutcome:
    """A goal's end: the action status (succeeded, aborted, canceled), the Seek outcome (found,
    answered, budget, cancelled, failed, rejected, pilot_override, link_lost), its code (a
    rejection's: busy, off_graph...; otherwise how it ended: stopped, answered, budget, cancelled,
    stalled, estop, pilot_override, link_lost, error), where it stopped and why, and its feedback."""

    status: str
    outcome: str
    code: str
    reason: str
    node: str
    lat: Optional[float]
    lon: Optional[float]
    path: list[str]
    steps: int
    distance_m: float
    feedback: list[SeekStep] = field(default_factory=list)
    answer: Optional[str] = None  # a question's answer
    answer_view: Optional[list] = None  # [index, heading_deg, relative] of the view it was read from

    @property
    def rejected(self) -> bool:
        """The server refused the goal; nothing moved."""
        return self.outcome == "rejected"

    def line(self) -> str:
        """`budget spent after 5 steps at n03299 (85.8 m walked): the need 'I am thirsty' was not
        satisfied within the budget of 5 steps`; `rejected (bad_need): the need is empty: ...`."""
        if self.rejected:
            return f"rejected ({self.code}): {self.reason}"
        ending = ENDINGS.get(self.outcome, self.outcome)
        if self.outcome == "failed" and self.code:
            ending += f" ({self.code})"
        steps = f"{self.steps} step{'' if self.steps == 1 else 's'}"
        return f"{ending} after {steps} at {self.node or '-'} ({self.distance_m:.1f} m walked): {self.reason}"


def rejection(code: str, reason: str) -> SeekOutcome:
    """A goal refused before it moved, as the server answers one."""
    return SeekOutcome(REJECTED_STATUS, "rejected", code, reason, "", None, None, [], 0, 0.0)


def exit_code(outcome: SeekOutcome) -> int:
    return EXIT_OF.get(outcome.outcome, EXIT_ENDED)


def write_json(outcome: SeekOutcome, path: Path | str) -> None:
    """The result and every feedback, as `--result FILE` / `--json FILE` write them."""
    with open(path, "w", encoding="utf-8") as out:
        json.dump(asdict(outcome), out)
