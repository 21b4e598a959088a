"""Test helper, run as its own ROS process: `python -m tests.nodes.bridge_probe OUT.json ESTOP_FILE`.

Builds nodes/vehicle_bridge.py's node on the walker link in this process and, without spinning it,
calls its inputs directly: motion commands with a wrong frame or a stale stamp (then good ones),
and a scripted bridge status for a link lost and back. Writes to OUT.json which commands reached
`VehicleBridge.command()` and what ~/safety said; the node's log lines go to stderr as usual,
between `@@ PHASE` markers, so the test counts them as an operator would read them.
"""
from __future__ import annotations

import json
import sys
from typing import Any

import rclpy
from builtin_interfaces.msg import Time
from rclpy.parameter import Parameter

from cityseeker_interfaces.msg import MotionCommand
from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.nodes.vehicle_bridge import VehicleBridgeNode

START = "43.7384,7.4246"
LOST = ["no vehicle state for 0.6 s (link_timeout_s 0.5 s); hold not confirmed: the vehicle may still be moving",
        "no vehicle state for 0.6 s (link_timeout_s 0.5 s); holding", "connecting to the vehicle"]


def phase(name: str) -> None:
    print(f"@@ PHASE {name}", file=sys.stderr, flush=True)


def stamp(seconds: float) -> Time:
    return Time(sec=int(seconds), nanosec=int(round((seconds - int(seconds)) * 1e9)) % 1_000_000_000)


def command(kind: int, frame_id: str, at: float) -> MotionCommand:
    msg = MotionCommand(type=kind, reason="probe", goal_heading_deg=float("nan"), speed_m_s=float("nan"))
    msg.header.frame_id, msg.header.stamp = frame_id, stamp(at)
    if kind == MotionCommand.GOAL:
        msg.goal.latitude, msg.goal.longitude, msg.goal.altitude = 43.7386, 7.4248, 0.0
    elif kind == MotionCommand.VELOCITY:
        msg.velocity.linear.x = 1.0  # one metre a second east (or north, in NED)
    return msg


def main() -> None:
    out, estop_file = sys.argv[1], sys.argv[2]
    rclpy.init()
    node = VehicleBridgeNode(parameter_overrides=[
        Parameter("link", value="walker"), Parameter("link_params", value=json.dumps({"start": START})),
        Parameter("estop_state_file", value=estop_file)])
    report: dict[str, Any] = {"commands": []}
    try:
        reached: list[str] = []
        real = node._bridge.command
        node._bridge.command = lambda c, now=None: (reached.append(type(c).__name__), real(c, now))[1]
        published: list[tuple[str, str]] = []
        node._safety_pub.publish = lambda msg: published.append((msg.code, msg.reason))
        node._watch_status()  # the bridge's own first status: ~/safety has something to carry a refusal
        now = node.get_clock().now().nanoseconds * 1e-9

        phase("ENVELOPE")
        for name, msg in [
            ("velocity ned", command(MotionCommand.VELOCITY, "ned", now)),
            ("velocity base_link", command(MotionCommand.VELOCITY, "base_link", now)),
            ("goal 1970", command(MotionCommand.GOAL, "", 0.0)),
            ("goal 1970-01-02", command(MotionCommand.GOAL, "", 86_400.0)),
            ("goal an hour ahead", command(MotionCommand.GOAL, "", now + 3600.0)),
            ("goal 5 s old", command(MotionCommand.GOAL, "", now - 5.0)),
            ("goal now", command(MotionCommand.GOAL, "", now)),
            ("velocity enu", command(MotionCommand.VELOCITY, "enu", now)),
            ("hold 1970", command(MotionCommand.HOLD, "ned", 0.0)),
        ]:
            before = len(reached)
            node._on_command(msg)
            report["commands"].append({"name": name, "reached": reached[before:],
                                       "latest": type(node._bridge.gate.latest).__name__,
                                       "safety": published[-1][1] if published else ""})

        statuses = {"current": BridgeStatus(True, "ok", "ok", False, True)}
        node._bridge.status = lambda: statuses["current"]

        def feed(status: BridgeStatus, times: int) -> None:
            statuses["current"] = status
            for _ in range(times):
                node._watch_status()

        phase("WARM")
        feed(BridgeStatus(False, "link_error", LOST[2], False, False), 3)  # the bridge starting
        feed(BridgeStatus(True, "ok", "ok", False, True), 3)
        phase("LOSS")
        for i in range(60):  # the status as a lost link goes: reasons change, the code stays
            feed(BridgeStatus(i % 2 == 0, "link_error", LOST[i % 3], False, False), 1)
        phase("BACK")
        feed(BridgeStatus(False, "ok", "holding: nothing moves until a decision made after the reconnect",
                          False, True), 20)
        phase("END")
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    with open(out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
