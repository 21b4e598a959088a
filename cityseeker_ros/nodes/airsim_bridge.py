"""A vehicle in AirSim behind the safety gate: commands in, state and camera out.

Subscribes `command` (cityseeker_interfaces/MotionCommand from the supervisor), `heartbeat` (std_msgs/Header;
liveness is judged by arrival time on this node's clock, never by the sender's stamp) and
`/estop` (std_msgs/Bool: true trips the latch, false only releases the source); `~/reset_estop`
(std_srvs/Trigger) clears the latch. The latch is kept in `estop_state_file`, so a restarted
bridge starts latched (and hovers) until the reset. A control timer runs core.vehicles.airsim.bridge.AirSimBridge.step()
at `control_rate_hz`, which asks core.vehicles.safety.SafetyGate what may happen now and sends motion or
one hold per transition. Publishes `~/fix` (NavSatFix), `~/odom` (Odometry, ENU about the anchor,
REP 103), `~/image` (+ `~/depth`) when a camera is set, `~/safety` (cityseeker_interfaces/SafetyStatus, on every
change and every `safety_period_s`) and /diagnostics. docs/airsim.md has the contract.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Optional

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image, NavSatFix
from std_msgs.msg import Bool, Header
from std_srvs.srv import Trigger

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.bridge import (
    AirSimBridge,
    BridgeLink,
    BridgeStatus,
    status_level,
    unguarded_config,
)
from cityseeker_ros.core.vehicles.airsim.client import load_client_module
from cityseeker_ros.core.vehicles.airsim.errors import AirSimError
from cityseeker_ros.core.vehicles.airsim.motion import MOTION_MODES
from cityseeker_ros.core.vehicles.safety import EStop, LatchFile, SafetyGate
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import convert, convert_vehicle, qos, typed
from cityseeker_ros.ros.parameters import AIRSIM_BRIDGE, declare, json_parameter
from cityseeker_ros.ros.schema import CommandMsg
from cityseeker_ros.ros.spin import spin

IMAGE_FORMATS = convert.IMAGE_FORMATS  # raw (Image rgb8), png, jpeg (CompressedImage)
# Heartbeats: best effort accepts both best-effort and reliable publishers; only arrival matters.
HEARTBEAT = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                       durability=DurabilityPolicy.VOLATILE)
# Commands: volatile, so a restarted bridge never acts on a latched stale command
# (volatile subscribers match transient-local publishers too, e.g. `ros2 topic pub`).
LIVE = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                  durability=DurabilityPolicy.VOLATILE)
# /estop is heard twice: as qos.ESTOP (reliable, transient-local: a restarted bridge gets the last
# value) and as LIVE, which also matches volatile publishers (the default QoS of most tools), so
# their e-stops are not dropped as "incompatible". A value heard twice changes nothing.


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigError(f"parameter {name} must be a positive number, got {value!r}")
    return float(value)


class AirSimBridgeNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("airsim_bridge", **kwargs)
        declare(self, AIRSIM_BRIDGE)
        p = {spec.name: self.get_parameter(spec.name).value for spec in AIRSIM_BRIDGE}
        if not p["anchor"]:
            raise ConfigError('parameter anchor is required: {"lat": .., "lon": .., "alt": .., "yaw_offset_deg": ..}')
        anchor = Anchor.from_config(json_parameter("anchor", p["anchor"]))
        if p["motion"] not in MOTION_MODES.names():
            raise ConfigError(f"parameter motion: unknown mode {p['motion']!r}; known: "
                              f"{', '.join(MOTION_MODES.names())}")
        if p["image_format"] not in IMAGE_FORMATS:
            raise ConfigError(f"parameter image_format must be one of {', '.join(IMAGE_FORMATS)}, "
                              f"got {p['image_format']!r}")
        if p["safety_config"]:
            safety = load_safety_config(p["safety_config"])
        elif p["motion"] == "teleport":
            safety = unguarded_config()
        else:
            raise ConfigError(f"parameter safety_config is required for motion {p['motion']!r}: a YAML file "
                              "with at least a geofence (config/safety.yaml is an example)")
        rates = {name: _positive(name, p[name]) for name in ("control_rate_hz", "state_rate_hz", "image_rate_hz",
                                                            "safety_period_s", "diagnostics_period_s")}
        load_client_module(p["client"])  # a missing client library fails now, with the install line
        self._guarded = bool(p["safety_config"])
        self._frame_id, self._child = p["frame_id"], p["child_frame_id"]
        self._camera, self._depth, self._image_format = p["camera"], bool(p["depth"]), p["image_format"]

        def make_link(role: str) -> BridgeLink:
            timeout = p["motion_timeout_s"] if role == "motion" else p["rpc_timeout_s"]
            link = BridgeLink(p["host"], int(p["port"]), client=p["client"], vehicle=p["vehicle"],
                              timeout_s=float(timeout), connect_timeout_s=float(p["connect_timeout_s"]),
                              raw_channel_order=p["raw_channel_order"])
            return link.connect()

        estop = EStop(LatchFile(self._estop_state_file(p["estop_state_file"])))
        if estop.latched:
            self.get_logger().error(f"starting with the e-stop latched ({estop.check().reason}, kept in "
                                    f"{estop.latch_file.path}): holding until ~/reset_estop")
        self._bridge = AirSimBridge(SafetyGate.from_config(safety, estop=estop), anchor, make_link,
                                    motion=p["motion"],
                                    motion_params=json_parameter("motion_params", p["motion_params"]),
                                    velocity_period_s=_positive("velocity_period_s", p["velocity_period_s"]),
                                    reconnect_period_s=_positive("reconnect_period_s", p["reconnect_period_s"]),
                                    state_from_pose=bool(p["state_from_pose"]))
        self._status: Optional[BridgeStatus] = None
        self._commands = self._rejected = self._heartbeats = 0
        self._image_error: Optional[str] = None

        self._fix_pub = self.create_publisher(NavSatFix, "~/fix", qos.STATE)
        self._odom_pub = self.create_publisher(Odometry, "~/odom", qos.STATE)
        self._safety_pub = self.create_publisher(typed.msg_type(BridgeStatus), "~/safety", qos.STATE)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        self._image_pub = self._depth_pub = None
        if self._camera:
            image_type = Image if self._image_format == "raw" else CompressedImage
            self._image_pub = self.create_publisher(image_type, "~/image", qos.CAMERA)
            if self._depth:
                self._depth_pub = self.create_publisher(Image, "~/depth", qos.CAMERA)
            self.create_timer(1.0 / rates["image_rate_hz"], self._publish_images)
        self.create_subscription(typed.msg_type(CommandMsg), "command", self._on_command, LIVE)
        self.create_subscription(Header, "heartbeat", self._on_heartbeat, HEARTBEAT)
        self.create_subscription(Bool, "/estop", self._on_estop, qos.ESTOP)
        self.create_subscription(Bool, "/estop", self._on_estop, LIVE)
        self.create_service(Trigger, "~/reset_estop", self._on_reset_estop)
        self.create_timer(1.0 / rates["control_rate_hz"], self._control)
        self.create_timer(1.0 / rates["state_rate_hz"], self._publish_state)
        self.create_timer(rates["safety_period_s"], self._publish_safety)
        self.create_timer(rates["diagnostics_period_s"], self._publish_diagnostics)

    def _estop_state_file(self, value: str) -> Path:
        """The parameter, or one file per node under $ROS_HOME (~/.ros), ROS's folder for state."""
        if value:
            return Path(value)
        home = Path(os.environ.get("ROS_HOME") or Path.home() / ".ros")
        return home / "cityseeker" / f"{self.get_fully_qualified_name().strip('/').replace('/', '.')}.estop.json"

    def destroy_node(self) -> None:
        self._bridge.close()
        super().destroy_node()

    def _stamp(self):
        return convert.stamp_from_ns(self.get_clock().now().nanoseconds)

    # -- inputs --------------------------------------------------------------------------------

    def _on_command(self, msg: Any) -> None:
        try:
            command = convert_vehicle.command_from_msg(typed.from_ros(msg))
        except ValueError as exc:
            self._rejected += 1
            self.get_logger().warning(f"malformed command ignored: {exc}")
            return
        self._commands += 1
        self._bridge.command(command)

    def _on_heartbeat(self, msg: Header) -> None:
        self._heartbeats += 1
        self._bridge.heartbeat()

    def _on_estop(self, msg: Bool) -> None:
        if msg.data:
            self._bridge.trip_estop("/estop", "e-stop topic true", held=True)
            self._control()  # hold at once, not at the next tick
        else:
            self._bridge.release_estop("/estop")

    def _on_reset_estop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        check = self._bridge.reset_estop()
        response.success, response.message = check.ok, check.reason if not check.ok else "e-stop reset"
        self._control()
        return response

    # -- outputs -------------------------------------------------------------------------------

    def _control(self) -> None:
        status = self._bridge.step()
        changed = self._status is None or status.key != self._status.key
        self._status = status
        if changed:
            self._publish_safety()
            if status.code == "link_error":
                self.get_logger().error(status.reason, throttle_duration_sec=10.0)

    def _publish_safety(self) -> None:
        if self._status is not None:
            self._safety_pub.publish(typed.to_ros(convert_vehicle.safety_msg(self._status, self._stamp())))

    def _publish_state(self) -> None:
        state = self._bridge.kinematics()
        if state is None:
            return
        stamp = self._stamp()
        self._fix_pub.publish(convert_vehicle.fix_from_kinematics(state, stamp, self._child))
        self._odom_pub.publish(convert_vehicle.odometry_from_kinematics(state, stamp, self._frame_id, self._child))

    def _publish_images(self) -> None:
        try:
            frame = self._bridge.grab(self._camera, depth=self._depth)
        except AirSimError as exc:
            self._image_error = str(exc)
            self.get_logger().warning(f"camera {self._camera!r}: {exc}", throttle_duration_sec=10.0)
            return
        if frame is None:
            return
        self._image_error = None
        stamp = self._stamp()
        self._image_pub.publish(convert_vehicle.camera_image(frame.rgb, stamp, self._child, self._image_format))
        if self._depth_pub is not None and frame.depth_m is not None:
            self._depth_pub.publish(convert_vehicle.depth_image(frame.depth_m, stamp, self._child))

    def _publish_diagnostics(self) -> None:
        status = self._status
        if status is None:
            return
        level = status_level(status)
        if level == "ok" and self._image_error:
            level = "warn"
        values = {"code": status.code, "moving": status.moving, "estop": status.estop,
                  "connected": status.connected, "motion": self._bridge.motion_name,
                  "safety": "gate" if self._guarded else "e-stop only (teleport, no safety_config)",
                  "commands": self._commands, "rejected_commands": self._rejected,
                  "heartbeats": self._heartbeats, "holds": self._bridge.holds}
        if self._image_error:
            values["camera_error"] = self._image_error
        publish_diagnostics(self, self._diag_pub, "vehicle", level, status.reason, values)


def main(args=None) -> None:
    spin(AirSimBridgeNode, "airsim_bridge", args)


if __name__ == "__main__":
    main()
