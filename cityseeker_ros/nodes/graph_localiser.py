"""Where on the street graph the vehicle is, over ROS 2.

Subscribes to `fix` (sensor_msgs/NavSatFix) or `odom` (nav_msgs/Odometry, ENU per REP 103) and
publishes `~/location` (cityseeker_interfaces/Location, qos.STATE) on every fix: the current node with
hysteresis, the vehicle heading and the node's walkable headings relative to it. Off-graph and
no-fix are reported in the message and as a WARN diagnostic with the reason. The supervisor's
goals (`<supervisor_node>/command`, CommandMsg) name the node the vehicle was sent to: the goal
hint that tells nodes closer than the GNSS noise apart (core.sensing.localisation.graph_localiser). The
node only converts messages; core.sensing.localisation.GraphLocaliser does the work.
"""
from __future__ import annotations

from typing import Any, Optional

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import NavSatFix, NavSatStatus

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.sensing.localisation import GraphLocaliser, Localisation, LocalisationStatus
from cityseeker_ros.core.tasks.episode import World
from cityseeker_ros.core.vehicles.airsim.frames import Quaternion, yaw_from_quat
from cityseeker_ros.core.vehicles.safety.commands import Goal
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import convert, qos, typed
from cityseeker_ros.ros.parameters import GRAPH_LOCALISER, declare, world_parameter
from cityseeker_ros.ros.schema import CommandMsg
from cityseeker_ros.ros.spin import spin

# A supervisor goal is sent at a node's coordinates; farther than this from every node it names none.
GOAL_NODE_MATCH_M = 0.5

LEVELS = {LocalisationStatus.ON_NODE: "ok", LocalisationStatus.BETWEEN: "ok",
          LocalisationStatus.OFF_GRAPH: "warn", LocalisationStatus.NO_FIX: "warn"}


def _origin(text: str, world: World) -> tuple[float, float]:
    if not text.strip():
        return world.graph.frame.lat0, world.graph.frame.lon0
    try:
        lat, lon = (float(v) for v in text.split(","))
    except ValueError:
        raise ConfigError(f"parameter odom_origin must be 'lat,lon' or '', got {text!r}") from None
    return lat, lon


class GraphLocaliserNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("graph_localiser", **kwargs)
        declare(self, GRAPH_LOCALISER)
        p = {spec.name: self.get_parameter(spec.name).value for spec in GRAPH_LOCALISER}
        if p["input"] not in ("fix", "odom"):
            raise ConfigError(f"parameter input must be 'fix' or 'odom', got {p['input']!r}")
        self._world = world_parameter(p["data"], p["dataset"], p["city"], p["family"])
        origin = _origin(p["odom_origin"], self._world) if p["input"] == "odom" else None
        self._localiser = GraphLocaliser(self._world.graph, snap_radius_m=float(p["snap_radius_m"]),
                                         hysteresis_m=float(p["hysteresis_m"]), off_graph_m=float(p["off_graph_m"]),
                                         min_motion_m=float(p["min_motion_m"]), confirm_fixes=int(p["confirm_fixes"]),
                                         origin=origin, hysteresis_fraction=float(p["hysteresis_fraction"]),
                                         arrival_radius_m=float(p["arrival_radius_m"]))
        self._last: Optional[Localisation] = None
        self._fixes = 0
        self._location_pub = self.create_publisher(typed.msg_type(Localisation), "~/location", qos.STATE)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        if p["input"] == "fix":
            self.create_subscription(NavSatFix, "fix", self._on_fix, qos.STATE)
        else:
            self.create_subscription(Odometry, "odom", self._on_odom, qos.STATE)
        if p["supervisor_node"].strip():
            self.create_subscription(typed.msg_type(CommandMsg), f"{p['supervisor_node'].rstrip('/')}/command",
                                     self._on_command, qos.STATE)
        self.create_timer(float(p["diagnostics_period_s"]), self._publish_diagnostics)
        self.get_logger().info(f"localising {p['input']} on {self._world.city} ({len(self._world.graph)} nodes)")

    def _on_command(self, msg: Any) -> None:
        """A goal names the node the vehicle was sent to (the goal hint); a hold keeps it."""
        try:
            command = typed.from_ros(msg).command
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed command: {exc}")
            return
        if not isinstance(command, Goal):
            return
        node, distance = self._world.graph.nearest_nodes(command.lat, command.lon, 1)[0]
        expected = node if distance <= GOAL_NODE_MATCH_M else None
        if expected != self._localiser.expected:
            self.get_logger().info(f"goal hint: {expected or 'none (the goal is not at a node)'}")
            self._localiser.expect(expected)

    def _on_fix(self, msg: NavSatFix) -> None:
        stamp = convert.stamp_from_msg(msg.header.stamp)
        if msg.status.status < NavSatStatus.STATUS_FIX:
            loc = self._localiser.update(None, None, stamp=stamp.sec + stamp.nanosec * 1e-9)
        else:
            loc = self._localiser.update(msg.latitude, msg.longitude, stamp=stamp.sec + stamp.nanosec * 1e-9)
        self._publish(loc, stamp)

    def _on_odom(self, msg: Odometry) -> None:
        stamp = convert.stamp_from_msg(msg.header.stamp)
        position, o = msg.pose.pose.position, msg.pose.pose.orientation
        loc = self._localiser.update_local(position.x, position.y, yaw_from_quat(Quaternion(o.w, o.x, o.y, o.z)),
                                           stamp.sec + stamp.nanosec * 1e-9)
        self._publish(loc, stamp)

    def _publish(self, loc: Localisation, stamp: Stamp) -> None:
        changed = self._last is None or self._last.status != loc.status or self._last.node_id != loc.node_id
        self._last, self._fixes = loc, self._fixes + 1
        self._location_pub.publish(typed.location_to_ros(loc, stamp))
        if changed:  # a status change is news now, not at the next period
            self._publish_diagnostics()

    def _publish_diagnostics(self) -> None:
        loc = self._last
        values: dict[str, Any] = {"city": self._world.city, "fixes": self._fixes}
        if loc is None:
            publish_diagnostics(self, self._diag_pub, "localiser", "stale", "no fix received yet", values)
            return
        values.update(status=loc.status.value, node=loc.node_id, distance_m=loc.distance_m,
                      heading_deg=loc.heading_deg, expected=self._localiser.expected)
        publish_diagnostics(self, self._diag_pub, "localiser", LEVELS[loc.status], loc.reason, values)


def main(args=None) -> None:
    spin(GraphLocaliserNode, "graph_localiser", args)


if __name__ == "__main__":
    main()
