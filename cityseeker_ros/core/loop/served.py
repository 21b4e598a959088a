"""What the loops goals drive share (supervisor modes seek and episodes: core.loop.seek_server,
core.loop.episode_server): the refusal of a goal while the decision side is starting, and the
outputs that reach both the node and the server of those goals. The server exists only once
the loop does, so it attaches itself later as the listener."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, Protocol

from cityseeker_ros.core.loop.seek import SeekFeedback, SeekOutputs, SeekResult
from cityseeker_ros.core.loop.state_machine import Outputs

NOT_READY = "the supervisor is starting: the decision node is not active yet"


class GoalListener(Protocol):
    """What a goal server hears from its loop."""

    def feedback(self, feedback: SeekFeedback) -> None: ...

    def result(self, result: SeekResult) -> None: ...

    def outcome(self, record: dict[str, Any]) -> None: ...


class ForwardingOutputs(SeekOutputs):
    """Every output to `inner` (the node's messages); feedback, results and task outcomes also to
    `listener` (the goal server), set once it exists."""

    def __init__(self, inner: Outputs) -> None:
        self.inner = inner
        self.listener: Optional[GoalListener] = None

    def feedback(self, feedback: SeekFeedback) -> None:
        if self.listener is not None:
            self.listener.feedback(feedback)

    def result(self, result: SeekResult) -> None:
        if self.listener is not None:
            self.listener.result(result)

    def outcome(self, index: int, total: int, record: dict[str, Any]) -> None:
        self.inner.outcome(index, total, record)
        if self.listener is not None:
            self.listener.outcome(record)


def _forward(name: str) -> Callable[..., None]:
    def forward(self: ForwardingOutputs, *args: Any, **kwargs: Any) -> None:
        getattr(self.inner, name)(*args, **kwargs)
    forward.__name__ = name
    return forward


for _name in ("select", "ask", "act", "command", "guidance", "progress", "task_started", "task_ended", "status",
              "log"):
    setattr(ForwardingOutputs, _name, _forward(_name))
