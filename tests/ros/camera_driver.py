"""Test helper, run as its own ROS process: `python -m tests.ros.camera_driver PLAN.json OUT.json`.

Stands in for a GNSS receiver and the supervisor: publishes a NavSatFix track on /test/fix,
an EpisodeMsg on /test/episode once camera_ingest is up, and records what graph_localiser and
camera_ingest publish (locations, view sets, decoded images, diagnostics) as JSON. Everything
runs in this main loop (spin_once), never in a callback.

PLAN.json: {"fixes": [[lat, lon, wait], ...], "off_graph": [lat, lon], "task": {EpisodeBrief fields},
            "period_s": 0.05, "timeout_s": 60}
A fix whose `wait` names a node is repeated until a view set for that node arrives, as a
vehicle would wait at a corner for a decision; so a loaded machine cannot drive past a node
before camera_ingest has seen the vehicle on it. Locations are keep-last-1 (qos.STATE): a busy
subscriber may see fewer than one per fix, which is fine, since only the newest matters.
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image, NavSatFix

from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.loop.view_set import EpisodeBrief, ViewSet
from cityseeker_ros.core.sensing.localisation import Localisation
from cityseeker_ros.ros import convert, qos, typed
from cityseeker_ros.ros.schema import EpisodeMsg

LOCALISER, CAMERA = "/graph_localiser", "/camera_ingest"


class CameraDriver(Node):
    def __init__(self) -> None:
        super().__init__("camera_driver")
        self.locations: list[dict[str, Any]] = []
        self.view_sets: list[dict[str, Any]] = []
        self.images: dict[tuple[int, int, str], list[int]] = {}  # stamp + frame -> decoded shape
        self.diagnostics: dict[str, list[tuple[int, str]]] = {}  # status name -> [(level, message)]
        self.fix_pub = self.create_publisher(NavSatFix, "/test/fix", qos.STATE)
        self.episode_pub = self.create_publisher(typed.msg_type(EpisodeMsg), "/test/episode", qos.STATE)
        self.create_subscription(typed.msg_type(Localisation), f"{LOCALISER}/location", self._on_location, qos.STATE)
        self.create_subscription(typed.msg_type(ViewSet), f"{CAMERA}/views", self._on_views, qos.STATE)
        for image_format in ("raw", "png"):  # whichever image_format camera_ingest sends
            self.create_subscription(convert.image_message_type(image_format),
                                     convert.image_topic(f"{CAMERA}/images", image_format), self._on_image,
                                     qos.view_images(8))
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)

    def _on_location(self, msg: Any) -> None:
        loc = typed.from_ros(msg)
        self.locations.append({"status": loc.status.value, "node": loc.node_id, "heading_deg": loc.heading_deg,
                               "walkable": len(loc.walkable), "reason": loc.reason,
                               "stamp": loc.stamp})

    def _on_views(self, msg: Any) -> None:
        vs = typed.from_ros(msg)
        self.view_sets.append({"id": vs.view_set_id, "node": vs.node, "step": vs.step, "steps_left": vs.steps_left,
                               "stamp": [vs.stamp.sec, vs.stamp.nanosec], "frames": vs.image_frames(),
                               "headings": [v.heading for v in vs.views], "run": vs.task.run})

    def _on_image(self, msg: Image | CompressedImage) -> None:
        rgb = convert.image_from_msg(msg)
        key = (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id)
        self.images[key] = [*rgb.shape, int(hashlib.sha256(rgb.tobytes()).hexdigest()[:6], 16)]

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            self.diagnostics.setdefault(status.name, []).append((int.from_bytes(status.level, "little")
                                                                 if isinstance(status.level, bytes)
                                                                 else int(status.level), status.message))

    def spin_until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if done():
                return True
            rclpy.spin_once(self, timeout_sec=0.05)
        return done()

    def diag(self, node: str, what: str) -> list[tuple[int, str]]:
        return self.diagnostics.get(f"{node}: {what}", [])

    def fix(self, lat: float, lon: float) -> None:
        ns = self.get_clock().now().nanoseconds
        self.fix_pub.publish(convert.navsatfix(lat, lon, Stamp(sec=ns // 10**9, nanosec=ns % 10**9), "gps"))


def main() -> None:
    plan = json.loads(open(sys.argv[1]).read())
    rclpy.init()
    node = CameraDriver()
    report: dict[str, Any] = {}
    timeout = float(plan.get("timeout_s", 60.0))
    try:
        # both nodes are up and matched to us
        report["matched"] = node.spin_until(lambda: node.fix_pub.get_subscription_count() >= 1
                                            and node.episode_pub.get_subscription_count() >= 1
                                            and bool(node.diag(CAMERA, "camera")), timeout)
        # fixes before any episode: located, but no view set
        first = plan["fixes"][0]
        for _ in range(3):
            node.fix(*first[:2])
            node.spin_until(lambda: False, 0.05)
        node.spin_until(lambda: len(node.locations) >= 1, timeout)
        node.spin_until(lambda: False, 1.0)
        report["view_sets_before_episode"] = len(node.view_sets)
        report["camera_waiting"] = node.diag(CAMERA, "camera")[-1] if node.diag(CAMERA, "camera") else None
        task = EpisodeBrief(**plan["task"])
        node.episode_pub.publish(typed.to_ros(EpisodeMsg(status="running", task=task)))
        report["episode_seen"] = node.spin_until(
            lambda: any(m.startswith("running") for _, m in node.diag(CAMERA, "camera")), timeout)
        sent = len(node.locations)
        report["waits"] = []
        for lat, lon, wait in plan["fixes"]:
            node.fix(lat, lon)
            node.spin_until(lambda: False, float(plan.get("period_s", 0.05)))
            deadline = time.monotonic() + timeout
            while wait and not any(v["node"] == wait for v in node.view_sets) and time.monotonic() < deadline:
                node.fix(lat, lon)
                node.spin_until(lambda: False, 0.1)
            if wait:
                report["waits"].append([wait, any(v["node"] == wait for v in node.view_sets)])
        last = len(node.locations)
        node.spin_until(lambda: False, 0.5)
        report["track_locations"] = node.locations[sent:last]
        # off the graph
        for _ in range(3):
            node.fix(*plan["off_graph"])
            node.spin_until(lambda: False, 0.05)
        report["off_graph_seen"] = node.spin_until(
            lambda: any(w == 1 and "off-graph" in m for w, m in node.diag(LOCALISER, "localiser")), timeout)
        node.spin_until(lambda: all((v["stamp"][0], v["stamp"][1], f) in node.images
                                    for v in node.view_sets for f in v["frames"]), timeout)
        report["locations_after"] = node.locations[last:]
        report["view_sets"] = node.view_sets
        report["images"] = {f"{s}.{n}/{f}": shape for (s, n, f), shape in node.images.items()}
        report["localiser_diagnostics"] = node.diag(LOCALISER, "localiser")[-3:]
    finally:
        with open(sys.argv[2], "w") as out:
            json.dump(report, out, indent=1)
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
