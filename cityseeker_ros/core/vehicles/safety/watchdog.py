"""Freshness monitors. A VLM decision takes seconds and may never come, so the flight loop runs on
its own and holds when the decision stream or the supervisor's heartbeat goes stale. Neither
latches: motion resumes with the next decision/heartbeat (the e-stop is the latching one)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.safety.codes import Check, SafetyCode

Clock = Callable[[], float]  # seconds, monotonic; injected so tests control time


class FreshnessMonitor:
    """OK while the last `feed` is at most `timeout_s` old; stale before the first feed."""

    what = "message"
    code = SafetyCode.NO_DECISION

    def __init__(self, timeout_s: float, clock: Clock = time.monotonic) -> None:
        if not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
            raise ConfigError(f"{self.what} timeout must be a positive number of seconds, got {timeout_s!r}")
        self.timeout_s = float(timeout_s)
        self.clock = clock
        self.last: Optional[float] = None

    def feed(self, now: Optional[float] = None) -> None:
        self.last = self.clock() if now is None else now

    def age(self, now: Optional[float] = None) -> Optional[float]:
        """Seconds since the last feed, None if never fed."""
        return None if self.last is None else (self.clock() if now is None else now) - self.last

    def check(self, now: Optional[float] = None) -> Check:
        age = self.age(now)
        if age is None:
            return Check(False, self.code, f"no {self.what} received yet")
        if age > self.timeout_s:
            return Check(False, self.code, f"no {self.what} for {age:.1f} s > {self.timeout_s:.1f} s")
        return Check(True, SafetyCode.OK, f"last {self.what} {age:.1f} s ago")


class DecisionWatchdog(FreshnessMonitor):
    """Fed whenever a decision arrives; the vehicle holds when decisions stop."""

    what = "decision"
    code = SafetyCode.NO_DECISION


class Heartbeat(FreshnessMonitor):
    """Motion only flows while the supervisor is alive (it beats even while a decision is pending)."""

    what = "supervisor heartbeat"
    code = SafetyCode.HEARTBEAT_LOST
