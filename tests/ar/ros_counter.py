"""Test helper, run as its own ROS process: `python -m tests.ar.ros_counter OUT.json`.

Counts, independently of the AR server, what reaches ROS from it and what the stack sends back:
frames on /ar_server/frames/compressed, fixes on /ar_server/odom, Seek goals (distinct goal ids on
the action's status topic, the readiness probes included), motion commands on
/supervisor/command (each with its kind and wall time) and guidance on /supervisor/guidance (wall
times). Rewrites OUT.json every 0.1 s until SIGTERM or SIGINT."""
from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import rclpy
from action_msgs.msg import GoalStatusArray
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage

from cityseeker_interfaces.msg import Guidance, MotionCommand
from cityseeker_ros.ros import qos

KINDS = {MotionCommand.GOAL: "goal", MotionCommand.HOLD: "hold"}


class Counter(Node):
    def __init__(self) -> None:
        super().__init__("ar_test_counter")
        self.frames = self.fixes = 0
        self.goal_ids: set[str] = set()
        self.commands: list[tuple[str, float]] = []
        self.guidance: list[tuple[str, float]] = []
        self.create_subscription(CompressedImage, "/ar_server/frames/compressed", self._frame, qos.CAMERA)
        self.create_subscription(Odometry, "/ar_server/odom", self._fix, qos.STATE)
        self.create_subscription(MotionCommand, "/supervisor/command", self._command, qos.STATE)
        self.create_subscription(Guidance, "/supervisor/guidance", self._guidance, qos.STATE)
        status_qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(GoalStatusArray, "/supervisor/seek/_action/status", self._status, status_qos)

    def _frame(self, msg: Any) -> None:
        self.frames += 1

    def _fix(self, msg: Any) -> None:
        self.fixes += 1

    def _command(self, msg: Any) -> None:
        self.commands.append((KINDS.get(msg.type, str(msg.type)), time.time()))

    def _guidance(self, msg: Any) -> None:
        self.guidance.append((msg.view_set_id, time.time()))

    def _status(self, msg: Any) -> None:
        for status in msg.status_list:
            self.goal_ids.add(bytes(status.goal_info.goal_id.uuid).hex())

    def snapshot(self) -> dict[str, Any]:
        return {"frames": self.frames, "fixes": self.fixes, "goals": len(self.goal_ids),
                "commands": self.commands, "guidance": self.guidance, "at": time.time()}


def main() -> int:
    out = Path(sys.argv[1])
    rclpy.init()
    node = Counter()
    stop = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.append(1))
    last = 0.0
    while not stop:
        rclpy.spin_once(node, timeout_sec=0.05)
        if time.monotonic() - last > 0.1:
            last = time.monotonic()
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps(node.snapshot()))
            tmp.replace(out)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
