"""What one page has sent and how fresh it is: its camera, its fix and its compass.

Each page (one WebSocket) keeps its own inputs, and a Seek starts only on the inputs of the page
that asks. A heading belongs to the page that sent it and expires HEADING_MAX_AGE_S after it came:
a page that opens after another has closed, or beside another one, never starts a Seek with a
compass reading it did not send (its arrow would point one way while the stack guides another).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.ar.protocol import Fix

FIX_MAX_AGE_S = 5.0  # as the Seek server's own freshness rule (a goal needs a fix younger than 5 s)
FRAME_MAX_AGE_S = 3.0  # the page sends at least one frame a second while the camera runs
# The page sends its heading at least once a second while its compass gives readings (a phone's
# sensor fires many times a second), so three seconds is three missed beats, not a slow link.
HEADING_MAX_AGE_S = 3.0
NEVER = float("-inf")


@dataclass
class PageInputs:
    """One page's latest inputs, with the session clock's time each came at (NEVER: not yet)."""

    frame_at: float = NEVER
    fix: Optional[Fix] = None
    fix_at: float = NEVER
    good_fix_at: float = NEVER  # the last fix within the accuracy threshold
    heading_deg: Optional[float] = None
    heading_at: float = NEVER

    def heading(self, now: float) -> Optional[float]:
        """This page's compass heading if it is younger than HEADING_MAX_AGE_S, else None."""
        if self.heading_deg is None or now - self.heading_at > HEADING_MAX_AGE_S:
            return None
        return self.heading_deg

    def missing(self, now: float, min_accuracy_m: float) -> list[tuple[str, str]]:
        """(key, line) of each input this page has not sent recently enough: camera, fix, heading."""
        out = []
        if now - self.frame_at > FRAME_MAX_AGE_S:
            out.append(("camera", "waiting for the camera: no frame from this page in the last "
                                  f"{FRAME_MAX_AGE_S:g} s (allow camera access)"))
        if now - self.good_fix_at > FIX_MAX_AGE_S:
            if self.fix is not None and now - self.fix_at <= FIX_MAX_AGE_S:
                out.append(("fix", f"waiting for a better fix: ±{self.fix.accuracy_m:.0f} m, needs "
                                   f"±{min_accuracy_m:.0f} m or better"))
            else:
                out.append(("fix", "waiting for a location fix"))
        if self.heading(now) is None:
            if self.heading_deg is None:
                said = "this page has sent none (allow motion and orientation access)"
            else:
                said = (f"this page's last is {now - self.heading_at:.1f} s old; a Seek needs one from the last "
                        f"{HEADING_MAX_AGE_S:g} s")
            out.append(("heading", f"waiting for the compass heading: {said}"))
        return out
