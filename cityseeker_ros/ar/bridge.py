"""The AR server's ROS side: an rclpy node, spun on its own thread, that turns what the page sent
into the stack's own inputs and the stack's outputs into events for the page.

- a frame -> sensor_msgs/CompressedImage (the phone's JPEG as it came, never decoded here) on
  `~/frames/compressed`, which camera_ingest's `topic` source reads as `frames`;
- a fix with the compass heading -> nav_msgs/Odometry on `~/odom` for graph_localiser (input odom,
  the same origin): a NavSatFix has no heading, and a phone camera can only be oriented with
  one; the fix's accuracy is the pose covariance. The fix also goes out as NavSatFix on `~/fix`
  (for a bag, or anyone listening);
- a need -> a goal of the supervisor's Seek action; a cancel -> its cancel (the stack holds);
- /supervisor/guidance, the Seek feedback and result, camera_ingest's view sets and the decision
  node's decisions -> events (`post(kind, body)`) that ar/web.py shows on the page.

The action client is only touched on the executor's thread: calls from the web server's loop are
queued and a guard condition wakes the executor for them.
"""
from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Optional

import rclpy
from builtin_interfaces.msg import Time
from nav_msgs.msg import Odometry
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, NavSatFix, NavSatStatus

from cityseeker_interfaces.action import Seek
from cityseeker_interfaces.msg import Decision as DecisionRos
from cityseeker_ros.core.ar.protocol import Fix, Frame, Need
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.view_set import ViewSet
from cityseeker_ros.core.streets.geodesy import geodesic_m, initial_bearing_deg
from cityseeker_ros.nodes.seek_client import NOT_READY, outcome_of, step_of
from cityseeker_ros.ros import qos, typed

Post = Callable[[str, dict[str, Any]], None]
NOT_READY_RETRY_S = 0.5
NOT_READY_FOR_S = 180.0  # a decision node loading its model answers not_ready meanwhile
PROBE_S = 2.0


def local_xy(origin: tuple[float, float], lat: float, lon: float) -> tuple[float, float]:
    """(east, north) metres of a fix in the localiser's odometry frame: the azimuthal equidistant
    plane around `origin`, the inverse of core.sensing.localisation's update_local."""
    distance = geodesic_m(origin[0], origin[1], lat, lon)
    if distance == 0.0:
        return 0.0, 0.0
    azimuth = math.radians(initial_bearing_deg(origin[0], origin[1], lat, lon))
    return distance * math.sin(azimuth), distance * math.cos(azimuth)


