"""Test helper, run as its own ROS process: `python -m tests.ros.walker_driver PLAN.json OUT.json`.

A walking user with a GNSS receiver who does what the AR guidance says: publishes NavSatFix at
its position on /test/fix, and on every motion goal from the supervisor walks (teleports) to it.
Records the guidance and commands it got and the supervisor's status, until the supervisor says
"finished" or the timeout. PLAN.json: {"start": [lat, lon], "period_s": 0.05, "timeout_s": 120}
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import String

from cityseeker_ros.ros import convert, qos
from cityseeker_ros.ros.schema import CommandMsg, GuidanceMsg, SupervisorStatusMsg, as_dict, parse


class Walker(Node):
    def __init__(self, start: list[float]) -> None:
        super().__init__("walker")
        self.position = tuple(start)
        self.guidance: list[dict[str, Any]] = []
        self.commands: list[dict[str, Any]] = []
        self.state = ""
        self.fix_pub = self.create_publisher(NavSatFix, "/test/fix", qos.STATE)
        self.create_subscription(String, "/supervisor/command", self._on_command, qos.STATE)
        self.create_subscription(String, "/supervisor/guidance", self._on_guidance, qos.STATE)
        self.create_subscription(String, "/supervisor/status", self._on_status, qos.STATE)

    def _on_command(self, msg: String) -> None:
        command = parse(CommandMsg, msg.data)
        self.commands.append(as_dict(command))
        if command.command.type == "goal":
            self.position = (command.command.lat, command.command.lon)

    def _on_guidance(self, msg: String) -> None:
        self.guidance.append(as_dict(parse(GuidanceMsg, msg.data)))

    def _on_status(self, msg: String) -> None:
        self.state = parse(SupervisorStatusMsg, msg.data).state

    def fix(self) -> None:
        stamp = convert.stamp_from_msg(self.get_clock().now().to_msg())
        self.fix_pub.publish(convert.navsatfix(self.position[0], self.position[1], stamp, "map"))


def main() -> None:
    plan = json.loads(open(sys.argv[1]).read())
    rclpy.init()
    walker = Walker(plan["start"])
    deadline = time.monotonic() + float(plan.get("timeout_s", 120))
    try:
        while walker.state != "finished" and time.monotonic() < deadline:
            walker.fix()
            end = time.monotonic() + float(plan.get("period_s", 0.05))
            while time.monotonic() < end:
                rclpy.spin_once(walker, timeout_sec=max(0.0, end - time.monotonic()))
    finally:
        with open(sys.argv[2], "w") as out:
            json.dump({"state": walker.state, "guidance": walker.guidance, "commands": walker.commands}, out)
        walker.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
