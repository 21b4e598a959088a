"""The runner's eyes on the stack: prints on the terminal what the nodes report on /diagnostics
when it is not OK for a while, so a run that waits (no GNSS fix, no running episode, a holding
supervisor) says what it waits for instead of sitting silent.

`python -m cityseeker_ros.nodes.run_monitor [--grace S]`, started by ros/runner.py with the
runner's stdout. A status is printed once it has stayed non-OK for `grace` seconds (a node
starting up is briefly "waiting" and says nothing), again when its message changes, and once
when it is OK again. Not a node of the launch files: without the runner, `ros2 topic echo
/diagnostics` or rqt shows the same.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node

from cityseeker_ros.ros import qos
from cityseeker_ros.ros.spin import spin


def _level(value: Any) -> int:
    """DiagnosticStatus levels are `byte` fields: bytes of length 1 in rclpy."""
    return value[0] if isinstance(value, (bytes, bytearray)) else int(value)


OK, WARN, ERROR, STALE = (_level(v) for v in (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR,
                                              DiagnosticStatus.STALE))
LEVEL_NAMES = {WARN: "waiting", ERROR: "error", STALE: "waiting"}


@dataclass
class _Seen:
    level: int
    message: str
    since: float  # when this (level, message) was first seen
    reported: bool = False


class StatusReporter:
    """Which diagnostics lines to print: pure logic, fed (name, level, message, now)."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self._seen: dict[str, _Seen] = {}
        self._reported_bad: set[str] = set()  # names whose last printed line was not OK

    def update(self, name: str, level: int, message: str, now: float) -> Optional[str]:
        seen = self._seen.get(name)
        if seen is None or (seen.level, seen.message) != (level, message):
            seen = self._seen[name] = _Seen(level, message, now)
        if seen.reported:
            return None
        if level == OK:
            seen.reported = True
            if name in self._reported_bad:
                self._reported_bad.discard(name)
                return f"ok again: {name}: {message}"
            return None
        if now - seen.since >= self.grace_s:
            seen.reported = True
            self._reported_bad.add(name)
            return f"{LEVEL_NAMES.get(level, 'waiting')}: {name}: {message}"
        return None


class RunMonitor(Node):
    def __init__(self, grace_s: float) -> None:
        super().__init__("run_monitor")
        self._reporter = StatusReporter(grace_s)
        self._latest: dict[str, tuple[int, str]] = {}
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)
        self.create_timer(0.5, self._report)  # a status that stays bad is printed without a new message

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            self._latest[status.name] = (_level(status.level), status.message)
        self._report()

    def _report(self) -> None:
        now = time.monotonic()
        for name, (level, message) in self._latest.items():
            line = self._reporter.update(name, level, message, now)
            if line is not None:
                print(line, flush=True)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cityseeker_ros.nodes.run_monitor", description=__doc__)
    parser.add_argument("--grace", type=float, default=3.0, help="seconds a status must stay non-OK (default 3)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    spin(lambda: RunMonitor(args.grace), "run_monitor")


if __name__ == "__main__":
    main()
