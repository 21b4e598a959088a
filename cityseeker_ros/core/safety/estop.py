"""A latching e-stop. Any trigger stops motion until an explicit `reset`; a source that is still
asserted (a held button, a kill switch left on) refuses the reset, so releasing the vehicle is
always a deliberate second step after the cause is gone."""
from __future__ import annotations

from typing import Optional

from cityseeker_ros.core.safety.codes import OK, Check, SafetyCode


class EStop:
    def __init__(self) -> None:
        self._latched: Optional[str] = None  # why it latched
        self._asserted: dict[str, str] = {}  # source -> reason, for sources still held

    @property
    def latched(self) -> bool:
        return self._latched is not None

    def trigger(self, source: str, reason: str = "", held: bool = False) -> None:
        """Latch. `held=True` means the source stays asserted until `release(source)`."""
        why = f"e-stop from {source}" + (f": {reason}" if reason else "")
        if self._latched is None:
            self._latched = why
        if held:
            self._asserted[source] = why

    def release(self, source: str) -> None:
        """The source stopped asserting; the latch stays until `reset`."""
        self._asserted.pop(source, None)

    def reset(self) -> Check:
        if self._asserted:
            return Check(False, SafetyCode.RESET_REFUSED,
                         "e-stop reset refused: still asserted by " + ", ".join(sorted(self._asserted)))
        self._latched = None
        return OK

    def check(self) -> Check:
        return OK if self._latched is None else Check(False, SafetyCode.ESTOP, self._latched)
