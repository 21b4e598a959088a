"""Test helper, run as its own ROS process: `python -m tests.ar.console_bridge_probe OUT.json`.

Builds ar/console_bridge.py's node beside stand-ins for the nodes it talks to (a vehicle bridge
with its three Trigger services and its topics, a supervisor with the Seek action, its guidance
and reset service, the decision node's and camera_ingest's topics), all on one executor
over DDS, then presses every console command and publishes what those nodes publish. The
stand-ins are plain: they record what reached them and answer as the real ones' contracts say
(docs/vehicles.md, docs/seek.md), so the probe checks the console bridge's wiring, not the
vehicle. Writes every event the bridge posted and what each stand-in received to OUT.json."""
from __future__ import annotations

import io
import json
import sys
import threading
import time
from dataclasses import asdict
from typing import Any

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from PIL import Image
from rclpy.action import ActionClient, ActionServer, CancelResponse
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import CompressedImage, NavSatFix
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from cityseeker_interfaces.action import Seek
from cityseeker_interfaces.msg import AgentAction, View
from cityseeker_interfaces.msg import Decision as DecisionMsg
from cityseeker_interfaces.msg import ViewSet as ViewSetMsg
from cityseeker_ros.ar.bridge import yaw_quaternion
from cityseeker_ros.ar.console_bridge import ConsoleBridge
from cityseeker_ros.core.ar.protocol import SeekGoal
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import qos, typed


class FakeVehicleBridge(Node):
    def __init__(self) -> None:
        super().__init__("vehicle_bridge")
        self.estop: list[bool] = []
        self.calls: list[str] = []
        self.create_subscription(Bool, "/estop", lambda m: self.estop.append(bool(m.data)), qos.ESTOP)
        for name in ("reset_estop", "take_control", "return_to_launch"):
            self.create_service(Trigger, f"~/{name}", lambda req, res, n=name: self._answer(n, res))
        self.fix = self.create_publisher(NavSatFix, "~/fix", qos.STATE)
        self.odom = self.create_publisher(Odometry, "~/odom", qos.STATE)
        self.safety = self.create_publisher(typed.msg_type(BridgeStatus), "~/safety", qos.STATE)
        self.diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        self.violations = self.create_publisher(DiagnosticArray, "~/flight_rule_violations", qos.OUTCOMES)

    def _answer(self, name: str, res: Any) -> Any:
        self.calls.append(name)
        res.success, res.message = name != "return_to_launch", f"{name} answered by the stand-in"
        return res


class FakeSupervisor(Node):
    def __init__(self) -> None:
        super().__init__("supervisor")
        self.goals: list[dict] = []
        self.resets = 0
        self.guidance = self.create_publisher(typed.msg_type(Guidance), "~/guidance", qos.STATE)
        self.create_service(Trigger, "~/reset_estop", self._reset)
        self.server = ActionServer(self, Seek, "~/seek", execute_callback=self._execute,
                                   cancel_callback=lambda handle: CancelResponse.ACCEPT)  # the real one accepts

    def _reset(self, req: Any, res: Any) -> Any:
        self.resets += 1
        res.success = True
        return res

    async def _execute(self, handle: Any) -> Any:
        goal = handle.request
        self.goals.append({"need": goal.need, "family": goal.family, "max_steps": goal.max_steps})
        if goal.need == "walk until cancelled":  # another client's goal (`cityseeker seek`): runs until cancelled
            handle.publish_feedback(Seek.Feedback(node="n7", step=1, steps_left=34, reason="a bakery", distance_m=9.0))
            while not handle.is_cancel_requested:
                tick = Future()
                timer = self.create_timer(0.05, lambda t=tick: t.set_result(True))
                await tick
                self.destroy_timer(timer)
            handle.canceled()
            return Seek.Result(outcome=Seek.Result.CANCELLED, code="cancelled", reason="cancelled by the client")
        feedback = Seek.Feedback(node="n2", step=1, steps_left=11, reason="a cafe sign", distance_m=20.0)
        handle.publish_feedback(feedback)
        handle.succeed()
        return Seek.Result(outcome=Seek.Result.FOUND, code="stopped", reason="a cafe is here", node="n2", steps=1,
                           distance_m=20.0)


def jpeg(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.full((480, 640, 3), colour, np.uint8)).save(out, "JPEG")
    return out.getvalue()


