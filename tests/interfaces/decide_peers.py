"""Test helper, run as its own ROS process: `python -m tests.interfaces.decide_peers --ros-args
-p role:=server|client -p tick_s:=T [-p out:=OUT.json -p trials:=N -p ticks:=K -p seed:=S]`.

server: echoes every ViewSet from /test/view_set on /test/view_set_echo (header.frame_id
prefixed "echo:"), and serves the Decide action on /test/decide: a goal with an empty
view_set_id is rejected; otherwise it sends `view_set.step` feedbacks `tick_s` apart and answers
MOVE along the last view, or, when cancelled first, a decision with error "cancelled". The
execute callback is a coroutine that waits on timer-driven futures, so one single-threaded
executor serves cancels while goals run (never a blocking callback).

client: publishes one ViewSet with every kind of field and checks the echo; sends a goal and
counts its feedbacks; sends a goal that must be rejected; then `trials` goals of `ticks`
feedbacks, each cancelled at a random instant (0 to 2 x ticks x tick_s after acceptance),
and records each outcome. The report goes to
OUT.json; assertions are the test's.
"""
from __future__ import annotations

import json
import math
import random
import time
from typing import Any

import rclpy
from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from sensor_msgs.msg import CompressedImage, Image

from cityseeker_interfaces.action import Decide
from cityseeker_interfaces.msg import AgentAction, GeoPoint, Panorama, Task, View, ViewSet

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
FEEDBACK = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)  # every feedback of a goal, counted
STATUS = {GoalStatus.STATUS_SUCCEEDED: "succeeded", GoalStatus.STATUS_CANCELED: "canceled",
          GoalStatus.STATUS_ABORTED: "aborted"}


class Server(Node):
    def __init__(self) -> None:
        super().__init__("decide_server")
        self.tick_s = float(self.declare_parameter("tick_s", 0.005).value)
        self.echo = self.create_publisher(ViewSet, "/test/view_set_echo", RELIABLE)
        self.create_subscription(ViewSet, "/test/view_set", self._on_view_set, RELIABLE)
        self.server = ActionServer(self, Decide, "/test/decide", self._execute, goal_callback=self._goal,
                                   cancel_callback=lambda _: CancelResponse.ACCEPT,
                                   feedback_pub_qos_profile=FEEDBACK)

    def _on_view_set(self, msg: ViewSet) -> None:
        msg.header.frame_id = f"echo:{msg.header.frame_id}"
        self.echo.publish(msg)

    def _goal(self, goal: Decide.Goal) -> GoalResponse:
        return GoalResponse.REJECT if not goal.view_set.view_set_id else GoalResponse.ACCEPT

    async def _sleep(self, seconds: float) -> None:
        done = Future()
        timer = self.create_timer(seconds, lambda: done.done() or done.set_result(None))
        await done
        self.destroy_timer(timer)

    async def _execute(self, goal_handle: Any) -> Decide.Result:
        view_set = goal_handle.request.view_set
        start = time.monotonic()
        result = Decide.Result()
        result.decision.view_set_id = view_set.view_set_id
        result.decision.task = view_set.task
        result.decision.step = view_set.step
        result.decision.policy = "test"
        for _ in range(view_set.step):
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                result.decision.ok, result.decision.error = False, "cancelled"
                return result
            goal_handle.publish_feedback(Decide.Feedback(stage="deciding", elapsed_s=time.monotonic() - start))
            await self._sleep(self.tick_s)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
            result.decision.ok, result.decision.error = False, "cancelled"
            return result
        goal_handle.succeed()
        result.decision.ok = True
        result.decision.action = AgentAction(kind=AgentAction.MOVE, index=view_set.views[-1].index)
        result.decision.confidence = math.nan
        result.decision.rationale = f"context: {goal_handle.request.context.history}"
        result.decision.latency_s = time.monotonic() - start
        return result


def sample_view_set(view_set_id: str, ticks: int) -> ViewSet:
    msg = ViewSet(view_set_id=view_set_id, node="n42", facing_deg=271.5, step=ticks, steps_left=7,
                  feedback="straße ✓ 咖啡")
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 1700000000, 123456789, "map"
    msg.task = Task(episode_id="monaco-7", city="Monaco", category="basic_needs", difficulty="easy",
                    instruction="I am thirsty", request="water", start="n1", seed=2**40 + 3, round=2, run=5)
    msg.position = GeoPoint(latitude=43.7384, longitude=7.4246, altitude=math.nan)
    msg.views = [View(index=i, heading_deg=90.0 * i, relative=r, frame_id=f"view{i}")
                 for i, r in enumerate(("front", "right", "back"))]
    msg.images = [CompressedImage(format="jpeg", data=bytes(range(256)) * 3) for _ in range(2)]
    for image, view in zip(msg.images, msg.views):
        image.header.stamp.sec, image.header.stamp.nanosec = msg.header.stamp.sec, msg.header.stamp.nanosec
        image.header.frame_id = view.frame_id
    msg.raw_images = [Image(height=4, width=6, encoding="rgb8", step=18, data=bytes(range(72)))]
    msg.has_panorama, msg.panorama = True, Panorama(frame_id="pano", width=2048, height=1024)
    return msg


