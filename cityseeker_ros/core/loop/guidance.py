"""AR guidance: a decision at a node turned into what a walking user's device shows.

A phone or headset points somewhere else than the street the policy chose, so the direction is
given relative to the device heading (-180..180, positive clockwise: to the right), with the
eight-way label of core.streets.directions, the distance to the next node and the policy's reason.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.streets.directions import relative_direction
from cityseeker_ros.core.streets.geodesy import circular_difference, geodesic_m, initial_bearing_deg, normalize_heading
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.environment import Action

KINDS = ("move", "stop", "back")
_WORDS = {"FRONT": "Go straight ahead", "FRONT_RIGHT": "Bear right", "RIGHT": "Turn right",
          "BACK_RIGHT": "Turn sharply right", "BACK": "Turn around", "BACK_LEFT": "Turn sharply left",
          "LEFT": "Turn left", "FRONT_LEFT": "Bear left"}


@dataclass(frozen=True)
class Guidance:
    """What an AR device shows a walking user (Guidance.msg): which way to go relative to where
    the device points, how far to the next node, and why. `text` is the one line a device shows
    or speaks (the message's `reason`); the view set it answers and the stamp are set when it is
    published."""

    action: str  # move, stop or back
    node: str
    next_node: Optional[str]
    heading_deg: Optional[float]  # absolute, clockwise from north
    relative_deg: Optional[float]  # to the device heading, -180..180, positive clockwise
    direction: Optional[str]  # core.streets.directions.RelativeDirection value of relative_deg
    distance_m: Optional[float]  # to the next node
    reason: str
    confidence: Optional[float]
    text: str
    view_set_id: str = ""
    episode_id: str = ""
    stamp: Optional[Stamp] = None

    def __post_init__(self) -> None:
        if self.action not in KINDS:
            raise ValueError(f"action must be one of {', '.join(KINDS)}, got {self.action!r}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finite(value: Optional[float]) -> bool:
    return value is not None and math.isfinite(value)


def guide(graph: StreetGraph, node: str, kind: str, action_heading_deg: Optional[float] = None,
          next_node: Optional[str] = None, device_heading_deg: Optional[float] = None, reason: str = "",
          confidence: Optional[float] = None) -> Guidance:
    """Guidance for `kind` at `node`: "move" along `action_heading_deg` towards `next_node`, "back"
    to `next_node` (the node walked back to), or "stop" (arrived). A missing heading is the bearing
    to `next_node`; without a device heading the relative fields stay None."""
    if kind not in KINDS:
        raise ConfigError(f"guidance kind must be one of {', '.join(KINDS)}, got {kind!r}")
    for name, value in (("node", node), ("next_node", next_node)):
        if value is not None and value not in graph.nodes:
            raise ConfigError(f"guidance {name} {value!r} is not in street graph {graph.name!r}")
    here = graph.nodes[node]
    if kind == "stop":
        text = "You have arrived" + (f": {reason}" if reason else "")
        return Guidance("stop", node, None, None, None, None, 0.0, reason, confidence, text)
    if kind == "back" and next_node is None:
        raise ConfigError("guidance kind 'back' needs next_node: the node walked back to")
    heading = action_heading_deg
    if not _finite(heading) and next_node is not None:
        there = graph.nodes[next_node]
        heading = initial_bearing_deg(here.lat, here.lon, there.lat, there.lon)
    if not _finite(heading):
        raise ConfigError(f"guidance for {kind} at {node} needs action_heading_deg or next_node")
    heading = normalize_heading(heading)
    distance = None
    if next_node is not None:
        there = graph.nodes[next_node]
        distance = geodesic_m(here.lat, here.lon, there.lat, there.lon)
    relative = direction = None
    if _finite(device_heading_deg):
        relative = circular_difference(heading, device_heading_deg)
        direction = relative_direction(heading, device_heading_deg).value
    words = _WORDS[direction] if direction is not None else f"Head {heading:.0f}° from north"
    if kind == "back":
        words = f"Walk back to {next_node}: " + words[0].lower() + words[1:]
    parts = [words + (f" ({relative:+.0f}°)" if relative is not None else "")]
    if distance is not None:
        parts.append(f"{distance:.0f} m to the next corner" if kind == "move" else f"{distance:.0f} m")
    text = ", ".join(parts) + (f": {reason}" if reason else "")
    return Guidance(kind, node, next_node, heading, relative, direction, distance, reason, confidence, text)


def guide_action(graph: StreetGraph, node: str, action: Action, device_heading_deg: Optional[float] = None,
                 reason: str = "", confidence: Optional[float] = None,
                 actions: Optional[ActionModel] = None) -> Guidance:
    """`guide` for a core Action (what a decision's Answer carries): a move's heading is the node's
    walkable heading `action.index`, and its next node is where the action model's move leads."""
    if action.is_stop:
        return guide(graph, node, "stop", reason=reason, confidence=confidence)
    if action.answer is not None:  # a question answered: the person hears the answer where they stand
        said = guide(graph, node, "stop", reason=reason, confidence=confidence)
        return replace(said, text=f"Answer: {action.answer}")
    if action.back_to is not None:
        return guide(graph, node, "back", next_node=action.back_to, device_heading_deg=device_heading_deg,
                     reason=reason, confidence=confidence)
    headings = graph.nodes[node].walkable_headings if node in graph.nodes else ()
    if action.index is None or not 0 <= action.index < len(headings):
        raise ConfigError(f"guidance: move index {action.index} is not a walkable heading of node {node!r} "
                          f"({len(headings)} headings)")
    model = actions if actions is not None else ActionModel(graph)
    target = {m.index: m.edge.target for m in model.moves(node)}.get(action.index)
    return guide(graph, node, "move", headings[action.index], target, device_heading_deg, reason, confidence)