def main(out_path: str) -> int:
    rclpy.init()
    events: list[Any] = []
    bridge = ConsoleBridge(events.append)
    vehicle, supervisor = FakeVehicleBridge(), FakeSupervisor()
    others = Node("stand_ins")
    decision_pub = others.create_publisher(DecisionMsg, "/decision/decision", qos.STATE)
    images_pub = others.create_publisher(CompressedImage, "/camera_ingest/images/compressed", qos.view_images(12))
    views_pub = others.create_publisher(ViewSetMsg, "/camera_ingest/views", qos.STATE)
    executor = SingleThreadedExecutor()
    for node in (bridge, vehicle, supervisor, others):
        executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()

    def wait(predicate: Any, what: str, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"probe: no {what} within {timeout_s:g} s")
            time.sleep(0.02)

    def kinds() -> list[str]:
        return [type(e).__name__ for e in events]

    wait(lambda: all(c.service_is_ready() for c in bridge.triggers.values()) and bridge.seek_client.server_is_ready()
         and bridge.supervisor_reset.service_is_ready(), "services")
    # What the vehicle bridge publishes.
    odom = Odometry()
    o = odom.pose.pose.orientation
    o.x, o.y, o.z, o.w = yaw_quaternion(90.0)  # facing east
    vehicle.odom.publish(odom)
    wait(lambda: bridge._heading is not None, "odometry")
    vehicle.fix.publish(NavSatFix(latitude=43.7372, longitude=7.4231, altitude=0.0))
    vehicle.safety.publish(typed.to_ros(BridgeStatus(True, "ok", "moving to the next node", False, True)))
    publish_diagnostics(vehicle, vehicle.diag, "vehicle", "ok", "moving", {"link": "walker", "mode": "walking",
                                                                           "battery": 0.5})
    publish_diagnostics(vehicle, vehicle.violations, "flight_rules", "error", "max_speed: 6.1 m/s over 5 m/s", {})
    supervisor.guidance.publish(typed.to_ros(Guidance("move", "n1", "n2", 90.0, 0.0, "front", 20.0, "shops", None,
                                                      "go ahead", "vs1")))
    wait(lambda: {"VehicleFix", "SafetyReport", "LinkReport", "BatteryReport", "Violation", "GoingTo"} <= set(kinds()),
         "the vehicle's topics")
    # A decision before the view set it answers and that view set's images on camera_ingest's topics:
    # three writers, which DDS does not order among themselves (a fast policy's decision overtakes).
    decision_pub.publish(DecisionMsg(view_set_id="vs1", step=2, ok=True, action=AgentAction(kind=0, index=1),
                                     rationale="the green street has a cafe", latency_s=0.75))
    wait(lambda: "vs1" in bridge._pending, "the decision")
    stamp = Time(sec=5, nanosec=7)
    view_set = ViewSetMsg(view_set_id="vs1", node="n1", step=2, steps_left=33,
                          views=[View(index=0, heading_deg=10.0, relative="front", frame_id="view_0"),
                                 View(index=1, heading_deg=100.0, relative="right", frame_id="view_1"),
                                 View(index=2, heading_deg=190.0, relative="back", frame_id="")])
    view_set.header.stamp = stamp
    views_pub.publish(view_set)
    wait(lambda: "vs1" in bridge._view_sets, "the view set")
    early = "DecisionMade" in kinds()  # its images are not here yet: the decision still waits
    for i, colour in enumerate(((200, 0, 0), (0, 200, 0))):
        image = CompressedImage(format="jpeg", data=jpeg(colour))
        image.header.stamp, image.header.frame_id = stamp, f"view_{i}"
        images_pub.publish(image)
    wait(lambda: "DecisionMade" in kinds(), "the decision")
    # Every command, as the console hands them over.
    bridge.ask_hold()  # no Seek from this console: nothing to cancel, and the answer says so
    wait(lambda: "CommandDone" in kinds(), "hold's answer")
    bridge.ask_estop()
    wait(lambda: vehicle.estop == [True], "/estop true")
    for press, name in ((bridge.ask_take_control, "take_control"), (bridge.ask_return_to_launch, "return_to_launch"),
                        (bridge.ask_reset_estop, "reset_estop")):
        press()
        wait(lambda n=name: n in vehicle.calls, name)
    wait(lambda: supervisor.resets == 1 and vehicle.estop == [True, False], "the supervisor's reset")
    bridge.seek(SeekGoal("I am thirsty", "needs", 12))
    wait(lambda: "SeekEnded" in kinds(), "the Seek's result")
    wait(lambda: sum(1 for e in events if type(e).__name__ == "CommandDone") >= 5, "every answer")
    # A goal another client sent (as `cityseeker seek` does): Hold cancels it through the action's cancel service.
    other = ActionClient(others, Seek, "/supervisor/seek")
    other_goal = other.send_goal_async(Seek.Goal(need="walk until cancelled"))
    wait(lambda: other_goal.done() and other_goal.result().accepted, "the other client's goal")
    wait(lambda: len(supervisor.goals) == 2 and kinds().count("SeekProgress") == 2, "the other goal's step")
    bridge.ask_hold()
    other_result = other_goal.result().get_result_async()
    wait(lambda: other_result.done(), "the other goal's end")
    other_outcome = other_result.result().result.code
    wait(lambda: kinds().count("SeekEnded") == 2, "the other goal's end, from the action's status")
    report = {"events": [{"kind": type(e).__name__,
                          **{k: ([{**{kk: vv for kk, vv in v.items() if kk != "image"}, "image_bytes": len(v["image"])}
                                  for v in val] if k == "views" else val)
                             for k, val in asdict(e).items()}} for e in events],
              "estop": vehicle.estop, "calls": vehicle.calls, "decided_before_its_images": early,
              "goals": supervisor.goals, "resets": supervisor.resets, "other_goal_code": other_outcome}
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, default=str)
    executor.shutdown(timeout_sec=2.0)
    thread.join(5.0)
    for node in (bridge, vehicle, supervisor, others):
        node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
