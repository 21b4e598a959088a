"""REP-105 frames for RViz and Foxglove: `map` fixed to the world's geographic origin (ENU), `odom`
and `base_link` from what the vehicle reports, and the scene drawn in `map`.

Fed by existing topics only, so no other node changes (`source`):
- `replay`: the benchmark world's `<replay_node>/pose` (PoseStamped, already in `map`) and its
  `<replay_node>/views` (the views' frames); odom coincides with map.
- `vehicle`: a vehicle bridge's `<vehicle_node>/fix` and `<vehicle_node>/odom` on any link (walker,
  MAVLink, AirSim); map -> odom puts base_link where the fix says (core/frames/vehicle_frames.py).

Publishes /tf (map -> odom -> base_link, and base_link -> view_<i> at each view's heading),
/tf_static (the `cameras` mounts and their optical frames), `~/odom` (nav_msgs/Odometry in odom),
`~/path` (nav_msgs/Path in map, bounded), `~/markers` (the street graph and the running task's
target area, latched), `~/origin` (cityseeker_interfaces/GeoPoint, latched: geographic_msgs has no
wheel for Jazzy, and GeoPoint.msg has its fields) and the origin on /diagnostics.

/tf and /tf_static carry tf2_msgs/TFMessage: a ROS 2 install's tf2_msgs, or on a pip-only machine
vendor/tf2_msgs, which `pip install -e .` builds (the PyPI Jazzy wheels have none). Where neither
is installed (a ROS 2 install without tf2_msgs) the node says so once, in its log and its
diagnostics, and publishes the rest. The logic lives in core/frames; this node converts.
"""
from __future__ import annotations

import math
from typing import Any, Optional

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, PoseStamped, TransformStamped
from nav_msgs.msg import Odometry
from nav_msgs.msg import Path as PathMsg
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from cityseeker_ros.core.frames.camera_mounts import parse_mounts, static_transforms
from cityseeker_ros.core.frames.geo_origin import GeoOrigin, MapFrame
from cityseeker_ros.core.frames.path_history import PathHistory, PathPose
from cityseeker_ros.core.frames.scene_geometry import graph_segments, target_area
from cityseeker_ros.core.frames.transforms import Transform, yaw_quaternion
from cityseeker_ros.core.frames.vehicle_frames import Fix, FrameNames, OdomPose, VehicleFrames
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.view_set import ViewSet, view_frame_id
from cityseeker_ros.core.vehicles.airsim.frames import compass_to_enu_yaw
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import qos, typed
from cityseeker_ros.ros.parameters import FRAMES, declare, json_parameter, world_parameter
from cityseeker_ros.ros.schema import EpisodeMsg
from cityseeker_ros.ros.spin import spin

SOURCES = ("replay", "vehicle")
# tf2's own profiles: /tf as tf2_ros's TransformBroadcaster, /tf_static latched (StaticTransformBroadcaster).
TF = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.VOLATILE)
TF_STATIC = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)
GRAPH, TARGET, TARGET_AREA, SATISFYING = range(4)
COLOURS = {GRAPH: (0.6, 0.6, 0.6, 0.8), TARGET: (1.0, 0.3, 0.1, 1.0), TARGET_AREA: (1.0, 0.3, 0.1, 0.8),
           SATISFYING: (1.0, 0.7, 0.1, 1.0)}


