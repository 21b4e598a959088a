"""The console's state: one record built from the stack's events, and "stale" once none came for
a second.

The page draws only this record (as `Console.snapshot()`), so what it shows after a reconnect is
what it would have shown all along. Positions are also given in the world's `map` plane (east and
north metres about the street graph's origin, core.frames.geo_origin), the plane the offline map
(core.console.world_map) is drawn in. The clock is injected: tests step it, the server uses
time.monotonic.

The Seek panel's state: "idle"; "starting" once the Seek server took a goal (it accepts every goal
and aborts the ones it refuses, e.g. under a latched e-stop, so taken is not yet running); "running"
from its first step; "ended" with its result. A goal refused shows starting, then ended, never
running; a step that arrives after the end changes nothing."""
from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from cityseeker_ros.core.console.events import (
    BatteryReport,
    CommandDone,
    ConsoleEvent,
    DecisionMade,
    GoingTo,
    LinkReport,
    SafetyReport,
    SeekEnded,
    SeekProgress,
    SeekStarted,
    VehicleFix,
    Violation,
)
from cityseeker_ros.core.console.world_map import node_positions
from cityseeker_ros.core.frames.geo_origin import GeoOrigin, MapFrame
from cityseeker_ros.core.frames.path_history import PathHistory, PathPose
from cityseeker_ros.core.frames.transforms import IDENTITY

STALE_AFTER_S = 1.0  # the vehicle bridge publishes its fix and safety status several times a second
PATH_MAX_POSES = 1000
PATH_SPACING_M = 1.0
KEPT = 10  # violations and command answers shown


def _finite(value: Optional[float]) -> Optional[float]:
    return float(value) if value is not None and math.isfinite(value) else None


@dataclass
class ConsoleState:
    """What the console shows; `seq` counts the events applied, `decision_seq` the decisions (the
    page fetches a decision's images by it)."""

    seq: int = 0
    vehicle: Optional[dict[str, Any]] = None
    going_to: Optional[dict[str, Any]] = None
    decision: Optional[DecisionMade] = None
    decision_seq: int = 0
    safety: Optional[SafetyReport] = None
    link: Optional[LinkReport] = None
    battery: Optional[BatteryReport] = None
    violations: deque[Violation] = field(default_factory=lambda: deque(maxlen=KEPT))
    violation_count: int = 0
    seek: dict[str, Any] = field(default_factory=lambda: {"state": "idle"})
    answers: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=KEPT))
    answer_count: int = 0  # answers ever: the page shows a new one when this changes


