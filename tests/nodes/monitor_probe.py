"""Test helper, run as its own ROS process:
`python -m tests.nodes.monitor_probe OUT.json ESTOP_FILE SAFETY_FILE MONITOR(true|false)`.

Builds nodes/vehicle_bridge.py's node on the walker link with a safety file, without spinning it, and
drives it: a goal inside the fence through `_on_command` (a clean flight), then a driver that calls the
link the bridge drives directly with a goal far outside the fence, behind the bridge's back. Writes to
OUT.json what /diagnostics and ~/flight_rule_violations carried, the bridge's e-stop, and the report the
node wrote when destroyed; the node's log lines go to stderr as usual, between `@@ PHASE` markers.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any

import rclpy
from builtin_interfaces.msg import Time
from rclpy.parameter import Parameter
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from cityseeker_interfaces.msg import MotionCommand
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.authority import State
from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.link import PilotOverride
from cityseeker_ros.nodes.vehicle_bridge import VehicleBridgeNode
from tests.core.vehicles.test_bridge import wait_for

START = (43.7384, 7.4246)


def phase(name: str) -> None:
    print(f"@@ PHASE {name}", file=sys.stderr, flush=True)


def statuses(array: Any) -> list[dict[str, Any]]:
    return [{"name": s.name, "level": int.from_bytes(s.level, "little") if isinstance(s.level, bytes) else int(s.level),
             "message": s.message, "values": {kv.key: kv.value for kv in s.values}} for s in array.status]


def main() -> None:
    out, estop_file, safety_file, monitor = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "true"
    rclpy.init()
    node = VehicleBridgeNode(parameter_overrides=[
        Parameter("link", value="walker"),
        Parameter("link_params", value=json.dumps({"start": f"{START[0]},{START[1]}"})),
        Parameter("safety_config", value=safety_file), Parameter("estop_state_file", value=estop_file),
        Parameter("monitor", value=monitor)])
    report: dict[str, Any] = {"link": type(node._bridge.link).__name__}
    diagnostics: list[dict[str, Any]] = []
    violations: list[dict[str, Any]] = []
    node._diag_pub.publish = lambda msg: diagnostics.extend(statuses(msg))
    node._violations_pub.publish = lambda msg: violations.extend(statuses(msg))
    try:
        assert wait_for(lambda: node._bridge.holds >= 1, 10.0), node._bridge.status()
        node._watch_status()

        phase("CLEAN")
        msg = MotionCommand(type=MotionCommand.GOAL, reason="probe", goal_heading_deg=float("nan"),
                            speed_m_s=float("nan"))
        now = node.get_clock().now().nanoseconds
        msg.header.stamp = Time(sec=now // 1_000_000_000, nanosec=now % 1_000_000_000)
        msg.goal.latitude, msg.goal.longitude = destination(*START, 90.0, 30.0)
        node._on_command(msg)
        wait_for(lambda: node._bridge.stops and node._bridge.status().moving, 2.0)
        time.sleep(0.5)  # the monitor judges what the walker did (its reorder window is 0.15 s)
        node._watch_status()
        node._publish_diagnostics()
        report["clean"] = {"estop": node._bridge.status().estop, "diagnostics": diagnostics[:],
                           "violations": violations[:]}
        diagnostics.clear()

        phase("VIOLATION")
        far = destination(*START, 0.0, 500.0)
        node._bridge.link.go_to(far[0], far[1], 0.0)  # behind the bridge's back, on the link it drives
        report["tripped"] = wait_for(lambda: node._bridge.status().estop, 3.0)
        report["estop_reason"] = node._bridge.gate.estop.check().reason
        time.sleep(0.3)
        node._watch_status()
        node._publish_diagnostics()
        report["after"] = {"diagnostics": diagnostics[:], "violations": violations[:]}

        phase("MARKERS")  # what only the node knows, as the monitor is told it
        hold = MotionCommand(type=MotionCommand.HOLD, reason="probe: the Seek ended")
        hold.header.stamp = msg.header.stamp
        node._on_command(hold)
        node._bridge._pilot_says(PilotOverride("probe: a pilot switched modes"))  # as a link raises it
        wait_for(lambda: node._bridge.authority.state is State.PILOT, 3.0)
        report["take_control"] = node._on_take_control(Trigger.Request(), Trigger.Response()).success
        node._on_estop(Bool(data=True))
        real_status = node._bridge.status
        for code, n in (("ok", 2), ("link_error", 3), ("ok", 2)):  # a link lost and back
            node._bridge.status = lambda code=code: BridgeStatus(False, code, f"scripted {code}", True, code == "ok")
            for _ in range(n):
                node._watch_status()
        node._bridge.status = real_status
        if node._monitor is not None:
            node._monitor.flush()
            report["markers"] = {k: v for k, v in node._monitor.monitor.counts.items()
                                 if k.startswith(("marker ", "decision "))}
        phase("END")
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    report["report_file"] = str(node._monitor_report_file)
    try:
        with open(node._monitor_report_file) as f:
            report["monitor_report"] = json.load(f)
    except OSError:
        report["monitor_report"] = None
    with open(out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
