"""GNSS / odometry -> street-graph node and heading.

A live vehicle is never exactly on a panorama node, and GNSS jitters by metres, so the localiser
snaps to the nearest node with hysteresis: the current node is kept until another one is closer
by a margin on `confirm_fixes` consecutive fixes. Along a straight street the margin alone rules
out flicker for position noise up to +-margin / 2 (the distance difference changes by at most
2 m per metre moved); the confirmation covers independent noise beyond that (the defaults, 5 m
and 3 fixes, did not flicker in 1,000 simulated crossings at 0.01 m per fix under uniform +-3 m
noise, where 5 m alone flickered in 90% of them).

The margin is `hysteresis_m` capped at `hysteresis_fraction` (0.5) of the distance between the
current node and the challenger. Standing on a node B, B is closer than the current node A by
exactly |AB|, so a fixed margin >= |AB| would make B unreachable (Monaco has 214 directed edges
under 5 m; a live run stalled on one). With the cap, B wins on its own position under noise up
to +-|AB| / 4, and the flicker bound at the midpoint is the same +-|AB| / 4.

Nodes closer together than the GNSS noise cannot be told apart by position at all; the node the
vehicle was sent to (`expect`, the supervisor's goal) resolves them: it takes over with no
margin once it is within `snap_radius_m` and either no farther than any other node or within
`arrival_radius_m` (the GNSS noise scale: two nodes 5 cm apart are each nearest half the time),
and, once current, it is left only for a node closer by the full `hysteresis_m`. Without a goal
the localiser is still correct (every node is reachable), only less steady between such twins.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.directions import RelativeDirection, relative_direction
from cityseeker_ros.core.streets.geodesy import (
    circular_difference,
    destination,
    geodesic_m,
    initial_bearing_deg,
    normalize_heading,
)
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel


class LocalisationStatus(str, Enum):
    ON_NODE = "on-node"  # within snap_radius_m of the current node: the policy may decide here
    BETWEEN = "between"  # on the graph but not at a node, e.g. driving along an edge
    OFF_GRAPH = "off-graph"  # farther than off_graph_m from every node: do not trust node_id
    NO_FIX = "no-fix"  # no usable position


@dataclass(frozen=True)
class WalkableHeading:
    """One walkable heading of the current node, as the vehicle sees it. `relative_deg` is
    positive clockwise (to the right); `target` is where the action model's move leads."""

    index: int
    heading_deg: float
    relative_deg: Optional[float]
    direction: Optional[RelativeDirection]
    target: Optional[str]


@dataclass(frozen=True)
class Localisation:
    """One localiser answer. `node_id` is the current node (hysteresis applied) when on the
    graph, the nearest node when off-graph, None without a fix; `distance_m` is the distance
    to it. `heading_deg` is the vehicle heading (clockwise from north), None until known."""

    status: LocalisationStatus
    node_id: Optional[str]
    distance_m: Optional[float]
    heading_deg: Optional[float]
    heading_source: Optional[str]  # "given", "motion" or None
    walkable: tuple[WalkableHeading, ...]
    lat: Optional[float]
    lon: Optional[float]
    stamp: Optional[float]
    reason: str

    @property
    def on_graph(self) -> bool:
        return self.status in (LocalisationStatus.ON_NODE, LocalisationStatus.BETWEEN)


def _finite(*values: Optional[float]) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


