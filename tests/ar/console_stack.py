"""The console's ROS side replaced by a recorder, for the server and browser tests: each command
the console hands over is recorded, in order, and nothing else happens. It stands in for the
rclpy bridge because what these tests check ends at the stack's interface (ar/console_web.py's
ConsoleStack): that a press arrives exactly once and that nothing arrives without the token."""
from __future__ import annotations

from typing import Any, Optional

from cityseeker_ros.core.ar.protocol import SeekGoal


class RecordingStack:
    def __init__(self, on_command: Optional[Any] = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.on_command = on_command  # called with (name, argument) after recording: a fake's reaction

    def _record(self, name: str, argument: Any = None) -> None:
        self.calls.append((name, argument))
        if self.on_command is not None:
            self.on_command(name, argument)

    def ask_hold(self) -> None:
        self._record("hold")

    def ask_estop(self) -> None:
        self._record("estop")

    def ask_reset_estop(self) -> None:
        self._record("reset_estop")

    def ask_take_control(self) -> None:
        self._record("take_control")

    def ask_return_to_launch(self) -> None:
        self._record("return_to_launch")

    def seek(self, goal: SeekGoal) -> None:
        self._record("seek", goal)

    def cancel(self) -> None:
        self._record("cancel")

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]
