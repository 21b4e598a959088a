"""The flight-rules monitor run live, beside a bridge: fed from several threads (a MAVLink reader, the
threads that send, a link wrapper, the node's callbacks), it judges on a thread of its own and calls
back on each violation, so a callback that trips the e-stop never runs on a thread the bridge or the
link waits on.

Observations are stamped on one monotonic clock by whoever makes them. They wait `reorder_s` in a
heap and are judged in time order, so two threads that stamp a few milliseconds apart, or a marker a
caller stamps with the moment it knows something happened (earlier than it could tell), still reach
the monitor in order; one that comes later than that is judged at the latest time already judged
(the monitor refuses time going back).

    live = LiveMonitor(load_limits("config/safety.yaml"), on_violation=print)
    conn.on_wire = live.mavlink_tap()            # both directions of a MAVLink connection
    live.mark("estop_trip", "operator")          # what only the caller knows
    ...
    live.close(); live.report()
"""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Optional

from cityseeker_ros.core.vehicles.monitor.limits import FlightLimits
from cityseeker_ros.core.vehicles.monitor.monitor import FlightMonitor, MonitorSettings
from cityseeker_ros.core.vehicles.monitor.observations import Decision, Marker, Observation, Violation
from cityseeker_ros.core.vehicles.monitor.report import monitor_report

log = logging.getLogger("cityseeker_ros.flight_monitor")

Clock = Callable[[], float]
WireTap = Callable[[str, Any, float], None]  # (direction "out" or "in", a decoded pymavlink message, t)
REORDER_S = 0.15  # an observation waits this long for earlier ones from slower threads


class LiveMonitor:
    """One FlightMonitor fed live. `feed`, `mark`, `decide` and the taps may be called from any thread;
    `on_violation(violation)` is called on the monitor's own thread, one violation at a time."""

    def __init__(self, limits: FlightLimits, settings: Optional[MonitorSettings] = None, *,
                 on_violation: Optional[Callable[[Violation], None]] = None, clock: Clock = time.monotonic,
                 reorder_s: float = REORDER_S, start: bool = True) -> None:
        self.monitor = FlightMonitor(limits, settings)
        self.clock, self.reorder_s = clock, float(reorder_s)
        self.on_violation = on_violation
        self.started_at = clock()
        self.late = 0  # observations that came after later ones were judged (judged at that later time)
        self.callback_errors = 0
        self._heap: list[tuple[float, int, Observation]] = []
        self._order = itertools.count()
        self._cv = threading.Condition()
        self._judge_lock = threading.Lock()  # one judgement at a time: the worker's, a flush's, the close's
        self._last_t = -float("inf")
        self._closed = False
        self._sources: dict[str, Counter[str]] = {}  # a tap's message counts, by tap name
        self._thread = threading.Thread(target=self._run, name="flight-monitor", daemon=True)
        if start:
            self._thread.start()

    # -- feeding (any thread) ------------------------------------------------------------------------
    def feed(self, obs: Observation) -> None:
        with self._cv:
            if self._closed:
                return
            heapq.heappush(self._heap, (obs.t, next(self._order), obs))
            self._cv.notify()

    def mark(self, kind: str, detail: str = "", t: Optional[float] = None) -> None:
        """A marker (observations.MARKER_KINDS) at `t` (now when None)."""
        self.feed(Marker(self.clock() if t is None else t, kind, detail))

    def decide(self, command: str, *, frame: str = "enu", stamp: Optional[float] = None,
               goal: Optional[tuple[float, float, float]] = None,
               velocity: Optional[tuple[float, float, float]] = None, t: Optional[float] = None) -> None:
        """A decision as it arrived (before any gate); `stamp` on this monitor's clock."""
        self.feed(Decision(self.clock() if t is None else t, command, frame=frame, stamp=stamp, goal=goal,
                           velocity=velocity))

    def mavlink_tap(self, name: str = "mavlink", **observer: Any) -> WireTap:
        """A callable for MavlinkConnection.on_wire: each message of both directions through the monitor's
        own MavlinkObserver (`observer`: its flavour, stack_system...). One observer for the tap's life, so
        a reconnect of the same link keeps what it learnt (the flavour, home)."""
        from cityseeker_ros.core.vehicles.monitor.mavlink_wire import MavlinkObserver  # pymavlink: only here

        wire = MavlinkObserver(**observer)
        lock = threading.Lock()
        self.add_source(name, wire.counts)

        def tap(direction: str, msg: Any, t: float) -> None:
            with lock:  # the observer keeps state: the reader and the senders take turns
                observations = wire.observe(msg, t)
            for obs in observations:
                self.feed(obs)

        return tap

    def add_source(self, name: str, counts: Counter[str]) -> None:
        """A tap's message counts ("stack TYPE", "vehicle TYPE"), summed into the report's messages."""
        self._sources[name] = counts

    # -- judging (the monitor's thread) --------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._closed:
                    due = self._heap[0][0] + self.reorder_s if self._heap else None
                    wait = None if due is None else due - self.clock()
                    if wait is not None and wait <= 0:
                        break
                    self._cv.wait(0.5 if wait is None else min(wait, 0.5))
                if self._closed:
                    return
            self._judge(self.clock() - self.reorder_s)

    def _take(self, until: float) -> list[Observation]:
        with self._cv:
            out = []
            while self._heap and self._heap[0][0] <= until:
                out.append(heapq.heappop(self._heap)[2])
            return out

    def _judge(self, until: float) -> list[Violation]:
        found: list[Violation] = []
        with self._judge_lock:
            for obs in self._take(until):
                if obs.t < self._last_t:
                    self.late += 1
                    obs = replace(obs, t=self._last_t)
                self._last_t = obs.t
                found += self.monitor.feed(obs)
        self._tell(found)
        return found

    def _tell(self, found: list[Violation]) -> None:
        for violation in found:
            if self.on_violation is None:
                continue
            try:
                self.on_violation(violation)
            except Exception:  # noqa: BLE001 - a failing listener never stops the monitor
                self.callback_errors += 1
                log.exception("flight monitor: the violation callback failed")

    def flush(self) -> list[Violation]:
        """Judge everything fed so far, now (tests; the end of a run). Returns what it found."""
        return self._judge(float("inf"))

    def close(self, t: Optional[float] = None) -> list[Violation]:
        """Judge what is left, then end the stream at `t` (now when None): a session end whose hold is
        overdue by then is a violation. Feeding after this is ignored."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        found = self._judge(float("inf"))
        with self._judge_lock:
            end = self.monitor.finish(max(self.clock() if t is None else t, self._last_t))
        self._tell(end)
        return found + end

    # -- what it found -------------------------------------------------------------------------------
    @property
    def violations(self) -> list[Violation]:
        return list(self.monitor.violations)

    def counts(self) -> dict[str, int]:
        """Violations by rule."""
        return dict(Counter(v.rule for v in self.monitor.violations))

    def report(self, **context: Any) -> dict[str, Any]:
        """The monitor's report (report.monitor_report) with the taps' message counts and the run's time."""
        messages: Counter[str] = Counter()
        for counts in self._sources.values():
            messages.update(counts)
        with self._judge_lock:
            return {**monitor_report(self.monitor, messages, **context),
                    "duration_s": round(self.clock() - self.started_at, 3), "late_observations": self.late,
                    "violations_by_rule": self.counts()}
