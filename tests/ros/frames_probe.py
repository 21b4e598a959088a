"""Test helper, run as its own ROS process: `python -m tests.ros.frames_probe PLAN.json OUT.json`.

Walks the replayed walker (it answers each view set of /streetview_replay with the view nearest
the heading the plan names, then stops) and, at every step, waits for the frames node's outputs
of that view set's stamp and records them: ~/path's last pose (map), ~/odom (odom), the chain
map -> base_link read from /tf and /tf_static into core.frames' TransformTree (where tf2_msgs is
installed), the latched ~/markers and ~/origin, and the frames diagnostics. The test compares
them with the graph. PLAN.json: {"headings": [90, 90, 90], "timeout_s": 60}.

With {"mode": "vehicle", "duration_s": 2} it only listens (a vehicle bridge moves base_link) and
records the bridge's newest fix beside the frames node's outputs of that fix's stamp.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Optional

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from nav_msgs.msg import Path as PathMsg
from rclpy.node import Node
from sensor_msgs.msg import NavSatFix
from visualization_msgs.msg import MarkerArray

from cityseeker_ros.core.frames.transforms import Transform, TransformTree
from cityseeker_ros.core.loop.view_set import ViewSet
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.nodes.frames import TF, TF_STATIC, tf_message_type
from cityseeker_ros.ros import qos, typed
from cityseeker_ros.ros.schema import ActionMsg


def _ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class Probe(Node):
    def __init__(self) -> None:
        super().__init__("frames_probe")
        self.view_set: Optional[ViewSet] = None
        self.path: Optional[PathMsg] = None
        self.odom: Optional[Odometry] = None
        self.markers: Optional[MarkerArray] = None
        self.origin: Optional[Any] = None
        self.diagnostics: dict[str, str] = {}
        self.tree = TransformTree()
        self.tf_newest = 0  # the newest stamp of base_link on /tf (the node refreshes it, stamped now)
        self.action_pub = self.create_publisher(typed.msg_type(ActionMsg), "/streetview_replay/action", qos.STATE)
        self.create_subscription(typed.msg_type(ViewSet), "/streetview_replay/views", self._on_views, qos.STATE)
        self.create_subscription(PathMsg, "/frames/path", lambda m: setattr(self, "path", m), qos.STATE)
        self.create_subscription(Odometry, "/frames/odom", lambda m: setattr(self, "odom", m), qos.STATE)
        self.create_subscription(MarkerArray, "/frames/markers", lambda m: setattr(self, "markers", m), qos.STATE)
        self.create_subscription(typed.ci.GeoPoint, "/frames/origin", lambda m: setattr(self, "origin", m), qos.STATE)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)
        tf_type = tf_message_type()
        if tf_type is not None:
            self.create_subscription(tf_type, "/tf", self._on_tf, TF)
            self.create_subscription(tf_type, "/tf_static", self._on_tf, TF_STATIC)

        self.fix: Optional[Any] = None
        self.create_subscription(NavSatFix, "/vehicle_bridge/fix", lambda m: setattr(self, "fix", m), qos.STATE)

    def _on_views(self, msg: Any) -> None:
        self.view_set = typed.from_ros(msg)

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.endswith("frames: frames"):
                self.diagnostics = {kv.key: kv.value for kv in status.values}

    def _on_tf(self, msg: Any) -> None:
        for t in msg.transforms:
            tr, r = t.transform.translation, t.transform.rotation
            self.tree.set(Transform(t.header.frame_id, t.child_frame_id, (tr.x, tr.y, tr.z), (r.x, r.y, r.z, r.w),
                                    _ns(t.header.stamp)))
            if t.child_frame_id == "base_link":
                self.tf_newest = max(self.tf_newest, _ns(t.header.stamp))


def main(plan_file: str, out_file: str) -> None:
    plan = json.loads(open(plan_file).read())
    rclpy.init()
    probe = Probe()
    deadline = time.monotonic() + float(plan.get("timeout_s", 60))
    headings = list(plan.get("headings", []))
    steps: list[dict[str, Any]] = []
    answered: set[str] = set()

    def spin_until(ready) -> bool:
        while time.monotonic() < deadline:
            rclpy.spin_once(probe, timeout_sec=0.05)
            if ready():
                return True
        return False

    tf_on = tf_message_type() is not None
    if plan.get("mode") == "vehicle":
        write(out_file, watch_vehicle(probe, spin_until, float(plan.get("duration_s", 2.0)), tf_on))
        return
    while time.monotonic() < deadline:
        if not spin_until(lambda: probe.view_set is not None and probe.view_set.view_set_id not in answered):
            break
        view_set = probe.view_set
        stamp = view_set.stamp.sec * 1_000_000_000 + view_set.stamp.nanosec
        ok = spin_until(lambda stamp=stamp: probe.path is not None and probe.path.poses
                        and _ns(probe.path.poses[-1].header.stamp) == stamp and probe.odom is not None
                        and _ns(probe.odom.header.stamp) == stamp and (not tf_on or probe.tf_newest >= stamp))
        last = probe.path.poses[-1].pose.position if ok else None
        record = {"node": view_set.node, "step": view_set.step, "done": view_set.done, "outputs": bool(ok),
                  "path_xy": None if last is None else [last.x, last.y], "path_len": len(probe.path.poses)
                  if probe.path else 0,
                  "odom_xy": None if probe.odom is None else [probe.odom.pose.pose.position.x,
                                                               probe.odom.pose.pose.position.y],
                  "odom_frames": None if probe.odom is None else [probe.odom.header.frame_id,
                                                                   probe.odom.child_frame_id]}
        if tf_on and ok:
            # the walker stands still until answered: a refresh of /tf (every 0.1 s, stamped now) carries
            # this pose within 0.3 s, even where a refresh of the previous pose went out after its stamp
            settle = time.monotonic() + 0.3
            spin_until(lambda settle=settle: time.monotonic() > settle)
            base = probe.tree.lookup("map", "base_link")
            record["tf_xy"] = [base.translation[0], base.translation[1]]
            record["tf_yaw"] = base.yaw
        steps.append(record)
        answered.add(view_set.view_set_id)
        if view_set.done:
            break
        if headings:
            want = headings.pop(0)
            view = min(view_set.views, key=lambda v: abs(circular_difference(v.heading, want)))
            action = Action(index=view.index)
        else:
            action = Action()
        probe.action_pub.publish(typed.to_ros(ActionMsg(view_set_id=view_set.view_set_id, action=action)))
    spin_until(lambda: probe.diagnostics.get("poses") == str(len(steps)) and probe.markers is not None
               and probe.origin is not None)  # the diagnostics of after the last pose
    markers = {m.ns: {"action": m.action, "frame": m.header.frame_id, "points": [[p.x, p.y] for p in m.points]}
               for m in (probe.markers.markers if probe.markers else [])}
    out = {"steps": steps, "markers": markers, "diagnostics": probe.diagnostics, "tf": tf_on,
           "origin": None if probe.origin is None else [probe.origin.latitude, probe.origin.longitude],
           "frames": sorted(probe.tree.frames())}
    if tf_on and "camera_optical" in probe.tree.frames():
        optical = probe.tree.lookup("base_link", "camera_optical")
        out["camera_optical"] = list(optical.translation)
    write(out_file, out)
    probe.destroy_node()
    rclpy.try_shutdown()


def write(out_file: str, out: dict[str, Any]) -> None:
    open(out_file, "w").write(json.dumps(out))


def watch_vehicle(probe: Probe, spin_until, duration_s: float, tf_on: bool) -> dict[str, Any]:
    """Listen `duration_s`, then until the frames outputs of the newest fix's stamp are in."""
    end = time.monotonic() + duration_s
    spin_until(lambda: time.monotonic() > end)

    def caught_up() -> bool:
        if probe.fix is None or probe.path is None or not probe.path.poses or probe.odom is None:
            return False
        stamp = _ns(probe.fix.header.stamp)
        return _ns(probe.path.poses[-1].header.stamp) == stamp and (not tf_on or probe.tf_newest >= stamp)

    ok = spin_until(caught_up)
    settle = time.monotonic() + 0.3  # the vehicle holds: a refresh of /tf carries its newest pose
    spin_until(lambda: time.monotonic() > settle)
    out: dict[str, Any] = {"ok": bool(ok), "tf": tf_on, "diagnostics": probe.diagnostics}
    if ok:
        out["fix"] = [probe.fix.latitude, probe.fix.longitude]
        out["path"] = [[p.pose.position.x, p.pose.position.y] for p in probe.path.poses]
        out["odom_frames"] = [probe.odom.header.frame_id, probe.odom.child_frame_id]
        out["odom_xy"] = [probe.odom.pose.pose.position.x, probe.odom.pose.pose.position.y]
        if tf_on:
            out["tf_xy"] = list(probe.tree.lookup("map", "base_link").translation[:2])
            out["odom_in_map"] = list(probe.tree.lookup("map", "odom").translation[:2])
    return out


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
