"""The operator console's ROS side: an rclpy node, spun on its own thread, that implements the
console's stack interface (ar/console_web.ConsoleStack) with the services and topics the CLI and
a ROS user already use, and turns what the stack publishes into console events.

Commands (calls from the web server's loop are queued; a guard condition wakes the executor):
- estop: `/estop` true (std_msgs/Bool, qos.ESTOP: reliable, transient-local, so a bridge that
  restarts while it is down trips again), as `ros2 topic pub /estop ...` does;
- reset_estop: `/estop` false (it releases the source; the bridges refuse a reset while it is
  true), then the vehicle bridge's `~/reset_estop` and the supervisor's `~/reset_estop`;
- take_control, return_to_launch: the vehicle bridge's services of those names (std_srvs/Trigger);
- seek, cancel: the supervisor's Seek action, as ar/bridge.py and `cityseeker seek` use it;
- hold: what `cityseeker seek` does on Ctrl-C: cancel the Seek under way, which ends it and holds
  the vehicle (core.loop.seek); this console's own goal through its handle, any other (one
  `cityseeker seek` or a phone started) through the action's cancel service, all at once. With
  none under way there is nothing to cancel, and the answer says so.
The answers to hold and estop say what reaches the vehicle in the state the bridge's last `~/safety`
reported (core.console.answers): while a pilot has it, nothing does.
Each command's answer (a service's success and message, the goal's acceptance) comes back as a
CommandDone, so the page shows what the vehicle did.

Events: the vehicle bridge's `~/fix` with the heading of its `~/odom` (VehicleFix), `~/safety`
(SafetyReport), its /diagnostics status `vehicle` (link, mode, battery), `~/flight_rule_violations`
(Violation); the supervisor's guidance (GoingTo its next node); a decision (/decision/decision)
with the view set it answered (camera_ingest's ~/views) and that view set's images (camera_ingest's
image topics, raw or compressed), as thumbnails (DecisionMade); the Seek's feedback and result.
"""
from __future__ import annotations

import io
import math
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Optional

import numpy as np
from action_msgs.msg import GoalStatus, GoalStatusArray
from action_msgs.srv import CancelGoal
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from PIL import Image as PilImage
from rclpy.action import ActionClient
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image, NavSatFix
from std_msgs.msg import Bool
from std_srvs.srv import Trigger
from unique_identifier_msgs.msg import UUID

from cityseeker_interfaces.action import Seek
from cityseeker_interfaces.msg import Decision as DecisionRos
from cityseeker_ros.ar.bridge import ExecutorCalls
from cityseeker_ros.core.ar.protocol import SeekGoal
from cityseeker_ros.core.console.answers import estop_answer, hold_answer
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
    ViewSeen,
    Violation,
)
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.view_set import ViewSet
from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.nodes.seek_client import ACTIONS, outcome_of, step_of
from cityseeker_ros.ros import convert, qos, typed

Post = Callable[[ConsoleEvent], None]
THUMB_WIDTH = 320
IMAGES_KEPT = 64  # view images remembered to find a decision's (a view set has at most a dozen)
VIEW_SETS_KEPT = 8
ENDED = {GoalStatus.STATUS_SUCCEEDED: "succeeded", GoalStatus.STATUS_ABORTED: "aborted",
         GoalStatus.STATUS_CANCELED: "cancelled"}  # action statuses that end a goal
DECISION_WAIT_S = 1.0  # a decision waits this long for its view set and images, then goes without


def compass_heading(odom: Any) -> Optional[float]:
    """The heading (degrees clockwise from north) of an ENU odometry's yaw (REP 103); None if NaN."""
    o = odom.pose.pose.orientation
    yaw = math.atan2(2.0 * (o.w * o.z + o.x * o.y), 1.0 - 2.0 * (o.y * o.y + o.z * o.z))
    return None if not math.isfinite(yaw) else (90.0 - math.degrees(yaw)) % 360.0


def thumbnail(rgb: np.ndarray) -> bytes:
    """A JPEG THUMB_WIDTH wide: a 640x480 PNG would be ten times the bytes for the same strip."""
    image = PilImage.fromarray(rgb)
    if image.width > THUMB_WIDTH:
        image = image.resize((THUMB_WIDTH, max(1, round(image.height * THUMB_WIDTH / image.width))))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=80)
    return out.getvalue()


