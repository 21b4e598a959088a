"""Test helper, run as its own ROS process: `python -m tests.ros.seek_frames_probe PLAN.json OUT.json`.

An operator that sends one Seek goal with the project's Seek client and, all along, reads what the
frames node puts on /tf and /tf_static the way tests/ros/frames_probe.py does (its Probe composes
map -> odom -> base_link with core.frames' TransformTree), beside every fix of the vehicle bridge.
The test compares the two: each fix with map -> base_link of the same stamp, and the Seek's path
with the positions /tf went through.

PLAN.json: {"need": "I am thirsty", "max_steps": 3, "timeout_s": 60}. OUT.json: the fixes
([stamp_ns, lat, lon, alt]), the composed map -> base_link at each stamp ({stamp_ns: [x, y]}, the
last message of a stamp winning), the Seek's result, and the newest fix and /tf once the vehicle
stood still after the result.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from typing import Any

import rclpy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import NavSatFix

from cityseeker_ros.nodes.frames import tf_message_type
from cityseeker_ros.nodes.seek_client import NOT_READY, Seeker
from cityseeker_ros.ros import qos
from tests.ros.frames_probe import Probe, _ns


class SeekFramesProbe(Probe):
    """The frames probe, keeping every fix and the composed map -> base_link of every /tf stamp."""

    def __init__(self) -> None:
        super().__init__()
        self.fixes: list[list[float]] = []
        self.in_map: dict[int, list[float]] = {}
        self.create_subscription(NavSatFix, "/vehicle_bridge/fix", self._on_fix, qos.STATE)

    def _on_fix(self, msg: NavSatFix) -> None:
        self.fixes.append([_ns(msg.header.stamp), msg.latitude, msg.longitude, msg.altitude])

    def _on_tf(self, msg: Any) -> None:
        super()._on_tf(msg)
        stamps = [_ns(t.header.stamp) for t in msg.transforms if t.child_frame_id == "base_link"]
        if stamps and {"map", "base_link"} <= set(self.tree.frames()):
            base = self.tree.lookup("map", "base_link")
            self.in_map[stamps[0]] = [base.translation[0], base.translation[1]]


def main(plan_file: str, out_file: str) -> None:
    plan = json.loads(open(plan_file).read())
    timeout_s = float(plan.get("timeout_s", 60))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    probe = SeekFramesProbe()
    seeker = Seeker(node_name="seek_frames_operator")
    seeker.executor.add_node(probe)
    out: dict[str, Any] = {"tf": tf_message_type() is not None}

    def spin_until(ready, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout_s:g} s")
            seeker.executor.spin_once(timeout_sec=0.05)

    def caught_up() -> bool:
        """/tf carries the newest fix's stamp (the vehicle stands still: no newer one comes)."""
        return bool(probe.fixes) and probe.fixes[-1][0] in probe.in_map

    try:
        while True:  # until the server is ready: not_ready while the decision node or the first fix is missing
            seeker.wait_until_ready(timeout_s)
            seeker.start("")
            if seeker.result(timeout_s).code != NOT_READY:
                break
        spin_until(caught_up, "/tf of the fix before the goal")
        out["before"] = {"fix": probe.fixes[-1], "tf_xy": probe.in_map[probe.fixes[-1][0]]}
        seeker.start(plan["need"], int(plan.get("max_steps", 3)))
        spin_until(lambda: seeker.finished, "the Seek's result")
        out["result"] = asdict(seeker.result(0.0))
        spin_until(caught_up, "/tf of the fix after the result")
        out["after"] = {"fix": probe.fixes[-1], "tf_xy": probe.in_map[probe.fixes[-1][0]]}
    except Exception as exc:  # the report says how far it got
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        out.update(fixes=probe.fixes, in_map={str(k): v for k, v in probe.in_map.items()},
                   frames=sorted(probe.tree.frames()))
        with open(out_file, "w") as f:
            json.dump(out, f)
        seeker.executor.remove_node(probe)
        probe.destroy_node()
        seeker.close()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
