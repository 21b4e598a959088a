"""Test helper, run as its own ROS process: `python -m tests.ros.walker_driver PLAN.json OUT.json`.

A walking user with a GNSS receiver who does what the AR guidance says: the project's
core.vehicles.sim.SimulatedWalker (teleporting to each goal), its fixes published as NavSatFix on /test/fix.
Records the guidance and commands it got, the supervisor's statuses and outcome records, until
the supervisor says "finished" or the timeout. PLAN.json: {"start": [lat, lon], "period_s": 0.05,
"timeout_s": 120, "follow_goals": N} (optional: after N goals that move it, it stops moving; a goal
where it already stands does not count, so a late start does not change the plan).
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Optional

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import NavSatFix

from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.state_machine import SupervisorStatus
from cityseeker_ros.core.vehicles.sim import SimulatedWalker
from cityseeker_ros.ros import convert, qos, typed
from cityseeker_ros.ros.convert_vehicle import command_from_msg
from cityseeker_ros.ros.schema import CommandMsg, OutcomeMsg, as_dict


class Walker(Node):
    def __init__(self, start: list[float], follow_goals: Optional[int] = None) -> None:
        super().__init__("walker")
        self.walker = SimulatedWalker(start[0], start[1], follow_goals=follow_goals)
        self.guidance: list[dict[str, Any]] = []
        self.commands: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self.outcomes: list[dict[str, Any]] = []
        self.state = ""
        self.fix_pub = self.create_publisher(NavSatFix, "/test/fix", qos.STATE)
        self.create_subscription(typed.msg_type(CommandMsg), "/supervisor/command", self._on_command, qos.STATE)
        self.create_subscription(typed.msg_type(Guidance), "/supervisor/guidance", self._on_guidance, qos.STATE)
        self.create_subscription(typed.msg_type(SupervisorStatus), "/supervisor/status", self._on_status, qos.STATE)
        self.create_subscription(typed.msg_type(OutcomeMsg), "/supervisor/outcome", self._on_outcome, qos.OUTCOMES)

    def _on_command(self, msg: Any) -> None:
        command = typed.from_ros(msg)
        self.commands.append(as_dict(command))
        self.walker.command(command_from_msg(command))

    def _on_guidance(self, msg: Any) -> None:
        self.guidance.append(as_dict(typed.from_ros(msg)))

    def _on_status(self, msg: Any) -> None:
        status = typed.from_ros(msg)
        self.state = status.state
        self.statuses.append({"state": status.state, "reason": status.reason})

    def _on_outcome(self, msg: Any) -> None:
        self.outcomes.append(typed.from_ros(msg).record)

    def fix(self) -> None:
        stamp = convert.stamp_from_msg(self.get_clock().now().to_msg())
        lat, lon = self.walker.fix()
        self.fix_pub.publish(convert.navsatfix(lat, lon, stamp, "map"))


def main() -> None:
    plan = json.loads(open(sys.argv[1]).read())
    rclpy.init()
    walker = Walker(plan["start"], plan.get("follow_goals"))
    deadline = time.monotonic() + float(plan.get("timeout_s", 120))
    try:
        while walker.state != "finished" and time.monotonic() < deadline:
            walker.fix()
            end = time.monotonic() + float(plan.get("period_s", 0.05))
            while time.monotonic() < end:
                rclpy.spin_once(walker, timeout_sec=max(0.0, end - time.monotonic()))
    finally:
        with open(sys.argv[2], "w") as out:
            json.dump({"state": walker.state, "guidance": walker.guidance, "commands": walker.commands,
                       "statuses": walker.statuses, "outcomes": walker.outcomes}, out)
        walker.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
