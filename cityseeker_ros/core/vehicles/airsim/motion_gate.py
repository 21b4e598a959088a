"""The one door between the bridge's motion worker and the vehicle, and how a hold shuts it.

AirSim runs one task per vehicle: every motion call, a hover included, cancels the running task,
and a cancelled call returns early without an error. A blocking move answers only when its task
ends, and requests on two connections (the worker's motion link, the control link's hover) may
reach the vehicle in either order. So a hover alone cannot stop a worker: a move already on its
way may land after it, and the worker's next call (the turn after a move) would start a new task.

The gate closes both holes. Every job the worker runs carries an epoch token; a hold (and every
new job) starts a new epoch. Each motion call is checked against the current epoch right before
it is sent, under the lock a hold also takes, and counted in flight until it returns: a call is
either refused (`MotionCancelled`) or counted before the hold begins. The hold then hovers, hovers
again every `rehover_s` while a counted call is still out (one that overtook the first hover is
cancelled by the next), and sends its last hover only after every counted call has returned. No
motion call is sent after that hover until a new job is given a new epoch.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Optional, TypeVar

from cityseeker_ros.core.vehicles.airsim.errors import AirSimError

T = TypeVar("T")


class MotionCancelled(Exception):
    """A motion call refused because a hold (or a newer job) came after its job started."""


class MotionGate:
    def __init__(self, rehover_s: float = 0.02, hold_timeout_s: float = 2.0) -> None:
        self.rehover_s, self.hold_timeout_s = float(rehover_s), float(hold_timeout_s)
        self._cond = threading.Condition()
        self._epoch = 0
        self._running = -1  # the token of the job the worker runs (worker thread only)
        self._in_flight = 0  # motion calls admitted and not yet returned
        self._closed = False

    # -- the worker's side ---------------------------------------------------------------------

    def begin(self, token: int) -> None:
        """The worker starts the job given `token` by `open()`: its calls pass while no hold or
        newer job came since."""
        self._running = token

    def send(self, call: Callable[[], T]) -> T:
        """Run one motion call if the running job is still current; refused otherwise."""
        with self._cond:
            if self._closed or self._running != self._epoch:
                raise MotionCancelled("a hold or a newer job came first")
            self._in_flight += 1
        try:
            return call()
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    # -- the control side ----------------------------------------------------------------------

    def open(self) -> int:
        """A new job: its token, which makes every older job's remaining calls stale."""
        with self._cond:
            self._epoch += 1
            return self._epoch

    def hold(self, hover: Optional[Callable[[], None]]) -> int:
        """Refuse every call of the jobs given so far, then make a hover the last word: hover,
        re-hover while a call admitted earlier is out, and hover once more after it returned.
        `hover=None` (a teleported vehicle has no task to cancel) only waits for those calls.
        Returns the hovers sent; AirSimError if the calls did not return in hold_timeout_s."""
        with self._cond:
            self._epoch += 1
            deadline, hovers = time.monotonic() + self.hold_timeout_s, 0
            while True:
                settled = self._in_flight == 0
                if hover is not None:  # under the lock: nothing can be admitted meanwhile
                    hover()
                    hovers += 1
                if settled:
                    return hovers
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AirSimError(f"a motion call did not return within {self.hold_timeout_s:g} s of a hold "
                                      f"({hovers} hovers sent)")
                self._cond.wait_for(lambda: self._in_flight == 0, min(self.rehover_s, remaining))

    def close(self) -> None:
        """The link is being dropped: refuse every call from now on, without waiting."""
        with self._cond:
            self._closed = True
            self._epoch += 1

    @property
    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight
