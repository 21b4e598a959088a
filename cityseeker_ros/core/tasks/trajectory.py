"""What an episode leaves: the path walked, the action at each step, why it ended, and the
answer given. Measures of every task family read it."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional


class EndReason(str, Enum):
    STOPPED = "stopped"
    BUDGET_EXHAUSTED = "budget_exhausted"
    INVALID_ACTION = "invalid_action"
    ERROR = "error"
    STALLED = "stalled"  # live: the vehicle made no progress towards its goal for stall_timeout_s
    ANSWERED = "answered"  # a question family's answer(text): it ends the episode where it stands


@dataclass
class Trajectory:
    path: list[str]
    # action per step: a view index, None = stop, BACK = a hop retraced by a backtrack
    headings: list[Any] = field(default_factory=list)
    end_reason: Optional[EndReason] = None
    error: Optional[str] = None
    answer: Optional[str] = None  # what answer(text) said, for families that ask a question

    @property
    def steps(self) -> int:
        return len(self.path) - 1