def fields(msg: ViewSet) -> dict[str, Any]:
    """What the test compares: every field, NaN as a string (NaN != NaN)."""
    return {
        "header": [msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id],
        "id": msg.view_set_id, "node": msg.node, "facing": msg.facing_deg, "step": msg.step,
        "steps_left": msg.steps_left, "feedback": msg.feedback, "done": msg.done,
        "task": [msg.task.episode_id, msg.task.instruction, msg.task.seed, msg.task.round, msg.task.run],
        "position": [repr(msg.position.latitude), repr(msg.position.longitude), repr(msg.position.altitude)],
        "views": [[v.index, v.heading_deg, v.relative, v.frame_id] for v in msg.views],
        "images": [[i.header.frame_id, i.format, bytes(i.data).hex()] for i in msg.images],
        "raw": [[i.width, i.height, i.encoding, bytes(i.data).hex()] for i in msg.raw_images],
        "panorama": [msg.has_panorama, msg.panorama.frame_id, msg.panorama.width, msg.panorama.height],
    }


class Client(Node):
    def __init__(self) -> None:
        super().__init__("decide_client")
        self.declare_parameter("out", "")
        self.declare_parameter("trials", 10)
        self.declare_parameter("seed", 0)
        self.declare_parameter("ticks", 10)
        self.tick_s = float(self.declare_parameter("tick_s", 0.005).value)
        self.echoes: list[ViewSet] = []
        self.publisher = self.create_publisher(ViewSet, "/test/view_set", RELIABLE)
        self.create_subscription(ViewSet, "/test/view_set_echo", self.echoes.append, RELIABLE)
        self.client = ActionClient(self, Decide, "/test/decide", feedback_sub_qos_profile=FEEDBACK)

    def wait(self, future: Future, timeout_s: float = 30.0) -> Any:
        rclpy.spin_until_future_complete(self, future, timeout_sec=timeout_s)
        if not future.done():
            raise TimeoutError(f"no answer within {timeout_s} s")
        return future.result()

    def spin_until(self, predicate: Any, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while not predicate() and time.monotonic() < end:
            rclpy.spin_once(self, timeout_sec=0.01)
        return predicate()

    def round_trip(self) -> dict[str, Any]:
        if not self.spin_until(lambda: self.publisher.get_subscription_count() > 0
                               and self.count_publishers("/test/view_set_echo") > 0, 30.0):
            raise TimeoutError("the server's topics never matched")
        sent = sample_view_set("vs-echo", 3)
        self.publisher.publish(sent)
        if not self.spin_until(lambda: self.echoes, 20.0):
            raise TimeoutError("no echo")
        return {"sent": fields(sent), "received": [fields(m) for m in self.echoes]}

    def goal(self, view_set_id: str, ticks: int, cancel_after_s: float | None = None) -> dict[str, Any]:
        goal = Decide.Goal(view_set=sample_view_set(view_set_id, ticks), timeout_s=5.0)
        goal.context.history = "n1 -> n42"
        feedback: list[Decide.Feedback] = []
        handle = self.wait(self.client.send_goal_async(goal, feedback_callback=lambda f: feedback.append(f.feedback)))
        if not handle.accepted:
            return {"accepted": False}
        outcome: dict[str, Any] = {"accepted": True}
        result_future = handle.get_result_async()
        if cancel_after_s is not None:
            end = time.monotonic() + cancel_after_s
            while time.monotonic() < end and not result_future.done():
                rclpy.spin_once(self, timeout_sec=0.001)
            cancel = self.wait(handle.cancel_goal_async())
            outcome["cancel_accepted"] = len(cancel.goals_canceling) == 1
        answer = self.wait(result_future)
        decision = answer.result.decision
        if answer.status == GoalStatus.STATUS_SUCCEEDED:  # feedback sent before the result may trail it
            self.spin_until(lambda: len(feedback) >= ticks, 10.0)
        outcome.update(status=STATUS.get(answer.status, str(answer.status)), feedback=len(feedback),
                       stages=sorted({f.stage for f in feedback}), view_set_id=decision.view_set_id,
                       ok=decision.ok, error=decision.error, index=decision.action.index,
                       kind=decision.action.kind, rationale=decision.rationale, seed=decision.task.seed,
                       confidence_nan=math.isnan(decision.confidence))
        return outcome

    def run(self) -> dict[str, Any]:
        if not self.client.wait_for_server(timeout_sec=30.0):
            raise TimeoutError("no Decide server")
        report: dict[str, Any] = {"echo": self.round_trip(), "plain": self.goal("vs-plain", 5),
                                  "rejected": self.goal("", 1)}
        rng = random.Random(self.get_parameter("seed").value)
        ticks = self.get_parameter("ticks").value
        trials = []
        for n in range(self.get_parameter("trials").value):
            delay = rng.uniform(0.0, 2 * ticks * self.tick_s)
            trials.append({"delay_s": delay, **self.goal(f"vs-cancel-{n}", ticks, cancel_after_s=delay)})
        report["trials"] = trials
        return report


def main() -> None:
    rclpy.init()
    probe = Node("decide_peers_role", allow_undeclared_parameters=True,
                 automatically_declare_parameters_from_overrides=True)
    role = probe.get_parameter("role").value
    probe.destroy_node()
    try:
        if role == "server":
            rclpy.spin(Server())
        else:
            client = Client()
            report = client.run()
            open(client.get_parameter("out").value, "w").write(json.dumps(report))
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    main()
