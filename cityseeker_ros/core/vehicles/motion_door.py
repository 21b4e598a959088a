"""The one door between the bridge and a link's motion calls, and how a hold shuts it (the motion
epoch gate, for every link).

Every motion job carries the epoch it was decided under; a hold (and every new job) starts a new
epoch. Each motion call is checked against the current epoch, and against the safety gate's
verdict of that moment, right before it is sent, under the door's lock: a call is either refused
(`MotionDropped`) or counted in flight before a hold bumps the epoch. The hold then sends the
link's hold, sends it again every `rehold_s` while a call admitted under an older epoch is still
out (on links whose requests may overtake each other, such as AirSim's two connections), and once
more after those calls returned. The hold never holds the lock while it calls the link, so a
stalled motion call delays neither the hold nor the next epoch.

A call admitted just before a hold may still be inside the link when the hold goes out. A link
whose call sends several messages (MAVLink's take_control: a setpoint stream, then a mode change)
asks `motion_allowed()` right before each send, under the lock its own hold takes, so that nothing
it sends for a superseded call reaches the vehicle after the hold. `motion_allowed()` also asks the
owner's `stop_decided` (an e-stop tripped, a Seek's end or a return requested): from the moment a
stop is decided, not from when its hold runs, which on a loaded machine can be a core's wait later
(the PX4 soak: a take-control's mode change 2 ms after a trip, before the hold's thread ran).
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

from cityseeker_ros.core.vehicles.link import LinkError

T = TypeVar("T")
_call = threading.local()  # the door call this thread is running: its "still current" check


def motion_allowed() -> bool:
    """For a link: the motion call this thread runs for a door is still current (no hold, newer
    job or decided stop since it was admitted). True on a thread that runs no door call (a hold, a
    direct user)."""
    check = getattr(_call, "check", None)
    return check is None or check()


class MotionDropped(Exception):
    """A motion call refused: a hold or a newer job came after its job was decided, or the safety
    gate no longer allows it."""


class MotionDoor:
    def __init__(self, rehold_s: float = 0.02, hold_timeout_s: float = 2.0,
                 stop_decided: Callable[[], bool] = lambda: False) -> None:
        self.rehold_s, self.hold_timeout_s = float(rehold_s), float(hold_timeout_s)
        self.stop_decided = stop_decided  # must not block: a link asks it under its own lock
        self._cond = threading.Condition()
        self._epoch = 0
        self._in_flight: Counter[int] = Counter()  # epoch -> motion calls admitted and not returned
        self._closed = False
        self.sent = 0  # motion calls admitted (for tests and diagnostics)
        self.dropped = 0
        self.interrupted = 0  # holds that came while a motion call was out (the race the door exists for)

    @property
    def epoch(self) -> int:
        with self._cond:
            return self._epoch

    def current(self, epoch: int) -> bool:
        """A call of the job opened as `epoch` may still send: no hold, newer job or decided stop
        since. Plain reads (an int, the owner's flags): a link asks it under its own lock."""
        return not self._closed and self._epoch == epoch and not self.stop_decided()

    def open(self) -> int:
        """A new job: its epoch, which makes every older job's remaining calls stale."""
        with self._cond:
            self._epoch += 1
            return self._epoch

    def send(self, epoch: int, allowed: Callable[[], bool], call: Callable[[], T]) -> T:
        """Run one motion call if its job's epoch is current and `allowed()` (the gate, asked now)."""
        with self._cond:
            if self._closed or epoch != self._epoch or not allowed():
                self.dropped += 1
                raise MotionDropped("a hold, a newer job or the safety gate came first")
            self._in_flight[epoch] += 1
            self.sent += 1
        outer = getattr(_call, "check", None)
        _call.check = lambda: self.current(epoch)
        try:
            return call()
        finally:
            _call.check = outer
            with self._cond:
                self._in_flight[epoch] -= 1
                if self._in_flight[epoch] <= 0:
                    del self._in_flight[epoch]
                self._cond.notify_all()

    def _older(self, epoch: int) -> int:
        return sum(n for e, n in self._in_flight.items() if e < epoch)

    def hold(self, hold: Callable[[], None]) -> int:
        """Refuse every call of the jobs given so far, then make `hold` the last word: send it,
        re-send while a call admitted earlier is out, and once more after it returned. Returns the
        holds sent; LinkError if those calls did not return within hold_timeout_s."""
        with self._cond:
            self._epoch += 1
            mine = self._epoch
            waited = self._older(mine) > 0
            self.interrupted += waited
        hold()
        sent = 1
        deadline = time.monotonic() + self.hold_timeout_s
        while True:
            with self._cond:
                if self._older(mine) == 0:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LinkError(f"a motion call did not return within {self.hold_timeout_s:g} s of a hold "
                                    f"({sent} holds sent)")
                self._cond.wait_for(lambda: self._older(mine) == 0, min(self.rehold_s, remaining))
            hold()
            sent += 1
        if waited and sent == 1:
            hold()
            sent += 1
        return sent

    def close(self) -> None:
        """Refuse every call from now on, without waiting."""
        with self._cond:
            self._closed = True
            self._epoch += 1

    @property
    def in_flight(self) -> int:
        with self._cond:
            return sum(self._in_flight.values())
