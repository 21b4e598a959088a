"""Test helper, run as its own ROS process: `python -m tests.ros.seek_driver PLAN.json OUT.json`.

An operator with the project's Seek client (cityseeker_ros/nodes/seek_client.py): it sends Seek
and RunEpisode goals, cancels them, trips and resets the e-stop, and records every motion
command the supervisor publishes on /supervisor/command with its arrival time (monotonic, the
clock the cancel times are taken on). Clients are named ("a", "b"), so two goals can be in
flight at once.

PLAN.json: {"timeout_s": 60, "steps": [op, ...]} with ops:
  {"op": "seek", "client": "a", "need": "...", "max_steps": 0, "preempt": false,
   "until": "result" | "feedback", "feedback": N}     send; wait for the result, or N feedbacks
  {"op": "result", "client": "a"}                     wait for the client's result
  {"op": "cancel", "client": "a", "feedback": N, "delay_s": 0.1}   after N feedbacks and the delay,
      cancel; then the result, the hold and every motion command in the next `settle_s` (1.5)
  {"op": "estop", "value": true} | {"op": "reset_estop"} | {"op": "sleep", "s": 1.0}
  {"op": "run_episode", "episode_id": "...", "seed": 0}   a RunEpisode goal to its result
  {"op": "ready"}   until the Seek server takes goals: an empty need, sent until the answer is
      its bad_need rejection rather than not_ready (the decision node or the first fix missing)
Each op's report holds "t" (monotonic time when it was done) and what it observed.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from typing import Any

import rclpy
from rclpy.action import ActionClient
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from cityseeker_interfaces.action import RunEpisode
from cityseeker_ros.nodes.seek_client import NOT_READY, Seeker
from cityseeker_ros.ros import qos, typed
from cityseeker_ros.ros.schema import CommandMsg, as_dict

HOLD_REASON = "cancelled by the client"  # nodes/supervisor_actions.py


class Driver:
    def __init__(self) -> None:
        rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
        self.clients: dict[str, Seeker] = {}
        self.main = self.client("a")
        node = self.main.node
        self.commands: list[dict[str, Any]] = []
        node.create_subscription(typed.msg_type(CommandMsg), "/supervisor/command", self._on_command, qos.STATE)
        # Volatile, as `ros2 topic pub /estop std_msgs/Bool` publishes: a supervisor that heard
        # only transient-local publishers once missed it.
        self.estop_pub = node.create_publisher(Bool, "/estop", qos.ESTOP_VOLATILE)
        self.reset = node.create_client(Trigger, "/supervisor/reset_estop")
        # An operator resets both latches: the vehicle bridge (the simulated walker's) heard the e-stop too.
        self.reset_vehicle = node.create_client(Trigger, "/vehicle_bridge/reset_estop")
        self.episodes = ActionClient(node, RunEpisode, "/supervisor/run_episode")

    def client(self, name: str) -> Seeker:
        if name not in self.clients:
            self.clients[name] = Seeker(node_name=f"seek_driver_{name}")
        return self.clients[name]

    def _on_command(self, msg: Any) -> None:
        record = as_dict(typed.from_ros(msg))
        self.commands.append({"t": time.monotonic(), "type": record["command"]["type"],
                              "reason": record.get("reason", "")})

    def spin(self, s: float) -> None:
        end = time.monotonic() + s
        while time.monotonic() < end:
            for seeker in self.clients.values():
                seeker.executor.spin_once(timeout_sec=0.01)

    def spin_until(self, done, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: nothing within {timeout_s:g} s")
            self.spin(0.02)

    def result(self, seeker: Seeker, timeout_s: float) -> dict[str, Any]:
        self.spin_until(lambda: seeker.finished, timeout_s, "result")
        return asdict(seeker.result(0.0))

    def run(self, op: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        kind = op["op"]
        if kind == "seek":
            seeker = self.client(op.get("client", "a"))
            seeker.wait_until_ready(timeout_s)
            sent = time.monotonic()
            seeker.start(op["need"], op.get("max_steps", 0), op.get("preempt", False))
            if op.get("until", "result") == "feedback":
                self.spin_until(lambda: len(seeker.feedback) >= op.get("feedback", 1)
                                or seeker.finished, timeout_s, "feedback")
                return {"sent": sent, "feedback": len(seeker.feedback), "ended": seeker.finished}
            return {"sent": sent, "result": self.result(seeker, timeout_s), "answered_s": time.monotonic() - sent}
        if kind == "ready":
            deadline, tries = time.monotonic() + timeout_s, 0
            while True:
                tries += 1
                result = self.run({"op": "seek", "need": ""}, timeout_s)["result"]
                if result["code"] != NOT_READY or time.monotonic() > deadline:
                    return {"tries": tries, "result": result}
                self.spin(0.3)
        if kind == "result":
            return {"result": self.result(self.client(op.get("client", "a")), timeout_s)}
        if kind == "cancel":
            seeker = self.client(op.get("client", "a"))
            self.spin_until(lambda: len(seeker.feedback) >= op.get("feedback", 1) or seeker.finished,
                            timeout_s, "feedback before the cancel")
            self.spin(op.get("delay_s", 0.0))
            ended_before = seeker.finished
            first = len(self.commands)
            cancelled_at = time.monotonic()
            seeker.cancel()
            result = self.result(seeker, timeout_s)
            self.spin(op.get("settle_s", 1.5))
            after = [c for c in self.commands[first:] if c["t"] >= cancelled_at]
            holds = [i for i, c in enumerate(after) if c["type"] == "hold" and HOLD_REASON in c["reason"]]
            hold = after[holds[0]] if holds else None
            return {"ended_before": ended_before, "cancelled_at": cancelled_at, "result": result,
                    "hold_s": hold["t"] - cancelled_at if hold else None,
                    "after_hold": [c["type"] for c in after[holds[0] + 1:]] if holds else None}
        if kind == "estop":
            self.estop_pub.publish(Bool(data=bool(op["value"])))
            self.spin(op.get("settle_s", 0.5))
            return {}
        if kind == "reset_estop":
            answers = []
            for client in (self.reset_vehicle, self.reset):
                self.spin_until(client.service_is_ready, timeout_s, f"{client.srv_name} service")
                future = client.call_async(Trigger.Request())
                self.spin_until(future.done, timeout_s, f"{client.srv_name} answer")
                answers.append(future.result())
            return {"success": all(a.success for a in answers), "message": "; ".join(a.message for a in answers)}
        if kind == "sleep":
            self.spin(op["s"])
            return {}
        if kind == "run_episode":
            return self.run_episode(op, timeout_s)
        raise ValueError(f"unknown op {kind!r}")

    def run_episode(self, op: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.spin_until(self.episodes.server_is_ready, timeout_s, "run_episode server")
        feedback: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout_s
        while True:  # a server still starting answers not_ready
            goal = RunEpisode.Goal(episode_id=op["episode_id"], seed=op.get("seed", 0), round=op.get("round", 0),
                                   max_steps=op.get("max_steps", 0))
            sent = self.episodes.send_goal_async(goal, feedback_callback=lambda m: feedback.append(
                {"step": m.feedback.step, "node": m.feedback.node, "steps_left": m.feedback.steps_left}))
            self.spin_until(sent.done, timeout_s, "run_episode acceptance")
            answer = sent.result().get_result_async()
            self.spin_until(answer.done, timeout_s, "run_episode result")
            response = answer.result()
            error = response.result.episode.error
            if not error.startswith("rejected (not_ready)") or time.monotonic() > deadline:
                break
            feedback.clear()
            self.spin(0.5)
        record = json.loads(response.result.outcome.record_json) if response.result.outcome.record_json else None
        return {"status": response.status, "error": error, "record": record, "feedback": feedback,
                "path": list(response.result.episode.path), "end_reason": response.result.episode.end_reason}


def main() -> None:
    plan = json.loads(open(sys.argv[1]).read())
    driver = Driver()
    report: list[dict[str, Any]] = []
    try:
        for op in plan["steps"]:
            report.append({"op": op["op"], "t": time.monotonic(), **driver.run(op, float(plan.get("timeout_s", 60)))})
    except Exception as exc:  # the report says how far it got
        report.append({"op": "error", "error": f"{type(exc).__name__}: {exc}"})
    finally:
        with open(sys.argv[2], "w") as out:
            json.dump({"steps": report, "commands": driver.commands}, out)
        for seeker in driver.clients.values():
            seeker.close()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
