"""One vehicle behind the safety gate, whatever its link (`link`: airsim, mavlink, walker): commands
in, safety status, state and camera out. docs/vehicles.md has the contract.

The node converts messages and calls core.vehicles.bridge.VehicleBridge, nothing more: the gate,
the motion door, the e-stop latch (kept in `estop_state_file`, so a restarted bridge starts
latched and holds until ~/reset_estop), hold-first on start and on reconnect all live there, on
its own threads. The link is made from `link_params` by ros/vehicle_link.py.

Subscribes `command` (cityseeker_interfaces/MotionCommand, volatile: a restarted bridge never acts
on a latched stale goal), `heartbeat` (std_msgs/Header, judged by arrival time), `/estop`
(std_msgs/Bool, heard both transient-local and volatile: true trips the latch, false only releases
the source). Services `~/reset_estop`, `~/return_to_launch`, `~/take_control` and `~/terminate` (std_srvs/Trigger;
terminate cuts the motors only when the parameter `terminate_confirmation` was set to "CUT MOTORS"
first, and clears it). Publishes `~/fix` (NavSatFix), `~/odom` (Odometry, ENU about the
link's origin, REP 103), `~/safety` (SafetyStatus, on every change and every `safety_period_s`),
`~/image` (+ `~/depth`) when the link has a camera, and /diagnostics.

A command is checked for its envelope before the bridge sees it (core.vehicles.safety.envelope): a
velocity in a frame other than ENU, or a goal or velocity stamped more than `command_max_age_s`
from this node's clock (1970, a clock ahead), is refused: it is no decision, so it neither feeds the
decision watchdog nor replaces the command in force. A refusal is logged once per kind until a
command passes, and rides on the ~/safety reason meanwhile. Every change of the status code (a link
lost and back, a pilot's takeover, an e-stop) is logged at once; only the same code's new reasons
are throttled (one line per STATUS_REPEAT_S).
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image, NavSatFix
from std_msgs.msg import Bool, Header
from std_srvs.srv import Trigger

from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError
from cityseeker_ros.core.streets.geodesy import LocalFrame
from cityseeker_ros.core.vehicles.bridge import (
    ESTOP_ACTIONS,
    TERMINATE_CONFIRMATION,
    BridgeStatus,
    VehicleBridge,
    status_level,
)
from cityseeker_ros.core.vehicles.safety import Check, EStop, LatchFile, SafetyConfig, SafetyGate
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.core.vehicles.safety.envelope import (
    DEFAULT_MAX_AGE_S,
    MAX_AGE_BOUNDS_S,
    check_envelope,
    check_max_age,
    kind_of,
)
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import convert, convert_vehicle, qos, typed, vehicle_link
from cityseeker_ros.ros.parameters import VEHICLE_BRIDGE, ParamSpec, declare, json_parameter
from cityseeker_ros.ros.schema import CommandMsg
from cityseeker_ros.ros.spin import spin

IMAGE_FORMATS = convert.IMAGE_FORMATS  # raw (Image rgb8), png, jpeg (CompressedImage)
# Heartbeats: best effort accepts both best-effort and reliable publishers; only arrival matters.
HEARTBEAT = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                       durability=DurabilityPolicy.VOLATILE)
# Commands and the second /estop subscription: volatile, so a restarted bridge never acts on a
# latched stale command, and publishers of any durability (`ros2 topic pub`) match.
LIVE = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                  durability=DurabilityPolicy.VOLATILE)
COMMAND_MAX_AGE = ParamSpec(
    "command_max_age_s", DEFAULT_MAX_AGE_S, f"a goal or velocity stamped further than this from the bridge's clock "
    f"(older, or ahead) is refused, not flown ({MAX_AGE_BOUNDS_S[0]:g} to {MAX_AGE_BOUNDS_S[1]:g} s); the "
    "supervisor stamps each command, its goal repeat included, as it sends it")
STATUS_REPEAT_S = 10.0  # the same status code with a new reason is logged at most this often


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigError(f"parameter {name} must be a positive number, got {value!r}")
    return float(value)


class VehicleBridgeNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("vehicle_bridge", **kwargs)
        # command_max_age_s belongs in ros/parameters.VEHICLE_BRIDGE; until it is there it is declared here
        specs = VEHICLE_BRIDGE + (() if any(spec.name == COMMAND_MAX_AGE.name for spec in VEHICLE_BRIDGE)
                                  else (COMMAND_MAX_AGE,))
        declare(self, specs)
        p = {spec.name: self.get_parameter(spec.name).value for spec in specs}
        self._max_age_s = check_max_age(p["command_max_age_s"])
        if p["image_format"] not in IMAGE_FORMATS:
            raise ConfigError(f"parameter image_format must be one of {', '.join(IMAGE_FORMATS)}, "
                              f"got {p['image_format']!r}")
        if p["estop_action"] not in ESTOP_ACTIONS:
            raise ConfigError(f"parameter estop_action must be one of {', '.join(ESTOP_ACTIONS)}, "
                              f"got {p['estop_action']!r}")
        rates = {name: _positive(name, p[name]) for name in (
            "state_rate_hz", "image_rate_hz", "safety_period_s", "diagnostics_period_s", "link_timeout_s",
            "connect_timeout_s", "reconnect_period_s", "velocity_period_s")}
        link_params = json_parameter("link_params", p["link_params"])
        vehicle_link.check_link_name(p["link"])
        flying = vehicle_link.flying(p["link"], link_params)
        if p["safety_config"]:
            safety = load_safety_config(p["safety_config"])
        elif flying:
            raise ConfigError(f"parameter safety_config is required for the {p['link']} link (it flies): a YAML "
                              "file with at least a geofence (config/safety.yaml is an example)")
        else:
            safety = SafetyConfig.estop_only()
        setup = vehicle_link.make_vehicle(p["link"], link_params, velocity_period_s=rates["velocity_period_s"])
        self._link_name, self._guarded = p["link"], bool(p["safety_config"])
        self._setup = setup
        self._frame_id, self._child = p["frame_id"], p["child_frame_id"]
        self._image_format = p["image_format"]
        self._origin = setup.origin
        self._frame: Optional[LocalFrame] = None if setup.origin is None else LocalFrame(*setup.origin[:2])

        estop = EStop(LatchFile(self._estop_state_file(p["estop_state_file"])))
        if estop.latched:
            self.get_logger().error(f"starting with the e-stop latched ({estop.check().reason}, kept in "
                                    f"{estop.latch_file.path}): holding until ~/reset_estop")
        self._bridge = VehicleBridge(
            setup.link, SafetyGate.from_config(safety, estop=estop), estop_action=p["estop_action"],
            rtl_battery_fraction=safety.rtl_battery_fraction, fence_breach_action=safety.fence_breach_action,
            link_timeout_s=rates["link_timeout_s"],
            connect_timeout_s=rates["connect_timeout_s"], reconnect_period_s=rates["reconnect_period_s"],
            velocity_period_s=rates["velocity_period_s"], state_period_s=min(0.1, 1.0 / rates["state_rate_hz"]))
        self._said = f"{vehicle_link.SAID}" if flying else ""  # lines the runner prints for a flying link
        self._bridge.on_event = lambda line: self.get_logger().info(f"{self._said}{line}")
        self._status: Optional[BridgeStatus] = None
        self._commands = self._rejected = self._heartbeats = 0
        self._refusal: Optional[Check] = None  # the last command's refusal, until a command passes
        self._logged: Optional[tuple[str, str, bool, float]] = None  # code, reason, error level, when: last logged
        self._image_error: Optional[str] = None
        self._connected_said = False

        self._fix_pub = self.create_publisher(NavSatFix, "~/fix", qos.STATE)
        self._odom_pub = self.create_publisher(Odometry, "~/odom", qos.STATE)
        self._safety_pub = self.create_publisher(typed.msg_type(BridgeStatus), "~/safety", qos.STATE)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        self._image_pub = self._depth_pub = None
        if setup.camera:
            image_type = Image if self._image_format == "raw" else CompressedImage
            self._image_pub = self.create_publisher(image_type, "~/image", qos.CAMERA)
            if setup.depth:
                self._depth_pub = self.create_publisher(Image, "~/depth", qos.CAMERA)
            self.create_timer(1.0 / rates["image_rate_hz"], self._publish_images)
        self.create_subscription(typed.msg_type(CommandMsg), "command", self._on_command, LIVE)
        self.create_subscription(Header, "heartbeat", self._on_heartbeat, HEARTBEAT)
        self.create_subscription(Bool, "/estop", self._on_estop, qos.ESTOP)
        self.create_subscription(Bool, "/estop", self._on_estop, LIVE)
        self.create_service(Trigger, "~/reset_estop", self._on_reset_estop)
        self.create_service(Trigger, "~/return_to_launch", self._on_return_to_launch)
        self.create_service(Trigger, "~/take_control", self._on_take_control)
        self.create_service(Trigger, "~/terminate", self._on_terminate)
        self.create_timer(0.05, self._watch_status)
        self.create_timer(1.0 / rates["state_rate_hz"], self._publish_state)
        self.create_timer(rates["safety_period_s"], self._publish_safety)
        self.create_timer(rates["diagnostics_period_s"], self._publish_diagnostics)
        guard = f"gated by {p['safety_config']}" if self._guarded else "e-stop only"
        where = getattr(getattr(setup.link, "endpoint", None), "describe", lambda: "")()
        waiting = f"; waiting for the autopilot's heartbeat on {where}" if where else "; connecting"
        self.get_logger().info(f"{self._said}{p['link']} link, {guard}{waiting}")

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
            received = typed.from_ros(msg)
            command = convert_vehicle.command_from_msg(received)
        except ValueError as exc:
            self._rejected += 1
            self.get_logger().warning(f"malformed command ignored: {exc}")
            return
        check = check_envelope(kind_of(command), msg.header.frame_id, received.stamp.seconds,
                               self.get_clock().now().nanoseconds * 1e-9, self._max_age_s)
        if not check.ok:
            self._refuse(check)
            return
        if self._refusal is not None:
            self._refusal = None
            self._publish_safety()
        self._commands += 1
        self._bridge.command(command)

    def _refuse(self, check: Check) -> None:
        """Not a decision: the bridge never sees it. One line per kind of refusal in a row."""
        self._rejected += 1
        if self._refusal is None or self._refusal.code != check.code:
            self.get_logger().warning(f"{self._said}command refused ({check.code.value}): {check.reason}")
        self._refusal = check
        self._publish_safety()

    def _on_heartbeat(self, msg: Header) -> None:
        self._heartbeats += 1
        self._bridge.heartbeat()

    def _on_estop(self, msg: Bool) -> None:
        if msg.data:
            self._bridge.trip_estop("/estop", "e-stop topic true", held=True)
        else:
            self._bridge.release_estop("/estop")

    def _on_reset_estop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        check = self._bridge.reset_estop()
        response.success, response.message = check.ok, check.reason if not check.ok else "e-stop reset"
        return response

    def _on_return_to_launch(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if not self._bridge.capabilities.rtl:
            response.success, response.message = False, f"the {self._link_name} link cannot return to launch"
            return response
        self._bridge.return_to_launch()
        response.success, response.message = True, "returning to launch until the next decision"
        return response

    def _on_take_control(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self._bridge.take_control()
        response.success, response.message = True, "the stack has control; holding until a new decision"
        return response

    def _on_terminate(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Cut the motors: only after `ros2 param set /vehicle_bridge terminate_confirmation "CUT MOTORS"`;
        the confirmation is used up by the call, whatever it answers."""
        from rclpy.parameter import Parameter

        confirm = str(self.get_parameter("terminate_confirmation").value)
        self.set_parameters([Parameter("terminate_confirmation", Parameter.Type.STRING, "")])
        try:
            self._bridge.terminate(confirm)
        except CitySeekerError as exc:
            response.success, response.message = False, f"terminate refused: {exc}"
            self.get_logger().error(response.message)
            return response
        self.get_logger().fatal(f"terminate confirmed ({TERMINATE_CONFIRMATION!r}): cutting the motors")
        response.success, response.message = True, "motors cut"
        return response

    # -- outputs -------------------------------------------------------------------------------

    def _watch_status(self) -> None:
        status = self._bridge.status()
        changed = self._status is None or status.key != self._status.key
        self._status = status
        if self._bridge.connected and not self._connected_said:
            self._connected_said = True
            report = getattr(self._setup.link, "report", None)
            self.get_logger().info(f"{self._said}connected" + (f": {report.summary()}" if report is not None else ""))
        if changed:
            self._publish_safety()
        self._log_status(status, time.monotonic())

    def _log_status(self, status: BridgeStatus, now: float) -> None:
        """A new code is logged at once (a link lost, back, a pilot's takeover...), whatever came
        before; the same code with a new reason at most every STATUS_REPEAT_S. A line into or out
        of an error-level code is one the runner prints for a flying link (vehicle_link.SAID)."""
        last = self._logged
        if last is not None and last[0] == status.code and (
                last[1] == status.reason or now - last[3] < STATUS_REPEAT_S):
            return
        error = status_level(status) == "error"
        changed = last is not None and last[0] != status.code
        prefix = self._said if error or (changed and last[2]) else ""
        line = f"{prefix}status {status.code}{f' (was {last[0]})' if changed else ''}: {status.reason}"
        self._logged = (status.code, status.reason, error, now)
        if error:  # one call per severity: rclpy ties a severity to its call site
            self.get_logger().error(line)
        else:
            self.get_logger().info(line)

    def _published(self) -> Optional[BridgeStatus]:
        """The bridge's status, with a refused command's reason while no command has passed since."""
        status, refusal = self._status, self._refusal
        if status is None or refusal is None:
            return status
        return replace(status, reason=f"{status.reason}; last command refused ({refusal.code.value}): "
                                      f"{refusal.reason}")

    def _publish_safety(self) -> None:
        status = self._published()
        if status is not None:
            self._safety_pub.publish(typed.to_ros(convert_vehicle.safety_msg(status, self._stamp())))

    def _publish_state(self) -> None:
        state = self._bridge.state
        if state is None or not state.position_known:
            return
        if self._origin is None:  # the odometry frame starts where the vehicle was first seen
            self._origin = (float(state.lat), float(state.lon), 0.0)
            self._frame = LocalFrame(self._origin[0], self._origin[1])
        stamp = self._stamp()
        fix = convert_vehicle.fix_from_state(state, stamp, self._child, self._origin[2])
        odom = convert_vehicle.odometry_from_state(state, self._origin, stamp, self._frame_id, self._child,
                                                   self._frame)
        if fix is not None:
            self._fix_pub.publish(fix)
        if odom is not None:
            self._odom_pub.publish(odom)

    def _publish_images(self) -> None:
        if self._setup.grab is None or not self._bridge.connected:
            return
        try:
            frame = self._setup.grab(self._setup.camera, self._depth_pub is not None)
        except CitySeekerError as exc:
            self._image_error = str(exc)
            self.get_logger().warning(f"camera {self._setup.camera!r}: {exc}", throttle_duration_sec=10.0)
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
        state = self._bridge.state
        values: dict[str, Any] = {
            "link": self._link_name, "code": status.code, "moving": status.moving, "estop": status.estop,
            "connected": status.connected, "safety": "gate" if self._guarded else "e-stop only (no safety_config)",
            "commands": self._commands, "rejected_commands": self._rejected, "heartbeats": self._heartbeats,
            "holds": self._bridge.holds}
        if state is not None:
            values.update({"armed": state.armed, "mode": state.mode, "in_control": state.in_control})
            if state.battery_fraction is not None:
                values["battery"] = round(state.battery_fraction, 3)
        if self._image_error:
            values["camera_error"] = self._image_error
        if self._refusal is not None:
            values["last_refusal"] = self._refusal.code.value
        publish_diagnostics(self, self._diag_pub, "vehicle", level, status.reason, values)


def main(args=None) -> None:
    spin(VehicleBridgeNode, "vehicle_bridge", args)


if __name__ == "__main__":
    main()