class Console:
    """`apply(event)` folds one event into `state`; `snapshot()` is the record for the page, with
    `stale` true when no event came for STALE_AFTER_S (or none ever did). `node_xy(node)` places
    a street-graph node (None: not in the world); `map_frame` is the world's `map` plane."""

    def __init__(self, map_frame: MapFrame, node_xy: Callable[[str], Optional[tuple[float, float]]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.map_frame, self.node_xy, self.clock = map_frame, node_xy, clock
        self.state = ConsoleState()
        self.path = PathHistory(PATH_MAX_POSES, PATH_SPACING_M)
        self.last_event_at = -math.inf
        self._poses = 0

    @classmethod
    def for_map(cls, doc: dict[str, Any], clock: Callable[[], float] = time.monotonic) -> Console:
        """The console of a world's map document (core.console.world_map): its plane and its nodes."""
        nodes = node_positions(doc)
        return cls(MapFrame(GeoOrigin(doc["origin"]["lat"], doc["origin"]["lon"])), nodes.get, clock)

    def apply(self, event: ConsoleEvent) -> None:
        """Fold one event in. An event the console cannot place (a fix that is not a position) is
        refused with ValueError and changes nothing."""
        s = self.state
        if isinstance(event, VehicleFix):
            east, north, _ = self.map_frame.to_enu(event.lat, event.lon)
            s.vehicle = {"lat": event.lat, "lon": event.lon, "x": round(east, 2), "y": round(north, 2),
                         "heading_deg": _finite(event.heading_deg)}
            self._poses += 1  # the path's order is the order fixes came in
            self.path.add(PathPose(self._poses, (east, north, 0.0), IDENTITY))
        elif isinstance(event, GoingTo):
            xy = self.node_xy(event.node) if event.node else None
            s.going_to = None if xy is None else {"node": event.node, "x": round(xy[0], 2), "y": round(xy[1], 2)}
        elif isinstance(event, DecisionMade):
            s.decision, s.decision_seq = event, s.decision_seq + 1
        elif isinstance(event, SafetyReport):
            s.safety = event
        elif isinstance(event, LinkReport):
            s.link = event
        elif isinstance(event, BatteryReport):
            s.battery = event
        elif isinstance(event, Violation):
            s.violations.append(event)
            s.violation_count += 1
        elif isinstance(event, SeekStarted):
            s.seek = {"state": "starting", "text": event.text, "family": event.family, "step": 0, "steps_left": None,
                      "node": "", "reason": "", "distance_m": 0.0, "result": None}
            self.path.clear()  # the path is this Seek's, as the frames node restarts it with each run
            if s.vehicle is not None:
                self.path.add(PathPose(self._poses, (s.vehicle["x"], s.vehicle["y"], 0.0), IDENTITY))
        elif isinstance(event, SeekProgress):
            if s.seek["state"] != "ended":  # a step overtaken by its goal's end changes nothing
                s.seek = {**s.seek, "state": "running", "node": event.node, "step": event.step,
                          "steps_left": event.steps_left, "reason": event.reason, "distance_m": event.distance_m}
        elif isinstance(event, SeekEnded):
            s.seek = {**s.seek, "state": "ended", "result": {
                "outcome": event.outcome, "code": event.code, "reason": event.reason, "node": event.node,
                "steps": event.steps, "distance_m": event.distance_m, "answer": event.answer}}
        elif isinstance(event, CommandDone):
            s.answers.append({"command": event.command, "ok": event.ok, "message": event.message})
            s.answer_count += 1
        else:
            raise TypeError(f"not a console event: {type(event).__name__}")
        s.seq += 1
        self.last_event_at = self.clock()

    def stale(self) -> bool:
        return self.clock() - self.last_event_at > STALE_AFTER_S

    def snapshot(self) -> dict[str, Any]:
        """The record as JSON-ready values (the page's `state` message)."""
        s = self.state
        decision = None
        if s.decision is not None:
            d = s.decision
            decision = {"seq": s.decision_seq, "view_set_id": d.view_set_id, "node": d.node, "action": d.action,
                        "chosen_index": d.chosen_index, "reason": d.reason, "latency_s": d.latency_s,
                        "step": d.step, "max_steps": d.max_steps,
                        "views": [{"index": v.index, "heading_deg": v.heading_deg, "relative": v.relative,
                                   "image": bool(v.image)} for v in d.views]}
        battery = None if s.battery is None else {"fraction": _finite(s.battery.fraction),
                                                  "voltage_v": _finite(s.battery.voltage_v)}
        return {"seq": s.seq, "stale": self.stale(), "vehicle": s.vehicle, "going_to": s.going_to,
                "path": [[round(p.position[0], 1), round(p.position[1], 1)] for p in self.path.poses()],
                "decision": decision,
                "safety": None if s.safety is None else {
                    "moving": s.safety.moving, "code": s.safety.code, "reason": s.safety.reason,
                    "estop": s.safety.estop, "connected": s.safety.connected},
                "link": None if s.link is None else {"link": s.link.link, "mode": s.link.mode},
                "battery": battery, "violation_count": s.violation_count,
                "violations": [{"rule": v.rule, "detail": v.detail} for v in s.violations],
                "seek": s.seek, "answers": list(s.answers), "answer_count": s.answer_count}

    def view_image(self, decision_seq: int, index: int) -> Optional[tuple[bytes, str]]:
        """(bytes, media type) of view `index` of the current decision if `decision_seq` is still it."""
        d = self.state.decision
        if d is None or decision_seq != self.state.decision_seq:
            return None
        for view in d.views:
            if view.index == index and view.image:
                return view.image, view.media_type
        return None
