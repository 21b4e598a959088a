"""A latching e-stop. Any trigger stops motion until an explicit `reset`; a source that is still
asserted (a held button, a kill switch left on) refuses the reset, so releasing the vehicle is
always a deliberate second step after the cause is gone.

With a LatchFile the latch outlives the process: it is saved when it latches, loaded (latched,
if the file says so or cannot be read) when the e-stop is made, and removed only by a reset. It
is saved before the caller holds the vehicle (one fsync, about 0.5 ms here), so a process killed
right after its hover still comes back latched."""
from __future__ import annotations

import logging
from typing import Optional

from cityseeker_ros.core.vehicles.safety.codes import OK, Check, SafetyCode
from cityseeker_ros.core.vehicles.safety.latch_file import LatchFile

log = logging.getLogger("cityseeker_ros.safety")


class EStop:
    def __init__(self, latch_file: Optional[LatchFile] = None) -> None:
        self.latch_file = latch_file
        self._latched: Optional[str] = latch_file.load() if latch_file is not None else None  # why it latched
        self._asserted: dict[str, str] = {}  # source -> reason, for sources still held

    @property
    def latched(self) -> bool:
        return self._latched is not None

    def trigger(self, source: str, reason: str = "", held: bool = False) -> None:
        """Latch. `held=True` means the source stays asserted until `release(source)`."""
        why = f"e-stop from {source}" + (f": {reason}" if reason else "")
        if self._latched is None:
            self._latched = why  # in memory first: a disk that fails cannot unlatch it
            if self.latch_file is not None:
                try:
                    self.latch_file.save(why)
                except OSError as exc:
                    log.error("e-stop latched, but %s could not be written (%s): a restart would forget it",
                              self.latch_file.path, exc)
        if held:
            self._asserted[source] = why

    def release(self, source: str) -> None:
        """The source stopped asserting; the latch stays until `reset`."""
        self._asserted.pop(source, None)

    def reset(self) -> Check:
        if self._asserted:
            return Check(False, SafetyCode.RESET_REFUSED,
                         "e-stop reset refused: still asserted by " + ", ".join(sorted(self._asserted)))
        if self.latch_file is not None:
            try:
                self.latch_file.clear()
            except OSError as exc:
                return Check(False, SafetyCode.RESET_REFUSED,
                             f"e-stop reset refused: cannot remove {self.latch_file.path} ({exc.strerror})")
        self._latched = None
        return OK

    def check(self) -> Check:
        return OK if self._latched is None else Check(False, SafetyCode.ESTOP, self._latched)
