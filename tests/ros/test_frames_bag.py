"""A replay recorded with the frames node running: the bag carries the frames node's odometry,
path, markers and origin (and /tf, /tf_static where tf2_msgs is installed), and an MCAP reader
the project does not otherwise use (pybag-sdk) finds them with the walker on the graph."""
from __future__ import annotations

import math
import time

import pytest

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros.bag_topics import DEFAULT_TOPICS, TF_TOPICS
from tests.ros.test_frames import CONFIG, FRAMES, REPLAY, TF2_MSGS, _probe

RECORDER = "cityseeker_ros.bag.recorder"
FRAME_TOPICS = ("/frames/odom", "/frames/path", "/frames/markers", "/frames/origin")


def _wait_for_text(path, text: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and text in path.read_text():
            return True
        time.sleep(0.05)
    return False


def test_a_recorded_replay_carries_the_frames(ros_processes, tiny_city, tmp_path):
    pytest.importorskip("pybag.mcap_reader")
    from pybag.mcap_reader import McapFileReader

    world = load_dataset(tiny_city)[0]
    assert set(FRAME_TOPICS) <= {s.name for s in DEFAULT_TOPICS}
    assert (set(TF_TOPICS) <= {s.name for s in DEFAULT_TOPICS}) == TF2_MSGS
    bag = tmp_path / "frames_run"
    recorder = ros_processes._start("recorder", ros.python_module_command(RECORDER, str(bag)))
    log = ros_processes.logs / "recorder.log"
    assert _wait_for_text(log, f"recording {len(DEFAULT_TOPICS)} topics", 60), ros_processes.log_text()
    ros_processes.node(REPLAY, "--params-file", str(CONFIG / "streetview_replay.yaml"),
                       "-p", f"data:={tiny_city}", "-p", "episode:=0", "-p", "panorama:=false")
    ros_processes.node(FRAMES, "--params-file", str(CONFIG / "frames.yaml"), "-p", f"data:={tiny_city}")
    for topic in ("/frames/path", "/frames/markers", "/streetview_replay/views"):
        assert _wait_for_text(log, f"matched {topic}:", 60), ros_processes.log_text()
    # the walk starts once the recorder has matched the frames node (its outputs are latched, too)
    report = _probe(ros_processes, {"headings": [90.0, 90.0, 90.0], "timeout_s": 60})
    assert [s["node"] for s in report["steps"]][-1] == "00000003", report
    time.sleep(0.5)
    assert ros.stop(recorder, timeout_s=30.0) == 0, ros_processes.log_text()

    (mcap,) = bag.glob("*.mcap")
    with McapFileReader.from_file(mcap) as reader:
        paths = [m.data for m in reader.messages("/frames/path")]
        markers = [m.data for m in reader.messages("/frames/markers")]
        origins = [m.data for m in reader.messages("/frames/origin")]
        odometry = [m.data for m in reader.messages("/frames/odom")]
        tf = [m.data for m in reader.messages("/tf")] if TF2_MSGS else []
    assert origins and (origins[0].latitude, origins[0].longitude) == pytest.approx(
        (world.graph.frame.lat0, world.graph.frame.lon0), abs=1e-12)
    assert {o.header.frame_id for o in odometry} == {"odom"} and {o.child_frame_id for o in odometry} == {"base_link"}
    graph = next(m for m in markers[-1].markers if m.ns == "graph")
    assert graph.header.frame_id == "map" and len(graph.points) == 8
    last = paths[-1]
    assert last.header.frame_id == "map" and len(last.poses) == 4  # A, B, C, D
    for pose, node_id in zip(last.poses, ("00000000", "00000001", "00000002", "00000003")):
        node = world.graph.nodes[node_id]
        east, north = (float(v) for v in world.graph.frame.to_xy(node.lat, node.lon))
        assert math.dist((pose.pose.position.x, pose.pose.position.y), (east, north)) < 0.5
    if TF2_MSGS:
        children = {t.child_frame_id for message in tf for t in message.transforms}
        assert {"odom", "base_link"} <= children
