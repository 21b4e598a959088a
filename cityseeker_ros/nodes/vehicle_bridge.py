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

The flight-rules monitor (core/vehicles/monitor, parameter `monitor`, on by default) runs beside the
bridge wherever a safety file is given on a flying link or the walker. It reads the safety file with
its own reader and is told only what went to the vehicle and what the vehicle said: the MAVLink
connection's wire in both directions, or, for AirSim and the walker, each call that reached the link
and each state read (MonitoredLink); and, from this node, each MotionCommand as a decision (accepted
or refused by the envelope, with its frame and stamp), a HOLD command as the end of a session, the
e-stop's trip and reset, an operator's take-control, the link lost and back (status code changes) and
the shutdown. Each violation is one error line `flight rule violated: <rule>: <detail>`, a
DiagnosticArray on `~/flight_rule_violations` (recorded in the run's bag), the `flight_rules` status
on /diagnostics, and an e-stop trip (source "monitor"); its report is written when the node stops
(`monitor_report_file`).
"""
from __future__ import annotations

import json
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
    LINK_ERROR,
    TERMINATE_CONFIRMATION,
    BridgeStatus,
    VehicleBridge,
    status_level,
)
from cityseeker_ros.core.vehicles.monitor import LiveMonitor, MonitoredLink, MonitorSettings, Violation, load_limits
from cityseeker_ros.core.vehicles.safety import Check, EStop, LatchFile, SafetyConfig, SafetyGate
from cityseeker_ros.core.vehicles.safety.commands import Goal, Velocity
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.core.vehicles.safety.envelope import check_envelope, check_max_age, kind_of
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import convert, convert_vehicle, qos, typed, vehicle_link
from cityseeker_ros.ros.parameters import VEHICLE_BRIDGE, declare, json_parameter
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
STATUS_REPEAT_S = 10.0  # the same status code with a new reason is logged at most this often
# A stop this node asks for (an e-stop, a HOLD command, the shutdown) or a link loss it learns of counts for
# the flight-rules monitor from this much later: the bridge acts on it within a safety tick (0.05 s), and a
# setpoint already past its check may still leave meanwhile; that is not a new motion.
MARKER_GRACE_S = 0.25


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigError(f"parameter {name} must be a positive number, got {value!r}")
    return float(value)


class VehicleBridgeNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("vehicle_bridge", **kwargs)
        declare(self, VEHICLE_BRIDGE)
        p = {spec.name: self.get_parameter(spec.name).value for spec in VEHICLE_BRIDGE}
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
        setup = vehicle_link.make_vehicle(p["link"], link_params, velocity_period_s=rates["velocity_period_s"],
                                          safety=safety)
        self._link_name, self._guarded = p["link"], bool(p["safety_config"])
        self._setup = setup
        self._frame_id, self._child = p["frame_id"], p["child_frame_id"]
        self._image_format = p["image_format"]
        self._origin = setup.origin
        self._frame: Optional[LocalFrame] = None if setup.origin is None else LocalFrame(*setup.origin[:2])

        estop_file = self._estop_state_file(p["estop_state_file"])
        estop = EStop(LatchFile(estop_file))
        if estop.latched:
            self.get_logger().error(f"starting with the e-stop latched ({estop.check().reason}, kept in "
                                    f"{estop.latch_file.path}): holding until ~/reset_estop")
        self._violations_pub = self.create_publisher(DiagnosticArray, "~/flight_rule_violations", qos.OUTCOMES)
        self._closing = False
        self._last_violation: Optional[Violation] = None
        self._link_seen_up = False  # the link markers start after the first connect
        self._link_error_seen_at: Optional[float] = None  # the last status poll (monotonic) that showed LINK_ERROR
        self._link_lost_marked = -math.inf  # when the monitor was told the link was lost
        self._monitor, link, self._monitor_note = self._make_monitor(p, flying, link_params, setup.link)
        self._monitor_report_file = (Path(p["monitor_report_file"]) if p["monitor_report_file"]
                                     else estop_file.with_name(estop_file.name.removesuffix(".json")
                                                               .removesuffix(".estop") + ".flight_rules.json"))
        try:
            self._bridge = VehicleBridge(
                link, SafetyGate.from_config(safety, estop=estop), estop_action=p["estop_action"],
                rtl_battery_fraction=safety.rtl_battery_fraction, fence_breach_action=safety.fence_breach_action,
                end_action=safety.end_action, link_timeout_s=rates["link_timeout_s"],
                connect_timeout_s=rates["connect_timeout_s"], reconnect_period_s=rates["reconnect_period_s"],
                velocity_period_s=rates["velocity_period_s"], state_period_s=min(0.1, 1.0 / rates["state_rate_hz"]))
        except BaseException:
            if self._monitor is not None:
                self._monitor.close()
            raise
        self._said = f"{vehicle_link.SAID}" if flying else ""  # lines the runner prints for a flying link
        self._bridge.on_event = lambda line: self.get_logger().info(f"{self._said}{line}")
        self._status: Optional[BridgeStatus] = None
        self._commands = self._rejected = self._heartbeats = 0
        self._refusal: Optional[Check] = None  # the last command's refusal, until a command passes
        self._in_force: Any = None  # the last command given to the bridge
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
        guard = (f"gated by {p['safety_config']}" if self._guarded else "e-stop only") + f"; {self._monitor_note}"
        where = getattr(getattr(setup.link, "endpoint", None), "describe", lambda: "")()
        waiting = f"; waiting for the autopilot's heartbeat on {where}" if where else "; connecting"
        self.get_logger().info(f"{self._said}{p['link']} link, {guard}{waiting}")

    def _estop_state_file(self, value: str) -> Path:
        """The parameter, or one file per node under $ROS_HOME (~/.ros), ROS's folder for state."""
        if value:
            return Path(value)
        home = Path(os.environ.get("ROS_HOME") or Path.home() / ".ros")
        return home / "cityseeker" / f"{self.get_fully_qualified_name().strip('/').replace('/', '.')}.estop.json"

    def _make_monitor(self, p: dict[str, Any], flying: bool, link_params: dict[str, Any],
                      link: Any) -> tuple[Optional[LiveMonitor], Any, str]:
        """The flight-rules monitor and the link the bridge drives (the same link, or wrapped so the
        monitor sees its calls), and the words for the start line."""
        if not p["monitor"]:
            return None, link, "flight-rules monitor off (parameter monitor false)"
        if not p["safety_config"] or not (flying or p["link"] == "walker"):
            return None, link, "no flight-rules monitor (it runs with a safety_config on a flying link or the walker)"
        settings = MonitorSettings(max_stamp_age_s=self._max_age_s, max_stamp_future_s=self._max_age_s)
        live = LiveMonitor(load_limits(p["safety_config"]), settings, on_violation=self._on_violation)
        if hasattr(link, "on_wire"):  # MAVLink: both directions of the wire itself
            flavour = link_params.get("flavour", "auto")
            link.on_wire = live.mavlink_tap(flavour=None if flavour == "auto" else flavour,
                                            stack_system=int(getattr(link, "source_system", 255)),
                                            vehicle_system=link_params.get("system_id"))
            return live, link, "flight-rules monitor on the MAVLink wire"
        wrapped = MonitoredLink(link, live.feed, clock=live.clock)
        live.add_source(p["link"], wrapped.counts)
        return live, wrapped, f"flight-rules monitor on the {p['link']} link's calls"

    def destroy_node(self) -> None:
        live = self._monitor
        if live is not None:
            live.mark("session_end", "shutdown", t=live.clock() + MARKER_GRACE_S)
        self._closing = True  # a violation found from here on is reported, but trips no e-stop on a closed bridge
        self._bridge.close()
        if live is not None:
            # nothing more leaves after close: the end's deadline can be judged now
            live.close(live.clock() + MARKER_GRACE_S + live.monitor.settings.end_within_s + 0.001)
            self._write_monitor_report(live)
        super().destroy_node()

    def _write_monitor_report(self, live: LiveMonitor) -> None:
        report = live.report(node=self.get_fully_qualified_name(), link=self._link_name)
        try:
            self._monitor_report_file.parent.mkdir(parents=True, exist_ok=True)
            self._monitor_report_file.write_text(json.dumps(report, indent=1) + "\n")
        except OSError as exc:
            self.get_logger().error(f"flight-rules report not written to {self._monitor_report_file}: {exc}")
            return
        n = len(report["violations"])
        self.get_logger().info(f"flight-rules report ({report['verdict']}, {n} violation{'s' if n != 1 else ''}): "
                               f"{self._monitor_report_file}")

    # -- the flight-rules monitor ----------------------------------------------------------------

    def _on_violation(self, v: Violation) -> None:
        """On the monitor's own thread: the log, the topic, and the e-stop."""
        self._last_violation = v
        self.get_logger().error(f"flight rule violated: {v.rule}: {v.detail}")
        count = len(self._monitor.violations) if self._monitor is not None else 1
        publish_diagnostics(self, self._violations_pub, "flight_rules", "error", f"{v.rule}: {v.detail}",
                            {"rule": v.rule, "detail": v.detail, "t_s": round(v.t, 3), "violations": count,
                             "link": self._link_name})
        if not self._closing and getattr(self, "_bridge", None) is not None:
            if self._monitor is not None:
                self._monitor.mark("estop_trip", f"monitor: {v.rule}", t=self._monitor.clock() + MARKER_GRACE_S)
            self._bridge.trip_estop("monitor", f"{v.rule}: {v.detail}")

    def _decided(self, msg: Any, command: Any, stamp_s: float, now_s: float, passed: bool) -> None:
        """A MotionCommand as the monitor takes it: a decision stamped on its clock (stamp_s and now_s on
        this node's), accepted or not; a hold also ends a session (a Seek's end is a HOLD command).

        A refused command whose target is the one in force (a goal repeat delayed past the maximum age)
        goes without its target: the bridge flying the command in force is not flying the refused one."""
        live = self._monitor
        if live is None:
            return
        t = live.clock()
        stamp = t - (now_s - stamp_s) if math.isfinite(stamp_s) else None
        kind = kind_of(command)
        goal = (command.lat, command.lon, command.alt_m) if isinstance(command, Goal) else None
        velocity = ((command.east_m_s, command.north_m_s, command.up_m_s) if isinstance(command, Velocity)
                    else None)
        if not passed and _same_target(command, self._in_force):
            goal = velocity = None
        live.decide(kind, frame=msg.header.frame_id, stamp=stamp, goal=goal, velocity=velocity, t=t)
        if kind == "hold":
            live.mark("session_end", "HOLD command", t=t + MARKER_GRACE_S)

    def _link_markers(self, status: BridgeStatus, now: float) -> None:
        """The link lost and back, from the status code: lost when first seen (plus MARKER_GRACE_S); back at
        the last poll that still saw it lost (the bridge came back between the two polls: a decision
        between them counts)."""
        live = self._monitor
        lost = status.code == LINK_ERROR
        if live is None:
            return
        if not self._link_seen_up:
            self._link_seen_up = not lost
            self._link_error_seen_at = None
            return
        if lost:
            if self._link_error_seen_at is None:
                self._link_lost_marked = now + MARKER_GRACE_S
                live.mark("link_lost", status.reason, t=self._link_lost_marked)
            self._link_error_seen_at = now
        elif self._link_error_seen_at is not None:  # never before its loss: the monitor takes them in time order
            live.mark("link_back", status.reason, t=max(self._link_error_seen_at, self._link_lost_marked))
            self._link_error_seen_at = None

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
        now_s = self.get_clock().now().nanoseconds * 1e-9
        check = check_envelope(kind_of(command), msg.header.frame_id, received.stamp.seconds, now_s, self._max_age_s)
        self._decided(msg, command, received.stamp.seconds, now_s, check.ok)
        if not check.ok:
            self._refuse(check)
            return
        if self._refusal is not None:
            self._refusal = None
            self._publish_safety()
        self._commands += 1
        self._in_force = command
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
            if self._monitor is not None:
                self._monitor.mark("estop_trip", "/estop", t=self._monitor.clock() + MARKER_GRACE_S)
            self._bridge.trip_estop("/estop", "e-stop topic true", held=True)
        else:
            self._bridge.release_estop("/estop")

    def _on_reset_estop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        t = self._monitor.clock() if self._monitor is not None else 0.0
        check = self._bridge.reset_estop()
        if check.ok and self._monitor is not None:
            self._monitor.mark("estop_reset", t=t)
        response.success, response.message = check.ok, check.reason if not check.ok else "e-stop reset"
        return response

    def _on_return_to_launch(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        answer = self._bridge.return_to_launch()
        response.success, response.message = answer.ok, answer.message
        return response

    def _on_take_control(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        taken = self._bridge.take_control()
        if taken and self._monitor is not None:
            self._monitor.mark("operator_take_control", "~/take_control")
        response.success, response.message = taken, self._bridge.control_note
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
        now = time.monotonic()
        self._link_markers(status, now)
        self._log_status(status, now)

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
        values["flight_rules"] = self._monitor_note
        publish_diagnostics(self, self._diag_pub, "vehicle", level, status.reason, values)
        if self._monitor is not None:
            self._publish_flight_rules(self._monitor)

    def _publish_flight_rules(self, live: LiveMonitor) -> None:
        """The `flight_rules` status: error once a rule was broken, with the count and the last one."""
        counts = live.counts()
        n, last = sum(counts.values()), self._last_violation
        values: dict[str, Any] = {"violations": n, **{f"violations.{rule}": k for rule, k in sorted(counts.items())}}
        if last is not None:
            values.update({"last_rule": last.rule, "last_detail": last.detail, "last_t_s": round(last.t, 3)})
        message = f"{n} violation{'s' if n != 1 else ''}" + (f"; last: {last.rule}: {last.detail}" if last else "")
        publish_diagnostics(self, self._diag_pub, "flight_rules", "error" if n else "ok", message, values)


def _same_target(a: Any, b: Any) -> bool:
    """Two goals within a metre of each other, or two velocities along one direction (the monitor's own
    tests for "flies this goal" and "flies this velocity")."""
    if isinstance(a, Goal) and isinstance(b, Goal):
        north = (a.lat - b.lat) * 111_320.0
        east = (a.lon - b.lon) * 111_320.0 * math.cos(math.radians(a.lat))
        return math.hypot(north, east) <= 1.0
    if isinstance(a, Velocity) and isinstance(b, Velocity):
        va, vb = (a.east_m_s, a.north_m_s, a.up_m_s), (b.east_m_s, b.north_m_s, b.up_m_s)
        na, nb = math.sqrt(sum(v * v for v in va)), math.sqrt(sum(v * v for v in vb))
        return na > 1e-6 and nb > 1e-6 and sum(x * y for x, y in zip(va, vb)) / (na * nb) > 0.999
    return False


def main(args=None) -> None:
    spin(VehicleBridgeNode, "vehicle_bridge", args)


if __name__ == "__main__":
    main()
