"""One AR trial's state on the server: every page message checked, counted and kept or dropped,
what the trial still waits for before a Seek may start, and the goal under way.

The page's own sensors can be wrong in ways ROS should never see: a fix whose accuracy radius is
wider than the street (it would snap to the wrong corner), a heading that is not a number, a
frame that is not a JPEG. They are counted by reason (`counts`) and dropped here, and a need is
refused with what is missing ("waiting for a better fix ...") rather than sent as a goal that
would start from a wrong place. Plain Python and single-threaded: the server calls it from its
event loop only.
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, Union

from cityseeker_ros.core.ar.protocol import (
    Cancel,
    Fix,
    Frame,
    Heading,
    Malformed,
    Need,
    PageMessage,
    Shown,
    parse_frame,
    parse_text,
)
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.seek import SeekRequest, check_request

DEFAULT_MIN_ACCURACY_M = 20.0  # about half a block: the localiser snaps within 15 m of a node
FIX_MAX_AGE_S = 5.0  # as the Seek server's own freshness rule (a goal needs a fix younger than 5 s)
FRAME_MAX_AGE_S = 3.0  # the page sends at least one frame a second while the camera runs
HEADING_MAX_AGE_S = 10.0


@dataclass(frozen=True)
class Refusal:
    """Why a need was not sent as a goal: a code (the Seek server's where it is the same check,
    `waiting` when something is not ready yet, `busy`) and one line for the page."""

    code: str
    reason: str


def check_settings(min_accuracy_m: float) -> float:
    """The accuracy threshold, or a ConfigError naming the parameter."""
    if isinstance(min_accuracy_m, bool) or not isinstance(min_accuracy_m, (int, float)) \
            or not 0 < float(min_accuracy_m) <= 1000:
        raise ConfigError(f"min_accuracy_m must be a number of metres in (0, 1000], got {min_accuracy_m!r}")
    return float(min_accuracy_m)


class ArSession:
    """`frame(data)` and `text(text)` take what the page sent and return what may go on (or
    None); `waiting()` says what is missing; `need(...)` decides whether a goal may be sent."""

    def __init__(self, min_accuracy_m: float = DEFAULT_MIN_ACCURACY_M, run_max_steps: int = 35,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.min_accuracy_m = check_settings(min_accuracy_m)
        self.run_max_steps, self.clock = run_max_steps, clock
        self.counts: Counter[str] = Counter()
        self.stack_ready = False  # the Seek server answered (set by the ROS side)
        self.stack_note = "the stack is starting"
        self.goal_active = False
        self.last_fix: Optional[Fix] = None
        self._fix_at = self._good_fix_at = self._frame_at = self._heading_at = float("-inf")
        self.heading_deg: Optional[float] = None
        self.last_drop = ""
        self.last_coarse = False  # the last text message was a fix coarser than the threshold

    # -- what the page sends ---------------------------------------------------------------------

    def frame(self, data: bytes) -> Optional[Frame]:
        """A binary message: the frame to publish, or None (counted by why it was dropped)."""
        try:
            frame = parse_frame(data)
        except Malformed as exc:
            return self._drop(exc)
        self.counts["frame.accepted"] += 1
        self._frame_at = self.clock()
        return frame

    def text(self, text: Union[str, bytes]) -> Optional[PageMessage]:
        """A text message: the message to act on, or None. A fix coarser than the threshold is
        counted `fix.coarse` and kept from the localiser (the page is told it waits for a better one)."""
        self.last_coarse = False
        try:
            message = parse_text(text)
        except Malformed as exc:
            return self._drop(exc)
        now = self.clock()
        if isinstance(message, Fix):
            self.last_fix, self._fix_at = message, now
            if message.heading_deg is not None:
                self.heading_deg, self._heading_at = message.heading_deg, now
            if message.accuracy_m > self.min_accuracy_m:
                self.counts["fix.coarse"] += 1
                self.last_coarse = True
                return None
            self._good_fix_at = now
            self.counts["fix.accepted"] += 1
            if message.heading_deg is None and self.heading_deg is not None and self._fresh(self._heading_at,
                                                                                             HEADING_MAX_AGE_S):
                message = Fix(message.lat, message.lon, message.accuracy_m, self.heading_deg)
            return message
        if isinstance(message, Heading):
            self.heading_deg, self._heading_at = message.heading_deg, now
        kind = {Heading: "heading", Need: "need", Cancel: "cancel", Shown: "shown"}[type(message)]
        self.counts[f"{kind}.accepted"] += 1
        return message

    def _drop(self, exc: Malformed) -> None:
        self.counts[f"{exc.kind}.dropped.{exc.reason}"] += 1
        self.counts["dropped"] += 1
        self.last_drop = str(exc)
        return None

    def _fresh(self, at: float, max_age_s: float) -> bool:
        return self.clock() - at <= max_age_s

    # -- what it waits for ------------------------------------------------------------------------

    def waiting(self) -> list[tuple[str, str]]:
        """(key, line) of each thing a Seek needs that is missing now, in the order to fix them:
        the stack, the camera, a fix better than the threshold, the heading."""
        out = []
        if not self.stack_ready:
            out.append(("server", f"waiting for the server: {self.stack_note}"))
        if not self._fresh(self._frame_at, FRAME_MAX_AGE_S):
            out.append(("camera", "waiting for the camera: no frame in the last "
                                  f"{FRAME_MAX_AGE_S:g} s (allow camera access)"))
        if not self._fresh(self._good_fix_at, FIX_MAX_AGE_S):
            if self.last_fix is not None and self._fresh(self._fix_at, FIX_MAX_AGE_S):
                out.append(("fix", f"waiting for a better fix: ±{self.last_fix.accuracy_m:.0f} m, needs "
                                   f"±{self.min_accuracy_m:.0f} m or better"))
            else:
                out.append(("fix", "waiting for a location fix"))
        if not self._fresh(self._heading_at, HEADING_MAX_AGE_S):
            out.append(("heading", "waiting for the compass heading (allow motion and orientation access)"))
        return out

    # -- goals --------------------------------------------------------------------------------------

    def need(self, need: Need) -> Optional[Refusal]:
        """None: send the goal (and it is then active); else why not. The need and budget are
        checked as the Seek server checks them, then that nothing is missing and no goal runs."""
        refused = check_request(SeekRequest(need.text, need.max_steps), self.run_max_steps)
        if refused is not None:
            self.counts[f"goal.refused.{refused.code}"] += 1
            return Refusal(refused.code, refused.reason)
        missing = self.waiting()
        if missing:
            self.counts["goal.refused.waiting"] += 1
            return Refusal("waiting", "; ".join(line for _, line in missing))
        if self.goal_active:
            self.counts["goal.refused.busy"] += 1
            return Refusal("busy", "a Seek is under way: cancel it first")
        self.goal_active = True
        self.counts["goal.sent"] += 1
        return None

    def ended(self) -> None:
        """The goal under way ended (its result came, or it was refused by the server)."""
        self.goal_active = False
