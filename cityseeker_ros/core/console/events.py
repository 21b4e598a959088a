"""What the stack reports to the console: one frozen record per kind of news.

The ROS side (or a test's fake stack) turns its messages into these; the console's state
(core.console.state) is built from them alone, so the page shows the same thing whether the
news came over DDS or from a replay. Angles are degrees clockwise from north; positions WGS 84."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union


@dataclass(frozen=True)
class VehicleFix:
    """Where the vehicle is and which way it faces (None: unknown, e.g. a fix without odometry)."""

    lat: float
    lon: float
    heading_deg: Optional[float] = None


@dataclass(frozen=True)
class GoingTo:
    """The street-graph node the vehicle is heading for ('' : none, it holds or has arrived)."""

    node: str


@dataclass(frozen=True)
class ViewSeen:
    """One view of a decision: its index (what the decision names), its heading, its direction
    relative to the vehicle ('front-left'...), and its image (JPEG or PNG bytes; b'' when none
    travelled with it)."""

    index: int
    heading_deg: float
    relative: str = ""
    image: bytes = b""
    media_type: str = "image/jpeg"


@dataclass(frozen=True)
class DecisionMade:
    """One decision at a node: the views the agent saw, the one it chose (None: it stopped or
    failed), its reason, the decision's latency, the step it was and the budget."""

    view_set_id: str
    node: str
    views: tuple[ViewSeen, ...]
    chosen_index: Optional[int]
    action: str  # move, stop, back, answer, error
    reason: str
    latency_s: float
    step: int
    max_steps: int


@dataclass(frozen=True)
class SafetyReport:
    """The vehicle bridge's safety status (SafetyStatus.msg): moving, the gate's code and reason,
    the e-stop latch, whether the link is up."""

    moving: bool
    code: str
    reason: str
    estop: bool
    connected: bool = True


@dataclass(frozen=True)
class LinkReport:
    """Which vehicle link the bridge drives (walker, mavlink, airsim) and the vehicle's mode as the
    link names it (e.g. OFFBOARD, GUIDED, HOLD, a pilot's POSCTL)."""

    link: str
    mode: str


@dataclass(frozen=True)
class BatteryReport:
    """The battery's remaining charge in [0, 1] (None: the vehicle reports none) and volts (NaN: none)."""

    fraction: Optional[float]
    voltage_v: float = float("nan")


@dataclass(frozen=True)
class Violation:
    """One flight rule the monitor found broken (its rule name and what it saw)."""

    rule: str
    detail: str


@dataclass(frozen=True)
class SeekStarted:
    """A Seek goal was accepted: its words and task family."""

    text: str
    family: str = "needs"


@dataclass(frozen=True)
class SeekProgress:
    """One step of the Seek under way (the action's feedback)."""

    node: str
    step: int
    steps_left: int
    reason: str
    distance_m: float


@dataclass(frozen=True)
class SeekEnded:
    """The Seek's result: its outcome (found, budget, cancelled, failed, rejected, answered,
    pilot_override, link_lost), its code and reason, where it ended and how far it went."""

    outcome: str
    code: str
    reason: str
    node: str = ""
    steps: int = 0
    distance_m: float = 0.0
    answer: str = ""


@dataclass(frozen=True)
class CommandDone:
    """What became of an operator's command: the stack's answer (a service's success and message,
    or the Seek server's acceptance)."""

    command: str
    ok: bool
    message: str = ""


ConsoleEvent = Union[VehicleFix, GoingTo, DecisionMade, SafetyReport, LinkReport, BatteryReport, Violation,
                     SeekStarted, SeekProgress, SeekEnded, CommandDone]