class GraphLocaliser:
    """Stateful: feed every fix in time order with `update` (GNSS) or `update_local` (odometry)."""

    def __init__(self, graph: StreetGraph, actions: Optional[ActionModel] = None, snap_radius_m: float = 15.0,
                 hysteresis_m: float = 5.0, off_graph_m: float = 30.0, min_motion_m: float = 2.0,
                 confirm_fixes: int = 3, origin: Optional[tuple[float, float]] = None,
                 hysteresis_fraction: float = 0.5, arrival_radius_m: float = 2.0) -> None:
        for name, value in (("snap_radius_m", snap_radius_m), ("off_graph_m", off_graph_m),
                            ("min_motion_m", min_motion_m), ("arrival_radius_m", arrival_radius_m)):
            if not _finite(value) or value <= 0:
                raise ConfigError(f"localiser {name} must be a positive number of metres, got {value!r}")
        if not _finite(hysteresis_m) or hysteresis_m < 0:
            raise ConfigError(f"localiser hysteresis_m must be >= 0 metres, got {hysteresis_m!r}")
        if not _finite(hysteresis_fraction) or not 0 <= hysteresis_fraction < 1:
            raise ConfigError(f"localiser hysteresis_fraction must be in [0, 1), got {hysteresis_fraction!r}")
        if not isinstance(confirm_fixes, int) or confirm_fixes < 1:
            raise ConfigError(f"localiser confirm_fixes must be an integer >= 1, got {confirm_fixes!r}")
        if arrival_radius_m > snap_radius_m:
            raise ConfigError(f"localiser arrival_radius_m ({arrival_radius_m}) must be <= snap_radius_m "
                              f"({snap_radius_m})")
        if off_graph_m < snap_radius_m:
            raise ConfigError(f"localiser off_graph_m ({off_graph_m}) must be >= snap_radius_m ({snap_radius_m})")
        if origin is not None and (len(origin) != 2 or not _finite(*origin)):
            raise ConfigError(f"localiser origin must be (lat, lon), got {origin!r}")
        if len(graph) == 0:
            raise ConfigError("localiser needs a street graph with at least one node")
        self.graph = graph
        self.actions = actions if actions is not None else ActionModel(graph)
        self.snap_radius_m, self.hysteresis_m, self.off_graph_m = snap_radius_m, hysteresis_m, off_graph_m
        self.min_motion_m, self.confirm_fixes = min_motion_m, confirm_fixes
        self.hysteresis_fraction, self.arrival_radius_m = hysteresis_fraction, arrival_radius_m
        self.origin = origin
        self.expected: Optional[str] = None  # the node the vehicle was sent to (the supervisor's goal)
        self.reset()

    def expect(self, node_id: Optional[str]) -> None:
        """The node the vehicle was sent to, or None: it takes over with no margin once within the
        snap radius and nearest or within arrival_radius_m, and is then kept until another node
        is closer by the full hysteresis_m (module docstring)."""
        if node_id is not None and node_id not in self.graph:
            raise ConfigError(f"localiser expected node {node_id!r} is not in the street graph")
        if node_id != self.expected:
            self._challenger, self._streak = None, 0
        self.expected = node_id

    def margin_m(self, current: str, challenger: str) -> float:
        """How much closer `challenger` must be than `current` to take over (module docstring)."""
        if challenger == self.expected:
            return 0.0
        if current == self.expected:
            return self.hysteresis_m
        return min(self.hysteresis_m, self.hysteresis_fraction * self.graph.distance_m(current, challenger))

    def reset(self) -> None:
        """Forget the current node and motion heading (e.g. after a teleport in simulation); the
        expected node stays until `expect` changes it."""
        self._node: Optional[str] = None
        self._challenger: Optional[str] = None  # the node that beat the current one on the last fixes
        self._streak = 0
        self._anchor: Optional[tuple[float, float]] = None  # last fix a motion heading was measured from
        self._motion_heading: Optional[float] = None

    def update(self, lat: Optional[float], lon: Optional[float], heading_deg: Optional[float] = None,
               stamp: Optional[float] = None) -> Localisation:
        """Localise one fix. A None/NaN position gives NO_FIX and keeps the current node for the
        next fix; a None heading falls back to the bearing of motion between fixes."""
        if not _finite(lat, lon):
            heading, source = self._heading(heading_deg)
            return Localisation(LocalisationStatus.NO_FIX, None, None, heading, source, (), None, None, stamp,
                                "no position fix")
        heading, source = self._track(lat, lon, heading_deg)
        best, best_d = self.graph.nearest_nodes(lat, lon, 1)[0]  # the graph's KD-tree
        if best_d > self.off_graph_m:
            self._node = None  # re-snap from scratch when the vehicle comes back
            return Localisation(LocalisationStatus.OFF_GRAPH, best, best_d, heading, source, (), lat, lon, stamp,
                                f"off-graph: {best_d:.1f} m from the nearest node {best} "
                                f"(limit {self.off_graph_m:g} m)")
        self._snap(lat, lon, best, best_d)
        node = self.graph.nodes[self._node]
        dist = best_d if self._node == best else geodesic_m(lat, lon, node.lat, node.lon)
        status = LocalisationStatus.ON_NODE if dist <= self.snap_radius_m else LocalisationStatus.BETWEEN
        return Localisation(status, self._node, dist, heading, source, self._walkable(self._node, heading),
                            lat, lon, stamp, f"{status.value}: {dist:.1f} m from node {self._node} "
                            f"(snap radius {self.snap_radius_m:g} m)")

    def _snap(self, lat: float, lon: float, best: str, best_d: float) -> None:
        if self._node is None or (self._node == best and self.expected in (None, best)):
            self._node, self._challenger, self._streak = best, None, 0
            return
        here = self.graph.nodes[self._node]
        current_d = geodesic_m(lat, lon, here.lat, here.lon)
        if current_d > self.off_graph_m:  # a jump (first fix after a gap, teleport): no reason to hold on
            self._node, self._challenger, self._streak = best, None, 0
            return
        challenger = self._challenger_at(lat, lon, best, current_d)
        if challenger is None:
            self._challenger, self._streak = None, 0
            return
        self._streak = self._streak + 1 if challenger == self._challenger else 1
        self._challenger = challenger
        if self._streak >= self.confirm_fixes:
            self._node, self._challenger, self._streak = challenger, None, 0

    def _challenger_at(self, lat: float, lon: float, best: str, current_d: float) -> Optional[str]:
        """The node that beats the current one at this fix, if any: the expected node once it is
        within the snap radius and nearest or within the arrival radius, else the nearest node by
        its margin. Distances are geodesic on both sides, so centimetre edges compare exactly."""
        assert self._node is not None
        node = self.graph.nodes[best]
        best_d = geodesic_m(lat, lon, node.lat, node.lon)
        goal = self.expected
        if goal is not None and goal != self._node:
            there = self.graph.nodes[goal]
            goal_d = geodesic_m(lat, lon, there.lat, there.lon)
            if goal_d <= self.snap_radius_m and (goal_d <= min(best_d, current_d)
                                                 or goal_d <= self.arrival_radius_m):
                return goal
        if best != self._node and best_d < current_d - self.margin_m(self._node, best):
            return best
        return None

    def update_local(self, x_east_m: float, y_north_m: float, yaw_enu_rad: Optional[float] = None,
                     stamp: Optional[float] = None) -> Localisation:
        """Odometry in a local ENU frame (REP 103: x east, y north, yaw counter-clockwise from
        east) whose (0, 0) is the configured geographic `origin`."""
        if self.origin is None:
            raise ConfigError("localiser origin (lat, lon) of the odometry frame is not configured")
        if not _finite(x_east_m, y_north_m):
            return self.update(None, None, stamp=stamp)
        # Azimuthal equidistant inverse: the point lies at this geodesic distance and azimuth from the origin.
        azimuth = math.degrees(math.atan2(x_east_m, y_north_m))
        lat, lon = destination(self.origin[0], self.origin[1], azimuth, math.hypot(x_east_m, y_north_m))
        heading = None if not _finite(yaw_enu_rad) else normalize_heading(90.0 - math.degrees(yaw_enu_rad))
        return self.update(lat, lon, heading, stamp)

    def _heading(self, given: Optional[float]) -> tuple[Optional[float], Optional[str]]:
        if _finite(given):
            return normalize_heading(given), "given"
        if self._motion_heading is not None:
            return self._motion_heading, "motion"
        return None, None

    def _track(self, lat: float, lon: float, given: Optional[float]) -> tuple[Optional[float], Optional[str]]:
        """Bearing of motion once the vehicle has moved min_motion_m from the last anchor, so GNSS
        jitter while standing still does not spin the heading."""
        if self._anchor is None:
            self._anchor = (lat, lon)
        elif geodesic_m(self._anchor[0], self._anchor[1], lat, lon) >= self.min_motion_m:
            self._motion_heading = initial_bearing_deg(self._anchor[0], self._anchor[1], lat, lon)
            self._anchor = (lat, lon)
        return self._heading(given)

    def _walkable(self, node_id: str, heading: Optional[float]) -> tuple[WalkableHeading, ...]:
        targets = {m.index: m.edge.target for m in self.actions.moves(node_id)}
        out = []
        for i, h in enumerate(self.graph.nodes[node_id].walkable_headings):
            h = normalize_heading(h)
            rel = None if heading is None else circular_difference(h, heading)
            label = None if heading is None else relative_direction(h, heading)
            out.append(WalkableHeading(i, h, rel, label, targets.get(i)))
        return tuple(out)
