"""The setpoint stream PX4's OFFBOARD mode needs (at least 2 Hz, started before the switch), held on a
short leash: it resends the owner's current setpoint only while the owner's keepalive is fresh. When
the owner's control loop crashes or stalls, the stream stops within the keepalive limit (the
autopilot's own offboard-loss failsafe is the last resort) and the owner's next call raises
StreamStopped, so a late owner holds; the vehicle never flies on a stale setpoint.

A stopped streamer stays stopped: it has no restart. Streaming again takes a new streamer, which only
an explicit `take_control()` makes.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, Optional, TypeVar

from cityseeker_ros.core.vehicles.link import LinkError, StreamStopped
from cityseeker_ros.core.vehicles.motion_door import MotionDropped

S = TypeVar("S")


class SetpointStreamer(Generic[S]):
    def __init__(self, send: Callable[[S], None], setpoint: S, rate_hz: float = 10.0, keepalive_s: float = 0.5,
                 name: str = "setpoints") -> None:
        if rate_hz <= 0 or keepalive_s <= 0:
            raise LinkError(f"setpoint stream needs a positive rate and keepalive; got {rate_hz} Hz, {keepalive_s} s")
        self._send = send
        self._setpoint = setpoint
        self.period_s = 1.0 / rate_hz
        self.keepalive_s = keepalive_s
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._last_keepalive = time.monotonic()
        self._waiting = 0  # owner calls in progress that wait on the vehicle
        self.stop_reason: Optional[str] = None
        self.stale = False  # stopped because the owner's keepalive went stale
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name=f"{name} streamer", daemon=True)

    def start(self) -> SetpointStreamer[S]:
        if self._thread.ident is not None:
            raise LinkError("a setpoint streamer runs once; take_control() makes a new one")
        self._last_keepalive = time.monotonic()
        self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        return not self._stopped.is_set()

    def keepalive(self) -> None:
        """The owner is alive. Refused once stopped: a stopped stream does not come back."""
        with self._lock:
            self._check_alive()
            self._last_keepalive = time.monotonic()

    def set(self, setpoint: S) -> None:
        """A new setpoint, sent from the next tick on; a new command is also a keepalive."""
        with self._lock:
            self._check_alive()
            self._setpoint = setpoint
            self._last_keepalive = time.monotonic()

    @contextmanager
    def owner_waiting(self) -> Iterator[None]:
        """The owner is blocked in a link call that waits on the vehicle (an ACK over a lossy radio can
        take seconds): its loop is alive, so the leash holds until the call returns."""
        with self._lock:
            self._waiting += 1
        try:
            yield
        finally:
            with self._lock:
                self._waiting -= 1
                self._last_keepalive = time.monotonic()

    def stop(self, reason: str, wait: bool = True) -> None:
        """Stop for good; `wait` joins the thread (the link's send refuses anything after an override
        on its own, so the reader thread stops without waiting)."""
        with self._lock:
            if self.stop_reason is None:
                self.stop_reason = reason
            self._stopped.set()
        if wait and self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)

    def _check_alive(self) -> None:
        if self._stopped.is_set():
            error = StreamStopped if self.stale else LinkError
            raise error(f"setpoint stream stopped ({self.stop_reason}); call take_control() to start a new one")

    def _run(self) -> None:
        while not self._stopped.is_set():
            with self._lock:
                if self._waiting:
                    self._last_keepalive = time.monotonic()
                age = time.monotonic() - self._last_keepalive
                if age > self.keepalive_s:
                    if self.stop_reason is None:  # not stopped by its owner meanwhile: the owner was late
                        self.stop_reason = (f"the owner's keepalive is {age:.2f} s old, over the "
                                            f"{self.keepalive_s:g} s limit")
                        self.stale = True
                    self._stopped.set()
                    return
                setpoint = self._setpoint
            try:
                self._send(setpoint)
            except MotionDropped:  # the owner's gate: a stop is on its way; the stop ends the stream
                self._stopped.wait(self.period_s)
                continue
            except LinkError as exc:  # a pilot took over, or the link closed: never retry
                with self._lock:
                    self.stop_reason = self.stop_reason or str(exc)
                    self._stopped.set()
                return
            self.sent += 1
            self._stopped.wait(self.period_s)