def yaw_quaternion(heading_deg: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a compass heading (clockwise from north) as an ENU yaw (REP 103)."""
    yaw = math.radians(90.0 - heading_deg)
    return 0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0)


class ExecutorCalls:
    """Calls made on other threads (the web server's loop), run on the node's executor thread: an
    action client is only touched there, so calls are queued and a guard condition wakes the
    executor for them."""

    def __init__(self, node: Node) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._wake = node.create_guard_condition(self._drain)

    def put(self, fn: Callable[[], None]) -> None:
        self._calls.put(fn)
        self._wake.trigger()

    def _drain(self) -> None:
        while True:
            try:
                fn = self._calls.get_nowait()
            except queue.Empty:
                return
            fn()


class ArBridge(Node):
    """See the module docstring. `origin`: graph_localiser's odom_origin."""

    def __init__(self, origin: tuple[float, float], post: Post, seek_action: str = "/supervisor/seek",
                 guidance_topic: str = "/supervisor/guidance", views_topic: str = "/camera_ingest/views",
                 decision_topic: str = "/decision/decision") -> None:
        super().__init__("ar_server")
        self.origin, self.post = origin, post
        self.frames_pub = self.create_publisher(CompressedImage, "~/frames/compressed", qos.CAMERA)
        self.odom_pub = self.create_publisher(Odometry, "~/odom", qos.STATE)
        self.fix_pub = self.create_publisher(NavSatFix, "~/fix", qos.STATE)
        self.create_subscription(typed.msg_type(Guidance), guidance_topic, self._on_guidance, qos.STATE)
        self.create_subscription(typed.msg_type(ViewSet), views_topic, self._on_views, qos.STATE)
        self.create_subscription(DecisionRos, decision_topic, self._on_decision, qos.STATE)
        self.client = ActionClient(self, Seek, seek_action)
        self.published = {"frames": 0, "fixes": 0, "goals": 0, "cancels": 0}
        self._executor_calls = ExecutorCalls(self)
        self._ready = False
        self._probe: Any = None
        self._handle: Any = None
        self._goal: Optional[Need] = None
        self._cancel_asked = False  # a cancel came before the server took the goal: cancel it on acceptance
        self._not_ready_since: Optional[float] = None
        self._retrying = False  # a not_ready goal waits to be sent again
        self._feedback: list[Any] = []
        self.create_timer(PROBE_S, self._probe_server)

    # -- from the web server's thread -----------------------------------------------------------------

    def frame(self, frame: Frame, stamp_s: float) -> None:
        msg = CompressedImage(format="jpeg", data=frame.jpeg)
        msg.header.stamp = _time(stamp_s)
        msg.header.frame_id = "ar_phone_camera"
        self.frames_pub.publish(msg)
        self.published["frames"] += 1

    def fix(self, fix: Fix, stamp_s: float) -> None:
        stamp = _time(stamp_s)
        x, y = local_xy(self.origin, fix.lat, fix.lon)
        odom = Odometry()
        odom.header.stamp, odom.header.frame_id, odom.child_frame_id = stamp, "ar_local", "ar_phone"
        odom.pose.pose.position.x, odom.pose.pose.position.y = x, y
        if fix.heading_deg is not None:
            q = yaw_quaternion(fix.heading_deg)
            o = odom.pose.pose.orientation
            o.x, o.y, o.z, o.w = q
        else:  # no heading: a NaN yaw, which the localiser reads as unknown
            o = odom.pose.pose.orientation
            o.x, o.y, o.z, o.w = 0.0, 0.0, float("nan"), float("nan")
        variance = fix.accuracy_m ** 2
        covariance = [0.0] * 36
        covariance[0] = covariance[7] = variance
        odom.pose.covariance = covariance
        self.odom_pub.publish(odom)
        nav = NavSatFix(latitude=fix.lat, longitude=fix.lon, altitude=float("nan"))
        nav.header.stamp, nav.header.frame_id = stamp, "ar_phone"
        nav.status.status = NavSatStatus.STATUS_FIX
        nav.position_covariance = [variance, 0.0, 0.0, 0.0, variance, 0.0, 0.0, 0.0, 0.0]
        nav.position_covariance_type = NavSatFix.COVARIANCE_TYPE_APPROXIMATED
        self.fix_pub.publish(nav)
        self.published["fixes"] += 1

    def seek(self, need: Need) -> None:
        self._executor_calls.put(lambda: self._send_goal(need))

    def cancel(self) -> None:
        self._executor_calls.put(self._cancel)


    # -- the Seek action (executor thread only) -------------------------------------------------------

    def _probe_server(self) -> None:
        """A goal with an empty need is always refused: its answer says the server hears us (as
        nodes/seek_client.Seeker.wait_until_ready)."""
        if self._ready or self._probe is not None or not self.client.server_is_ready():
            return
        self._probe = self.client.send_goal_async(Seek.Goal(need=""))
        self._probe.add_done_callback(self._probe_accepted)

    def _probe_accepted(self, future: Any) -> None:
        handle = future.result()
        if not handle.accepted:
            self._probe = None
            return
        handle.get_result_async().add_done_callback(self._probe_answered)

    def _probe_answered(self, future: Any) -> None:
        self._probe = None
        if not self._ready:
            self._ready = True
            self.get_logger().info("the Seek server answers: ready for a need")
            self.post("ready", {})

    def _send_goal(self, need: Need) -> None:
        self._goal, self._feedback, self._cancel_asked = need, [], False
        goal = Seek.Goal(need=need.text.strip(), max_steps=int(need.max_steps), preempt=False)
        sent = self.client.send_goal_async(goal, feedback_callback=self._on_feedback)
        sent.add_done_callback(self._accepted)
        self.published["goals"] += 1

    def _accepted(self, future: Any) -> None:
        handle = future.result()
        if not handle.accepted:
            self.post("result", {"status": "rejected", "outcome": "rejected", "code": "not_accepted",
                                 "reason": "the Seek server did not accept the goal", "line": "rejected"})
            return
        self._handle = handle
        handle.get_result_async().add_done_callback(lambda f, h=handle: self._finished(h, f))
        if self._cancel_asked:  # cancelled while the goal was on its way: it ends cancelled, held
            handle.cancel_goal_async()
            self.published["cancels"] += 1

    def _finished(self, handle: Any, future: Any) -> None:
        response = future.result()
        outcome = outcome_of(response.status, response.result, list(self._feedback))
        if handle is self._handle:
            self._handle = None
        if outcome.rejected and outcome.code == NOT_READY and self._goal is not None:
            now = time.monotonic()
            self._not_ready_since = self._not_ready_since or now
            if now - self._not_ready_since < NOT_READY_FOR_S:  # the decision node is still loading
                self.post("note", {"text": f"the stack is starting: {outcome.reason}"})
                goal, self._retrying = self._goal, True
                timer: list[Any] = []

                def again() -> None:
                    timer[0].cancel()
                    self.destroy_timer(timer[0])
                    if self._goal is goal and self._retrying:
                        self._retrying = False
                        self._send_goal(goal)
                timer.append(self.create_timer(NOT_READY_RETRY_S, again))
                return
        self._not_ready_since, self._goal = None, None
        body = {k: v for k, v in asdict(outcome).items() if k != "feedback"}
        self.post("result", {**body, "line": outcome.line(), "steps_fed": len(outcome.feedback)})

    def _cancel(self) -> None:
        """Cancel the goal under way; one still on its way is cancelled as soon as the server
        takes it, and one waiting to be sent again (not_ready) is never sent."""
        self._cancel_asked = True
        if self._handle is not None:
            self._handle.cancel_goal_async()
            self.published["cancels"] += 1
        elif self._goal is not None and self._retrying:
            self._goal, self._retrying = None, False
            self.post("result", {"status": "canceled", "outcome": "cancelled", "code": "cancelled",
                                 "reason": "cancelled before the stack took the goal", "line": "cancelled"})

    def _on_feedback(self, msg: Any) -> None:
        step = step_of(msg.feedback)
        self._feedback.append(step)
        self.post("feedback", asdict(step))

    # -- the stack's outputs ---------------------------------------------------------------------------

    def _on_guidance(self, msg: Any) -> None:
        try:
            g: Guidance = typed.from_ros(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed guidance: {exc}")
            return
        self.post("guidance", {"view_set_id": g.view_set_id, "action": g.action, "node": g.node,
                               "next_node": g.next_node, "heading_deg": g.heading_deg,
                               "distance_m": g.distance_m, "reason": g.reason, "text": g.text})

    def _on_views(self, msg: Any) -> None:
        self.post("view_set", {"view_set_id": msg.view_set_id,
                               "stamp_s": msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9})

    def _on_decision(self, msg: Any) -> None:
        self.post("decision", {"view_set_id": msg.view_set_id, "latency_s": float(msg.latency_s)})


def _time(stamp_s: float) -> Time:
    sec = int(stamp_s)
    return Time(sec=sec, nanosec=int(round((stamp_s - sec) * 1e9)) % 1_000_000_000)


class Spinner:
    """A bridge node's executor (the phone's or the console's) on a daemon thread, stopped by `close()`."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(node)
        self.thread = threading.Thread(target=self._spin, name="ar-ros", daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:  # shutdown while spinning  # noqa: BLE001
            if rclpy.ok():
                raise

    def close(self) -> None:
        """Stop spinning, wait for the thread, then destroy the node: a node destroyed under a
        spinning executor aborts the process ("terminate called without an active exception")."""
        self.executor.shutdown(timeout_sec=2.0)
        self.thread.join(5.0)
        self.node.destroy_node()