class ConsoleBridge(Node):
    """See the module docstring. `post` hands an event to the console server (thread-safe)."""

    def __init__(self, post: Post, bridge: str = "/vehicle_bridge", supervisor: str = "/supervisor",
                 decision_topic: str = "/decision/decision", views_topic: str = "/camera_ingest/views",
                 images_topic: str = "/camera_ingest/images", position_from: str = "",
                 node_name: str = "console") -> None:
        """`position_from`: the node whose ~/fix and ~/odom place the vehicle ('': the vehicle
        bridge; an AR trial's phone: /ar_server)."""
        super().__init__(node_name)
        self.post, self.bridge, self.supervisor = post, bridge.rstrip("/"), supervisor.rstrip("/")
        where = (position_from or bridge).rstrip("/")
        self.estop_pub = self.create_publisher(Bool, "/estop", qos.ESTOP)
        self.create_subscription(NavSatFix, f"{where}/fix", self._on_fix, qos.STATE)
        self.create_subscription(Odometry, f"{where}/odom", self._on_odom, qos.STATE)
        self.create_subscription(typed.msg_type(BridgeStatus), f"{self.bridge}/safety", self._on_safety, qos.STATE)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)
        self.create_subscription(DiagnosticArray, f"{self.bridge}/flight_rule_violations", self._on_violations,
                                 qos.OUTCOMES)
        self.create_subscription(typed.msg_type(Guidance), f"{self.supervisor}/guidance", self._on_guidance, qos.STATE)
        self.create_subscription(typed.msg_type(ViewSet), views_topic, self._on_views, qos.STATE)
        self.create_subscription(DecisionRos, decision_topic, self._on_decision, qos.STATE)
        for image_type, topic in ((Image, images_topic), (CompressedImage, f"{images_topic}/compressed")):
            self.create_subscription(image_type, topic, self._on_image, qos.view_images(12))
        self.triggers = {name: self.create_client(Trigger, f"{self.bridge}/{name}")
                         for name in ("reset_estop", "take_control", "return_to_launch")}
        self.supervisor_reset = self.create_client(Trigger, f"{self.supervisor}/reset_estop")
        self.seek_client = ActionClient(self, Seek, f"{self.supervisor}/seek")
        self.cancel_all = self.create_client(CancelGoal, f"{self.supervisor}/seek/_action/cancel_goal")
        # Goals other clients sent (`cityseeker seek`, a phone): their steps and their end, read from
        # the action's own topics, so the Seek panel follows every goal, not only this console's.
        self.create_subscription(Seek.Impl.FeedbackMessage, f"{self.supervisor}/seek/_action/feedback",
                                 self._on_any_feedback, 10)
        self.create_subscription(GoalStatusArray, f"{self.supervisor}/seek/_action/status", self._on_status, 10)
        self._own_goals: set[bytes] = set()
        self._others: dict[bytes, str] = {}  # another client's goal under way -> the last node it reported
        self._executor_calls = ExecutorCalls(self)
        self._heading: Optional[float] = None
        self._view_sets: OrderedDict[str, Any] = OrderedDict()
        self._pending: OrderedDict[str, tuple[Any, float]] = OrderedDict()  # decisions waiting for their views
        self.create_timer(0.25, self._flush_decisions)
        self._images: OrderedDict[tuple[int, str], Any] = OrderedDict()
        self._handle: Any = None
        self._cancel_asked = False
        self._goal: Optional[SeekGoal] = None
        self._goal_told = False  # SeekStarted posted for self._goal
        self._diagnostics_name = f"{self.bridge}: vehicle"  # as nodes/common.publish_diagnostics names it
        self._safety: Optional[SafetyReport] = None  # the bridge's latest status: the answers' truth depends on it

    # -- ConsoleStack: from the web server's thread ------------------------------------------------------

    def ask_hold(self) -> None:
        self._executor_calls.put(lambda: self._cancel("hold"))

    def ask_estop(self) -> None:
        self._executor_calls.put(self._estop)

    def ask_reset_estop(self) -> None:
        self._executor_calls.put(self._reset_estop)

    def ask_take_control(self) -> None:
        self._executor_calls.put(lambda: self._trigger("take_control"))

    def ask_return_to_launch(self) -> None:
        self._executor_calls.put(lambda: self._trigger("return_to_launch"))

    def seek(self, goal: SeekGoal) -> None:
        self._executor_calls.put(lambda: self._send_goal(goal))

    def cancel(self) -> None:
        self._executor_calls.put(lambda: self._cancel("cancel"))


    # -- commands (executor thread only) ---------------------------------------------------------------

    def _estop(self) -> None:
        self.estop_pub.publish(Bool(data=True))
        self.post(estop_answer(self._safety))

    def _reset_estop(self) -> None:
        self.estop_pub.publish(Bool(data=False))  # the source released: the bridges refuse a reset while it is true
        self._trigger("reset_estop")
        if self.supervisor_reset.service_is_ready():
            self.supervisor_reset.call_async(Trigger.Request())

    def _trigger(self, name: str) -> None:
        client = self.triggers[name]
        if not client.service_is_ready():
            self.post(CommandDone(name, False, f"{client.srv_name} is not available (is the vehicle bridge running?)"))
            return
        future = client.call_async(Trigger.Request())
        future.add_done_callback(lambda f: self._answered(name, f))

    def _answered(self, name: str, future: Any) -> None:
        try:
            answer = future.result()
        except Exception as exc:  # noqa: BLE001  the service went away mid-call
            self.post(CommandDone(name, False, f"no answer: {exc}"))
            return
        self.post(CommandDone(name, bool(answer.success), str(answer.message)))

    def _send_goal(self, goal: SeekGoal) -> None:
        if not self.seek_client.server_is_ready():
            self.post(CommandDone("seek", False, f"the Seek server {self.supervisor}/seek is not available"))
            return
        self._cancel_asked, self._goal, self._goal_told = False, goal, False
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        self._own_goals.add(bytes(goal_id.uuid))  # its feedback comes through the client, not the topic
        sent = self.seek_client.send_goal_async(
            Seek.Goal(need=goal.text.strip(), family=goal.family, max_steps=int(goal.max_steps), preempt=False),
            feedback_callback=self._on_feedback, goal_uuid=goal_id)
        sent.add_done_callback(lambda f: self._accepted(goal, f))

    def _accepted(self, goal: SeekGoal, future: Any) -> None:
        handle = future.result()
        if not handle.accepted:
            self.post(CommandDone("seek", False, "the Seek server did not accept the goal"))
            return
        self._handle = handle
        self._tell_started()
        handle.get_result_async().add_done_callback(lambda f, h=handle: self._finished(h, f))
        if self._cancel_asked:
            handle.cancel_goal_async()

    def _finished(self, handle: Any, future: Any) -> None:
        response = future.result()
        outcome = outcome_of(response.status, response.result, [])
        if handle is self._handle:
            self._handle = None
        self.post(SeekEnded(outcome.outcome, outcome.code, outcome.reason, outcome.node or "", int(outcome.steps),
                            float(outcome.distance_m), outcome.answer or ""))
        if outcome.outcome == "rejected":
            self.post(CommandDone("seek", False, f"refused ({outcome.code}): {outcome.reason}"))

    def _cancel(self, name: str) -> None:
        """This console's goal through its handle; otherwise every goal of the Seek server (a
        zero goal id and stamp cancels all, as action_msgs/CancelGoal says): the one `cityseeker
        seek` or a phone started is the operator's to stop too."""
        if self._handle is not None:
            self._handle.cancel_goal_async()
            self.post(hold_answer(name, "the Seek is cancelled", self._safety))
            return
        if self._goal is not None:
            self._cancel_asked = True  # a goal on its way is cancelled when the server takes it
        if not self.cancel_all.service_is_ready():
            self.post(CommandDone(name, False, f"the Seek server {self.supervisor}/seek is not available"))
            return
        future = self.cancel_all.call_async(CancelGoal.Request())
        future.add_done_callback(lambda f: self._cancelled_all(name, f))

    def _cancelled_all(self, name: str, future: Any) -> None:
        try:
            n = len(future.result().goals_canceling)
        except Exception as exc:  # noqa: BLE001  the server went away mid-call
            self.post(CommandDone(name, False, f"no answer: {exc}"))
            return
        self.post(hold_answer(name, f"{n} Seek goal{'s' if n != 1 else ''} cancelled" if n else "", self._safety))

    def _tell_started(self) -> None:
        """SeekStarted once per goal, before its first feedback: a step's feedback can come before
        the acceptance's callback runs."""
        if self._goal is not None and not self._goal_told:
            self._goal_told = True
            self.post(SeekStarted(self._goal.text.strip(), self._goal.family))

    def _on_any_feedback(self, msg: Any) -> None:
        goal_id = bytes(msg.goal_id.uuid)
        if goal_id in self._own_goals:
            return
        if goal_id not in self._others:
            self.post(SeekStarted("(a goal another client sent)", ""))
        step = step_of(msg.feedback)
        self._others[goal_id] = step.node
        self.post(SeekProgress(step.node, step.step, step.steps_left, step.reason, float(step.distance_m)))

    def _on_status(self, msg: Any) -> None:
        """Another client's goal that ended: the action status only (its result goes to that client)."""
        for status in msg.status_list:
            goal_id = bytes(status.goal_info.goal_id.uuid)
            if goal_id in self._others and status.status in ENDED:
                node = self._others.pop(goal_id)
                self.post(SeekEnded(ENDED[status.status], "", "the client that sent the goal has its result", node))

    def _on_feedback(self, msg: Any) -> None:
        self._tell_started()
        step = step_of(msg.feedback)
        self.post(SeekProgress(step.node, step.step, step.steps_left, step.reason, float(step.distance_m)))

    # -- the stack's outputs ----------------------------------------------------------------------------

    def _on_odom(self, msg: Any) -> None:
        self._heading = compass_heading(msg)

    def _on_fix(self, msg: Any) -> None:
        if math.isfinite(msg.latitude) and math.isfinite(msg.longitude):
            self.post(VehicleFix(float(msg.latitude), float(msg.longitude), self._heading))

    def _on_safety(self, msg: Any) -> None:
        status: BridgeStatus = typed.from_ros(msg)
        self._safety = SafetyReport(status.moving, status.code, status.reason, status.estop, status.connected)
        self.post(self._safety)

    def _on_diagnostics(self, msg: Any) -> None:
        for status in msg.status:
            if status.name != self._diagnostics_name:
                continue
            values = {kv.key: kv.value for kv in status.values}
            self.post(LinkReport(values.get("link", ""), values.get("mode", "")))
            battery = values.get("battery")
            try:
                fraction = None if battery is None else float(battery)
            except ValueError:
                fraction = None
            self.post(BatteryReport(fraction))

    def _on_violations(self, msg: Any) -> None:
        for status in msg.status:
            rule, _, detail = str(status.message).partition(": ")
            self.post(Violation(rule, detail))

    def _on_guidance(self, msg: Any) -> None:
        try:
            g: Guidance = typed.from_ros(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed guidance: {exc}")
            return
        self.post(GoingTo(g.next_node or ""))

    def _on_views(self, msg: Any) -> None:
        self._view_sets[msg.view_set_id] = msg
        while len(self._view_sets) > VIEW_SETS_KEPT:
            self._view_sets.popitem(last=False)
        self._try_decision(msg.view_set_id)

    def _on_image(self, msg: Any) -> None:
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self._images[(stamp, msg.header.frame_id)] = msg
        while len(self._images) > IMAGES_KEPT:
            self._images.popitem(last=False)
        for view_set_id in list(self._pending):
            self._try_decision(view_set_id)

    def _image_msg(self, view_set: Any, frame_id: str) -> Any:
        """The image message of one view: inline in the view set, else on the image topic by
        (the view set's stamp, frame_id); None: not (yet) here."""
        inline = [*view_set.images, *view_set.raw_images]
        found = next((m for m in inline if m.header.frame_id == frame_id), None)
        if found is None:
            stamp = view_set.header.stamp.sec * 1_000_000_000 + view_set.header.stamp.nanosec
            found = self._images.get((stamp, frame_id))
        return found

    def _image_of(self, view_set: Any, frame_id: str) -> bytes:
        found = self._image_msg(view_set, frame_id) if frame_id else None
        if found is None:
            return b""
        try:
            return thumbnail(convert.image_from_msg(found))
        except Exception as exc:  # noqa: BLE001  an image that does not decode shows as none
            self.get_logger().warning(f"view image {frame_id!r} not shown: {exc}", throttle_duration_sec=10.0)
            return b""

    def _on_decision(self, msg: Any) -> None:
        """Kept until its view set and that view set's images are here: the three travel on
        different writers, and DDS orders nothing across writers (a fast policy's small decision
        overtakes the view set it answers). After DECISION_WAIT_S it goes with what came."""
        self._pending[msg.view_set_id] = (msg, time.monotonic())
        while len(self._pending) > VIEW_SETS_KEPT:
            self._pending.popitem(last=False)
        self._try_decision(msg.view_set_id)

    def _flush_decisions(self) -> None:
        now = time.monotonic()
        for view_set_id, (_, since) in list(self._pending.items()):
            if now - since >= DECISION_WAIT_S:
                self._try_decision(view_set_id, force=True)

    def _try_decision(self, view_set_id: str, force: bool = False) -> None:
        if view_set_id not in self._pending:
            return
        view_set = self._view_sets.get(view_set_id)
        ready = view_set is not None and all(self._image_msg(view_set, v.frame_id) is not None
                                             for v in view_set.views if v.frame_id)
        if ready or force:
            self._decided(self._pending.pop(view_set_id)[0], view_set)

    def _decided(self, msg: Any, view_set: Any) -> None:
        views: tuple[ViewSeen, ...] = ()
        node, step, steps_left = "", int(msg.step), 0
        if view_set is not None:
            node, steps_left = view_set.node, int(view_set.steps_left)
            views = tuple(ViewSeen(int(v.index), float(v.heading_deg), v.relative, self._image_of(view_set, v.frame_id))
                          for v in view_set.views)
        action = ACTIONS.get(msg.action.kind, str(msg.action.kind)) if msg.ok else "error"
        chosen = int(msg.action.index) if msg.ok and action == "move" else None
        self.post(DecisionMade(msg.view_set_id, node, views, chosen, action, msg.rationale if msg.ok else msg.error,
                               float(msg.latency_s), step, step + steps_left))
