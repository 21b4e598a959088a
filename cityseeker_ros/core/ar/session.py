"""One AR trial's state on the server: every page message checked, counted and kept or dropped,
what each page still waits for before it may start a Seek, and the goal under way.

The page's own sensors can be wrong in ways ROS should never see: a fix whose accuracy radius is
wider than the street (it would snap to the wrong corner), a heading that is not a number, a
frame that is not a JPEG. They are counted by reason (`counts`) and dropped here, and a need is
refused with what is missing ("waiting for a better fix ...") rather than sent as a goal that
would start from a wrong place. Inputs are kept per page (core.ar.page): a page starts a Seek
only on what it sent itself, never on what another page left. Plain Python and single-threaded:
the server calls it from its event loop only.
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, Union

from cityseeker_ros.core.ar.page import PageInputs
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


@dataclass(frozen=True)
class Refusal:
    """Why a need was not sent as a goal: a code (the Seek server's where it is the same check,
    `waiting` when something is not ready yet, `busy`), one line for the page, and the keys of
    what is missing (server, camera, fix, heading) when the code is `waiting`."""

    code: str
    reason: str
    missing: tuple[str, ...] = ()


def check_settings(min_accuracy_m: float) -> float:
    """The accuracy threshold, or a ConfigError naming the parameter."""
    if isinstance(min_accuracy_m, bool) or not isinstance(min_accuracy_m, (int, float)) \
            or not 0 < float(min_accuracy_m) <= 1000:
        raise ConfigError(f"min_accuracy_m must be a number of metres in (0, 1000], got {min_accuracy_m!r}")
    return float(min_accuracy_m)


class ArSession:
    """`open_page()` names a page (one WebSocket) and `close_page(page)` forgets it; `frame(page,
    data)` and `text(page, text)` take what it sent and return what may go on (or None);
    `waiting(page)` says what it still needs; `need(page, ...)` decides whether a goal may be sent."""

    def __init__(self, min_accuracy_m: float = DEFAULT_MIN_ACCURACY_M, run_max_steps: int = 35,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.min_accuracy_m = check_settings(min_accuracy_m)
        self.run_max_steps, self.clock = run_max_steps, clock
        self.counts: Counter[str] = Counter()
        self.stack_ready = False  # the Seek server answered (set by the ROS side)
        self.stack_note = "the stack is starting"
        self.goal_active = False
        self.pages: dict[int, PageInputs] = {}
        self._next_page = 1
        self.last_drop = ""
        self.last_coarse = False  # the last text message was a fix coarser than the threshold

    # -- pages -----------------------------------------------------------------------------------

    def open_page(self) -> int:
        """A new page with nothing sent yet: its id for every later call."""
        page, self._next_page = self._next_page, self._next_page + 1
        self.pages[page] = PageInputs()
        return page

    def close_page(self, page: int) -> None:
        """The page went away: what it sent goes with it."""
        self.pages.pop(page, None)

    def _inputs(self, page: int) -> PageInputs:
        try:
            return self.pages[page]
        except KeyError:
            raise KeyError(f"AR session: no open page {page!r} (open_page() first)") from None

    # -- what a page sends ---------------------------------------------------------------------------

    def frame(self, page: int, data: bytes) -> Optional[Frame]:
        """A binary message: the frame to publish, or None (counted by why it was dropped)."""
        inputs = self._inputs(page)
        try:
            frame = parse_frame(data)
        except Malformed as exc:
            return self._drop(exc)
        self.counts["frame.accepted"] += 1
        inputs.frame_at = self.clock()
        return frame

    def text(self, page: int, text: Union[str, bytes]) -> Optional[PageMessage]:
        """A text message: the message to act on, or None. A fix coarser than the threshold is
        counted `fix.coarse` and kept from the localiser (the page is told it waits for a better
        one). A fix without a heading goes on with this page's own fresh heading, if it has one."""
        inputs = self._inputs(page)
        self.last_coarse = False
        try:
            message = parse_text(text)
        except Malformed as exc:
            return self._drop(exc)
        now = self.clock()
        if isinstance(message, Fix):
            inputs.fix, inputs.fix_at = message, now
            if message.heading_deg is not None:
                inputs.heading_deg, inputs.heading_at = message.heading_deg, now
            if message.accuracy_m > self.min_accuracy_m:
                self.counts["fix.coarse"] += 1
                self.last_coarse = True
                return None
            inputs.good_fix_at = now
            self.counts["fix.accepted"] += 1
            heading = inputs.heading(now)
            if message.heading_deg is None and heading is not None:
                message = Fix(message.lat, message.lon, message.accuracy_m, heading)
            return message
        if isinstance(message, Heading):
            inputs.heading_deg, inputs.heading_at = message.heading_deg, now
        kind = {Heading: "heading", Need: "need", Cancel: "cancel", Shown: "shown"}[type(message)]
        self.counts[f"{kind}.accepted"] += 1
        return message

    def _drop(self, exc: Malformed) -> None:
        self.counts[f"{exc.kind}.dropped.{exc.reason}"] += 1
        self.counts["dropped"] += 1
        self.last_drop = str(exc)
        return None

    # -- what a page waits for ------------------------------------------------------------------------

    def waiting(self, page: int) -> list[tuple[str, str]]:
        """(key, line) of each thing a Seek from `page` needs that is missing now, in the order to
        fix them: the stack, then this page's camera, a fix better than the threshold, its heading."""
        out = []
        if not self.stack_ready:
            out.append(("server", f"waiting for the server: {self.stack_note}"))
        return out + self._inputs(page).missing(self.clock(), self.min_accuracy_m)

    # -- goals --------------------------------------------------------------------------------------

    def need(self, page: int, need: Need) -> Optional[Refusal]:
        """None: send the goal (and it is then active); else why not. The need and budget are
        checked as the Seek server checks them, then that `page` itself has sent everything a Seek
        needs recently enough (its own heading included), then that no goal runs."""
        refused = check_request(SeekRequest(need.text, need.max_steps), self.run_max_steps)
        if refused is not None:
            self.counts[f"goal.refused.{refused.code}"] += 1
            return Refusal(refused.code, refused.reason)
        missing = self.waiting(page)
        if missing:
            self.counts["goal.refused.waiting"] += 1
            for key, _ in missing:
                self.counts[f"goal.refused.waiting.{key}"] += 1
            return Refusal("waiting", "; ".join(line for _, line in missing), tuple(key for key, _ in missing))
        if self.goal_active:
            self.counts["goal.refused.busy"] += 1
            return Refusal("busy", "a Seek is under way: cancel it first")
        self.goal_active = True
        self.counts["goal.sent"] += 1
        return None

    def ended(self) -> None:
        """The goal under way ended (its result came, or it was refused by the server)."""
        self.goal_active = False