def tf_message_type() -> Optional[type]:
    """tf2_msgs/TFMessage where installed (the distribution's, or vendor/tf2_msgs from `pip install -e .`)."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        return None
    return TFMessage


def parse_origin(text: str) -> GeoOrigin:
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) not in (2, 3):
        raise ConfigError(f"parameter origin must be 'lat,lon' or 'lat,lon,alt' in degrees and metres, got {text!r}")
    return GeoOrigin(*values)


def _time(stamp_ns: int) -> Time:
    return Time(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)


def _ns(stamp: Time) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def transform_msg(transform: Transform, stamp_ns: Optional[int] = None) -> TransformStamped:
    msg = TransformStamped(header=Header(stamp=_time(transform.stamp_ns if stamp_ns is None else stamp_ns),
                                         frame_id=transform.parent), child_frame_id=transform.child)
    t, r = msg.transform.translation, msg.transform.rotation
    t.x, t.y, t.z = transform.translation
    r.x, r.y, r.z, r.w = transform.rotation
    return msg


class FramesNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("frames", **kwargs)
        declare(self, FRAMES)
        p = {spec.name: self.get_parameter(spec.name).value for spec in FRAMES}
        if p["source"] not in SOURCES:
            raise ConfigError(f"parameter source must be one of {', '.join(SOURCES)}, got {p['source']!r}")
        self._world = world_parameter(p["data"], p["dataset"], p["city"], p["family"]) if p["data"] else None
        if self._world is not None:
            if p["origin"]:
                raise ConfigError("parameters data and origin both set: `map`'s origin is the street graph's; "
                                  "leave origin ''")
            self._map = MapFrame.of_graph(self._world.graph)
        elif p["origin"]:
            self._map = MapFrame(parse_origin(p["origin"]))
        else:
            raise ConfigError("parameter data (a world folder) or origin ('lat,lon') is required: `map` needs "
                              "a geographic origin")
        try:
            self._names = FrameNames(p["map_frame"], p["odom_frame"], p["base_frame"])
            mounts = parse_mounts(json_parameter("cameras", p["cameras"], list))
            self._static = static_transforms(mounts, self._names.base_link)
            self._path = PathHistory(int(p["path_max_poses"]), float(p["path_min_spacing_m"]))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._radius_m = float(p["target_radius_m"])
        if not math.isfinite(self._radius_m) or self._radius_m <= 0:
            raise ConfigError(f"parameter target_radius_m must be a positive number, got {p['target_radius_m']!r}")
        self._frames = VehicleFrames(self._map, self._names,
                                     match_tolerance_ns=int(float(p["fix_match_tolerance_s"]) * 1e9))
        self._source = p["source"]
        self._episode_id: Optional[str] = None
        self._counts = {"poses": 0, "fixes": 0, "odometry": 0, "tf_messages": 0}

        tf_type = tf_message_type()
        self._tf_pub = self._tf_static_pub = None
        if tf_type is None:
            self.get_logger().warning("tf2_msgs is not installed: /tf and /tf_static are off; odometry, path, "
                                      "markers and the origin are published (on a ROS 2 install add its "
                                      "tf2_msgs package; pip only: pip install ./vendor/tf2_msgs)")
        else:
            self._tf_type = tf_type
            self._tf_pub = self.create_publisher(tf_type, "/tf", TF)
            self._tf_static_pub = self.create_publisher(tf_type, "/tf_static", TF_STATIC)
        self._odom_pub = self.create_publisher(Odometry, "~/odom", qos.STATE)
        self._path_pub = self.create_publisher(PathMsg, "~/path", qos.STATE)
        self._markers_pub = self.create_publisher(MarkerArray, "~/markers", qos.STATE)
        self._origin_pub = self.create_publisher(typed.msg_type(GeoOrigin), "~/origin", qos.STATE)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)

        if self._source == "replay":
            replay = p["replay_node"].rstrip("/")
            self.create_subscription(PoseStamped, f"{replay}/pose", self._on_map_pose, qos.STATE)
            self.create_subscription(typed.msg_type(ViewSet), f"{replay}/views", self._on_views, qos.STATE)
        else:
            vehicle = p["vehicle_node"].rstrip("/")
            self.create_subscription(NavSatFix, f"{vehicle}/fix", self._on_fix, qos.STATE)
            self.create_subscription(Odometry, f"{vehicle}/odom", self._on_odometry, qos.STATE)
        if p["episode_topic"]:
            self.create_subscription(typed.msg_type(EpisodeMsg), p["episode_topic"], self._on_episode, qos.STATE)
        self.create_timer(float(p["diagnostics_period_s"]), self._publish_diagnostics)
        self._tf_period_ns = int(float(p["tf_period_s"]) * 1e9)
        if self._tf_period_ns <= 0:
            raise ConfigError(f"parameter tf_period_s must be a positive number of seconds, got {p['tf_period_s']!r}")
        self._last_tf_ns = 0  # this node's clock when /tf last carried the vehicle
        self._views: list[Transform] = []
        if self._tf_pub is not None:
            self.create_timer(float(p["tf_period_s"]), self._refresh_tf)

        self._publish_once()

    # -- once ----------------------------------------------------------------------------------

    def _publish_once(self) -> None:
        origin = self._map.origin
        self._origin_pub.publish(typed.to_ros(origin))
        if self._tf_static_pub is not None and self._static:
            now = self.get_clock().now().nanoseconds
            self._tf_static_pub.publish(self._tf_type(transforms=[transform_msg(t, now) for t in self._static]))
        self._publish_markers()

    def _publish_markers(self) -> None:
        header = Header(stamp=self.get_clock().now().to_msg(), frame_id=self._names.map)
        markers = []
        if self._world is not None:
            segments = graph_segments(self._world.graph, self._map)
            markers.append(_marker(GRAPH, "graph", Marker.LINE_LIST, header, 0.5,
                                   [q for seg in segments for q in seg]))
            episode = self._world_episode(self._episode_id)
            area = target_area(self._world, episode, self._map, self._radius_m) if episode is not None else None
            markers.append(_marker(TARGET, "target", Marker.SPHERE_LIST, header, 6.0,
                                   [area.target] if area else []))
            markers.append(_marker(TARGET_AREA, "target_area", Marker.LINE_STRIP, header, 1.0,
                                   list(area.ring) if area else []))
            markers.append(_marker(SATISFYING, "satisfying", Marker.SPHERE_LIST, header, 4.0,
                                   list(area.satisfying) if area else []))
        self._markers_pub.publish(MarkerArray(markers=markers))

    def _world_episode(self, episode_id: Optional[str]):
        if self._world is None or not episode_id:
            return None
        return next((e for e in self._world.episodes if e.episode_id == episode_id and e.target in
                     self._world.graph.nodes), None)

    # -- inputs --------------------------------------------------------------------------------

    def _on_episode(self, msg: Any) -> None:
        try:
            episode: EpisodeMsg = typed.from_ros(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed episode: {exc}")
            return
        task = episode.task
        if self._path.on_run(None if task is None else task.key(), _ns(msg.header.stamp)):  # and its target
            self._episode_id = None if task is None else task.episode_id
            self._publish_markers()

    def _on_map_pose(self, msg: PoseStamped) -> None:
        stamp = _ns(msg.header.stamp)
        p, q = msg.pose.position, msg.pose.orientation
        yaw = math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))
        try:
            map_to_odom, odom_to_base = self._frames.on_map_pose(stamp, p.x, p.y, yaw)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a pose: {exc}")
            return
        self._counts["poses"] += 1
        self._publish_vehicle(stamp, [map_to_odom, odom_to_base])

    def _on_views(self, msg: Any) -> None:
        """Each view's frame under base_link, at the view's heading relative to the walker's facing."""
        if self._tf_pub is None:
            return
        try:
            view_set: ViewSet = typed.from_ros(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed view set: {exc}")
            return
        stamp = view_set.stamp.sec * 1_000_000_000 + view_set.stamp.nanosec
        facing = compass_to_enu_yaw(view_set.facing)
        views = [Transform(self._names.base_link, view_frame_id(v.index),
                           rotation=yaw_quaternion(compass_to_enu_yaw(v.heading) - facing), stamp_ns=stamp)
                 for v in view_set.views]
        self._views = views
        if views:
            self._tf_pub.publish(self._tf_type(transforms=[transform_msg(t) for t in views]))

    def _on_fix(self, msg: NavSatFix) -> None:
        self._counts["fixes"] += 1
        alt = msg.altitude if math.isfinite(msg.altitude) else 0.0
        try:
            corrected = self._frames.on_fix(Fix(_ns(msg.header.stamp), msg.latitude, msg.longitude, alt))
        except ValueError as exc:
            self.get_logger().warning(f"ignored a fix: {exc}")
            return
        if corrected is not None and self._frames.odom_to_base is not None:
            self._publish_vehicle(corrected.stamp_ns, [corrected, self._frames.odom_to_base])

    def _on_odometry(self, msg: Odometry) -> None:
        stamp = _ns(msg.header.stamp)
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        try:
            odom_to_base = self._frames.on_odometry(OdomPose(stamp, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w)))
        except ValueError as exc:
            self.get_logger().warning(f"ignored an odometry: {exc}")
            return
        self._counts["odometry"] += 1
        out = Odometry(header=Header(stamp=msg.header.stamp, frame_id=self._names.odom),
                       child_frame_id=self._names.base_link, pose=msg.pose, twist=msg.twist)
        self._odom_pub.publish(out)
        if self._frames.map_to_odom is not None:
            self._publish_vehicle(stamp, [self._frames.map_to_odom, odom_to_base], odometry=False)

    # -- outputs -------------------------------------------------------------------------------

    def _refresh_tf(self) -> None:
        now = self.get_clock().now().nanoseconds
        if now - self._last_tf_ns < self._tf_period_ns or self._frames.odom_to_base is None:
            return
        latest = [t for t in (self._frames.map_to_odom, self._frames.odom_to_base, *self._views) if t is not None]
        self._tf_pub.publish(self._tf_type(transforms=[transform_msg(t, now) for t in latest]))
        self._last_tf_ns = now

    def _publish_vehicle(self, stamp_ns: int, transforms: list[Transform], odometry: bool = True) -> None:
        if self._tf_pub is not None:
            self._tf_pub.publish(self._tf_type(transforms=[transform_msg(t, stamp_ns) for t in transforms]))
            self._counts["tf_messages"] += 1
            self._last_tf_ns = self.get_clock().now().nanoseconds
        base = self._frames.base_in_map()
        if base is None:
            return
        if odometry and self._source == "replay":  # the bridge's own odometry is republished as it comes
            odom = self._frames.odom_to_base
            msg = Odometry(header=Header(stamp=_time(stamp_ns), frame_id=self._names.odom),
                           child_frame_id=self._names.base_link)
            msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = odom.translation
            o = msg.pose.pose.orientation
            o.x, o.y, o.z, o.w = odom.rotation
            self._odom_pub.publish(msg)
        self._path.add(PathPose(stamp_ns, base.translation, base.rotation))
        header = Header(stamp=_time(stamp_ns), frame_id=self._names.map)
        poses = []
        for pose in self._path.poses():
            ps = PoseStamped(header=Header(stamp=_time(pose.stamp_ns), frame_id=self._names.map))
            ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = pose.position
            o = ps.pose.orientation
            o.x, o.y, o.z, o.w = pose.rotation
            poses.append(ps)
        self._path_pub.publish(PathMsg(header=header, poses=poses))

    def _publish_diagnostics(self) -> None:
        origin = self._map.origin
        base = self._frames.base_in_map()
        values: dict[str, Any] = {"source": self._source, "origin_lat": origin.lat, "origin_lon": origin.lon,
                                  "origin_alt": origin.alt, "tf": "on" if self._tf_pub is not None else
                                  "off: tf2_msgs not installed", "path_poses": len(self._path), **self._counts}
        if base is not None:
            values.update(base_east_m=round(base.translation[0], 3), base_north_m=round(base.translation[1], 3))
        level = "ok" if self._tf_pub is not None else "warn"
        message = "map, odom, base_link" if base is not None else "waiting for the vehicle's pose"
        publish_diagnostics(self, self._diag_pub, "frames", level, message, values)


def _marker(kind: int, ns: str, marker_type: int, header: Header, scale: float, points: list) -> Marker:
    """A marker without points is a DELETE: the previous run's target goes, and RViz is not given
    an empty line strip to complain about."""
    marker = Marker(header=header, ns=ns, id=kind, type=marker_type, action=Marker.ADD if points else Marker.DELETE,
                    points=[Point(x=float(x), y=float(y), z=0.0) for x, y in points],
                    color=ColorRGBA(**dict(zip("rgba", map(float, COLOURS[kind])))))
    marker.pose.orientation.w = 1.0
    marker.scale.x = marker.scale.y = marker.scale.z = scale
    return marker


def main(args=None) -> None:
    spin(FramesNode, "frames", args)


if __name__ == "__main__":
    main()
