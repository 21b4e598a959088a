"""Test helper, run as its own ROS process: `python -m tests.ros.decide_client_driver --ros-args
-p out:=OUT.json -p trials:=N -p ticks:=K -p tick_s:=T -p seed:=S`, against the Decide server of
tests/interfaces/decide_peers.py (role server) on /test/decide.

Drives ros/decide_client.DecideClient as the supervisor does (result asked for at acceptance):
a plain goal and its result; a goal the server rejects; `trials` goals of `ticks` feedback ticks,
each cancelled at a random instant; and what the client left on the graph (subscriptions: the
point of the client is to take none, so the server's status messages wake nobody here). Only
spin_once in this main loop; the report goes to OUT.json, assertions are the test's.
"""
from __future__ import annotations

import json
import random
import time
from typing import Any

import rclpy
from action_msgs.msg import GoalStatus
from rclpy.node import Node

from cityseeker_interfaces.action import Decide
from cityseeker_ros.ros.decide_client import DecideClient
from tests.interfaces.decide_peers import STATUS, sample_view_set

ACTION = "/test/decide"


class Driver(Node):
    def __init__(self) -> None:
        super().__init__("decide_client_driver")
        self.out = str(self.declare_parameter("out", "").value)
        self.trials = int(self.declare_parameter("trials", 10).value)
        self.ticks = int(self.declare_parameter("ticks", 10).value)
        self.tick_s = float(self.declare_parameter("tick_s", 0.005).value)
        self.rng = random.Random(int(self.declare_parameter("seed", 0).value))
        self.client = DecideClient(self, ACTION)

    def spin_until(self, done: Any, timeout_s: float = 30.0) -> bool:
        end = time.monotonic() + timeout_s
        while not done() and time.monotonic() < end:
            rclpy.spin_once(self, timeout_sec=0.01)
        return bool(done())

    def goal(self, view_set_id: str, ticks: int) -> Decide.Goal:
        goal = Decide.Goal(view_set=sample_view_set(view_set_id, ticks), timeout_s=30.0)
        goal.context.history = "n1 -> n42"
        return goal

    def send(self, goal: Decide.Goal) -> Any:
        """The goal's handle once answered, its result asked for at once (as the supervisor does)."""
        sent = self.client.send_goal_async(goal)
        assert self.spin_until(sent.done), "no answer to the goal request"
        handle = sent.result()
        if handle is not None and handle.accepted:
            handle.get_result_async()
        return handle

    def outcome(self, handle: Any) -> dict[str, Any]:
        result = handle.get_result_async()
        assert self.spin_until(result.done), "no result"
        response = result.result()
        decision = response.result.decision
        return {"status": STATUS.get(response.status, response.status), "ok": decision.ok, "error": decision.error,
                "view_set_id": decision.view_set_id, "index": decision.action.index,
                "rationale": decision.rationale, "same_handle_future": handle.get_result_async() is result}

    def run(self) -> dict[str, Any]:
        report: dict[str, Any] = {"ready": self.spin_until(self.client.server_is_ready, 30.0)}
        plain = self.send(self.goal("vs-plain", 3))
        report["plain"] = {"accepted": plain.accepted, **self.outcome(plain)}
        report["rejected"] = {"accepted": self.send(self.goal("", 1)).accepted}
        trials = []
        for i in range(self.trials):
            handle = self.send(self.goal(f"vs-{i}", self.ticks))
            delay = self.rng.uniform(0.0, 2 * self.ticks * self.tick_s)
            self.spin_until(lambda: False, delay)
            cancel = handle.cancel_goal_async()
            assert self.spin_until(cancel.done), "no answer to the cancel request"
            accepted = cancel.result().return_code == 0 and len(cancel.result().goals_canceling) == 1
            trials.append({"delay_s": round(delay, 4), "cancel_accepted": accepted, **self.outcome(handle)})
        report["trials"] = trials
        # What this client put on the graph: no subscription at all, so nothing of the action's
        # status (or feedback) topic reaches it; the server's publishers see no reader of ours.
        report["subscriptions"] = [s.topic_name for s in self.subscriptions]
        report["status_readers"] = self.count_subscribers(f"{ACTION}/_action/status")
        report["status_writers"] = self.count_publishers(f"{ACTION}/_action/status")
        report["unknown_status"] = GoalStatus.STATUS_UNKNOWN
        return report


def main() -> None:
    rclpy.init()
    node = Driver()
    try:
        report = node.run()
        with open(node.out, "w") as out:
            json.dump(report, out, indent=1)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
