"""Test helper, run as its own ROS process: `python vehicle_driver.py PLAN.json OUT.json`.

It stands in for the supervisor in front of a vehicle_bridge: it beats the heartbeat, sends
commands, trips the e-stop, calls ~/reset_estop, and records every SafetyStatus, fix and odometry
it receives with its arrival time on time.monotonic (CLOCK_MONOTONIC, the clock the test's
AirSim protocol fake stamps its calls with). Everything runs in the main loop (spin_once).

PLAN.json: {"bridge": "/vehicle_bridge", "command": "/command", "heartbeat": "/heartbeat",
"estop_listeners": 1, "steps": [op, ...]} (the bridge's `command` and `heartbeat` as it resolves them) with ops:
  {"op": "heartbeat", "on": true, "rate_hz": 20}      start/stop beating
  {"op": "command", "goal": {...}} | {"hold": true}   one CommandMsg (core Goal fields)
  {"op": "commands", "goal": {...}, "period_s": 0.1, "for_s": 1.0}   repeat it
  {"op": "wait_safety", "code": "ok", "moving": true, "timeout_s": 20}
  {"op": "wait_state", "timeout_s": 20}                a fix and an odometry arrived
  {"op": "sleep", "s": 1.0}                            spin meanwhile
  {"op": "estop", "value": true}
  {"op": "reset_estop"}
Each op's report holds "t" (monotonic time when it was done or its condition met).
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rclpy
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Bool, Header
from std_srvs.srv import Trigger

from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Goal
from cityseeker_ros.ros import convert, qos, typed
from cityseeker_ros.ros.schema import CommandMsg, as_dict


class VehicleDriver(Node):
    def __init__(self, bridge: str, command: str, heartbeat: str) -> None:
        super().__init__("vehicle_driver")
        self.bridge = bridge
        self.safety: list[dict[str, Any]] = []
        self.fix: dict[str, Any] | None = None
        self.odom: dict[str, Any] | None = None
        self.beating, self.beat_period = False, 0.05
        self._next_beat = 0.0
        self.create_subscription(typed.msg_type(BridgeStatus), f"{bridge}/safety", self._on_safety, qos.STATE)
        self.create_subscription(NavSatFix, f"{bridge}/fix", self._on_fix, qos.STATE)
        self.create_subscription(Odometry, f"{bridge}/odom", self._on_odom, qos.STATE)
        self.command_pub = self.create_publisher(typed.msg_type(CommandMsg), command, qos.STATE)
        self.heartbeat_pub = self.create_publisher(Header, heartbeat, 10)
        self.estop_pub = self.create_publisher(Bool, "/estop", qos.ESTOP)
        self.reset = self.create_client(Trigger, f"{bridge}/reset_estop")
        self.reset_supervisor = self.create_client(Trigger, "/supervisor/reset_estop")

    def _on_safety(self, msg: Any) -> None:
        self.safety.append({"t": time.monotonic(), **as_dict(typed.from_ros(msg))})

    def _on_fix(self, msg: NavSatFix) -> None:
        self.fix = {"t": time.monotonic(), "lat": msg.latitude, "lon": msg.longitude, "alt": msg.altitude,
                    "frame_id": msg.header.frame_id}

    def _on_odom(self, msg: Odometry) -> None:
        p, o, v = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist.linear
        self.odom = {"t": time.monotonic(), "position": [p.x, p.y, p.z], "orientation": [o.w, o.x, o.y, o.z],
                     "twist": [v.x, v.y, v.z], "frame_id": msg.header.frame_id, "child": msg.child_frame_id}

    def pump(self) -> None:
        """Beat when due, then serve callbacks for a moment."""
        now = time.monotonic()
        if self.beating and now >= self._next_beat:
            self.heartbeat_pub.publish(Header(stamp=self.get_clock().now().to_msg(), frame_id="driver"))
            self._next_beat = now + self.beat_period
        rclpy.spin_once(self, timeout_sec=0.005)

    def spin_until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if done():
                return True
            self.pump()
        return done()

    def send(self, step: dict[str, Any]) -> None:
        field = HOLD if step.get("hold") else Goal(**step["goal"])
        stamp = convert.stamp_from_ns(self.get_clock().now().nanoseconds)
        self.command_pub.publish(typed.to_ros(CommandMsg(stamp=stamp, command=field, reason="driver")))

    # -- ops -----------------------------------------------------------------------------------

    def op_heartbeat(self, step: dict[str, Any]) -> dict[str, Any]:
        self.beating, self.beat_period = bool(step["on"]), 1.0 / float(step.get("rate_hz", 20.0))
        self._next_beat = 0.0
        self.pump()
        return {}

    def op_command(self, step: dict[str, Any]) -> dict[str, Any]:
        self.send(step)
        return {}

    def op_commands(self, step: dict[str, Any]) -> dict[str, Any]:
        end, sent = time.monotonic() + float(step["for_s"]), 0
        while time.monotonic() < end:
            self.send(step)
            sent += 1
            self.op_sleep({"s": step["period_s"]})
        self.send(step)  # the last one, stamped by the op's "t"
        return {"sent": sent + 1}

    def op_wait_safety(self, step: dict[str, Any]) -> dict[str, Any]:
        start = len(self.safety) if step.get("new", False) else 0

        def seen() -> bool:
            last = self.safety[-1] if len(self.safety) > start else None
            return last is not None and last["code"] == step["code"] and (
                "moving" not in step or last["moving"] == step["moving"])

        ok = self.spin_until(seen, float(step.get("timeout_s", 20.0)))
        return {"ok": ok, "safety": self.safety[-1] if self.safety else None}

    def op_wait_state(self, step: dict[str, Any]) -> dict[str, Any]:
        after = time.monotonic()
        ok = self.spin_until(lambda: self.fix is not None and self.odom is not None and self.fix["t"] > after
                             and self.odom["t"] > after, float(step.get("timeout_s", 20.0)))
        return {"ok": ok, "fix": self.fix, "odom": self.odom}

    def op_sleep(self, step: dict[str, Any]) -> dict[str, Any]:
        end = time.monotonic() + float(step["s"])
        self.spin_until(lambda: time.monotonic() >= end, float(step["s"]) + 1.0)
        return {}

    def op_estop(self, step: dict[str, Any]) -> dict[str, Any]:
        sent_t = time.monotonic()
        self.estop_pub.publish(Bool(data=bool(step["value"])))
        self.pump()
        return {"sent_t": sent_t}

    def op_reset_estop(self, step: dict[str, Any]) -> dict[str, Any]:
        """The bridge's latch; with "supervisor": true also the supervisor's, which heard the
        e-stop too (an operator resets both)."""
        replies = []
        for client in (self.reset, self.reset_supervisor) if step.get("supervisor") else (self.reset,):
            if not client.wait_for_service(timeout_sec=30.0):
                raise TimeoutError(f"{client.srv_name} service not available")
            future = client.call_async(Trigger.Request())
            self.spin_until(future.done, 30.0)
            replies.append(future.result())
        return {"success": all(r.success for r in replies), "message": "; ".join(r.message for r in replies)}

    def wait_for_peers(self, estop_listeners: int = 1, timeout_s: float = 60.0) -> bool:
        """The bridge subscribes to what we publish (commands sent before that would be lost), we
        hear its ~/safety, and `estop_listeners` nodes hear /estop (2 where a supervisor runs too:
        an e-stop it missed would let its episode run on)."""
        safety = f"{self.bridge}/safety"
        return self.spin_until(lambda: self.command_pub.get_subscription_count() > 0
                               and self.estop_pub.get_subscription_count() >= estop_listeners
                               and self.count_publishers(safety) > 0, timeout_s)


def main(argv: list[str]) -> int:
    plan = json.loads(Path(argv[1]).read_text())
    rclpy.init()
    driver = VehicleDriver(plan.get("bridge", "/vehicle_bridge"), plan.get("command", "/command"),
                           plan.get("heartbeat", "/heartbeat"))
    report: dict[str, Any] = {"steps": []}
    try:
        if not driver.wait_for_peers(int(plan.get("estop_listeners", 1))):
            raise TimeoutError("the bridge never subscribed to commands (or /estop had too few listeners, "
                               "or its ~/safety was not heard)")
        for step in plan["steps"]:
            result = getattr(driver, f"op_{step['op']}")(step)
            report["steps"].append({"op": step["op"], "t": time.monotonic(), **result})
        report["safety"] = driver.safety
    finally:
        Path(argv[2]).write_text(json.dumps(report))
        driver.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
