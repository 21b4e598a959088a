"""A benchmark replay recorded with the default topics while the frames node runs: the bag carries
/tf and /tf_static, and mcap-ros2-support (an MCAP reader of its own, not the project's rosbags
path) finds them as REP 105 chains them. The test composes map -> odom -> base_link itself from
the decoded messages (no tf2 Buffer in Python on a pip-only machine): the walker is on each graph
node it walked to within 0.5 m, and nowhere else."""
from __future__ import annotations

import json
import math
import time

import pytest

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros.bag_topics import DEFAULT_TOPICS, TF_MESSAGE, TF_TOPICS
from tests.bag.test_record_play_eval import RECORDER, wait_for_text
from tests.ros.test_frames import CONFIG, FRAMES, REPLAY, TF2_MSGS, TOLERANCE_M, _probe, params_file

WALKED = ("00000000", "00000001", "00000002", "00000003")  # episode 0 walked east: A, B, C, D
CAMERA_XYZ = (0.1, 0.0, 1.6)


def rotate(q: tuple[float, float, float, float], v: tuple[float, float, float]) -> tuple[float, float, float]:
    """v rotated by the unit quaternion q = (x, y, z, w): v + 2w (u x v) + 2 u x (u x v)."""
    x, y, z, w = q
    cx, cy, cz = y * v[2] - z * v[1], z * v[0] - x * v[2], x * v[1] - y * v[0]
    return (v[0] + 2 * (w * cx + y * cz - z * cy), v[1] + 2 * (w * cy + z * cx - x * cz),
            v[2] + 2 * (w * cz + x * cy - y * cx))


def _vector(t) -> tuple[float, float, float]:
    return (t.x, t.y, t.z)


def _quaternion(r) -> tuple[float, float, float, float]:
    return (r.x, r.y, r.z, r.w)


@pytest.mark.skipif(not TF2_MSGS, reason="tf2_msgs is not installed (pip installs vendor/tf2_msgs; this ROS 2 "
                    "install lacks it)")
def test_a_recorded_replay_carries_tf_and_tf_static(ros_processes, tiny_city, tmp_path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    assert set(TF_TOPICS) <= {s.name for s in DEFAULT_TOPICS}  # recorded without naming them
    world = load_dataset(tiny_city)[0]
    bag = tmp_path / "tf_run"
    recorder = ros_processes._start("recorder", ros.python_module_command(RECORDER, str(bag)))
    log = ros_processes.logs / "recorder.log"
    assert wait_for_text(log, f"recording {len(DEFAULT_TOPICS)} topics", 60), ros_processes.log_text()
    ros_processes.node(REPLAY, "--params-file", str(CONFIG / "streetview_replay.yaml"),
                       "-p", f"data:={tiny_city}", "-p", "episode:=0", "-p", "panorama:=false")
    cameras = json.dumps([{"frame_id": "camera", "xyz": list(CAMERA_XYZ)}])
    ros_processes.node(FRAMES, "--params-file", str(CONFIG / "frames.yaml"),
                       "--params-file", params_file(tmp_path, "frames", data=str(tiny_city), cameras=cameras))
    # /tf is volatile: the recorder resubscribes to match it, and the walk starts once it has
    for topic in TF_TOPICS:
        assert wait_for_text(log, f"matched {topic}:", 60), ros_processes.log_text()
    report = _probe(ros_processes, {"headings": [90.0, 90.0, 90.0], "timeout_s": 60})
    assert [s["node"] for s in report["steps"]][-1] == WALKED[-1], report
    time.sleep(0.5)
    assert ros.stop(recorder, timeout_s=30.0) == 0, ros_processes.log_text()

    (mcap,) = bag.glob("*.mcap")
    with open(mcap, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        decoded = [(channel.topic, msg) for _, channel, _, msg in reader.iter_decoded_messages(topics=TF_TOPICS)]
    channels = {c.topic: c for c in summary.channels.values()}
    counts = {summary.channels[i].topic: n for i, n in summary.statistics.channel_message_counts.items()}
    for topic in TF_TOPICS:
        assert summary.schemas[channels[topic].schema_id].name == TF_MESSAGE
        assert counts.get(topic, 0) > 0, counts

    static, pairs, positions = {}, set(), []
    latest = {}  # (parent, child) -> (translation, rotation), as a tf buffer's newest
    for topic, msg in decoded:  # in the order they were received
        for t in msg.transforms:
            key = (t.header.frame_id, t.child_frame_id)
            value = (_vector(t.transform.translation), _quaternion(t.transform.rotation))
            if topic == "/tf_static":
                static[key] = value
                continue
            pairs.add(key)
            latest[key] = value
        if topic == "/tf" and ("map", "odom") in latest and ("odom", "base_link") in latest:
            (map_odom, q_map_odom), (odom_base, _) = latest["map", "odom"], latest["odom", "base_link"]
            positions.append(tuple(a + b for a, b in zip(map_odom, rotate(q_map_odom, odom_base))))

    # REP 105's chain, and the view frames under base_link; nothing skips odom
    assert {("map", "odom"), ("odom", "base_link")} <= pairs
    assert all(key in (("map", "odom"), ("odom", "base_link")) or (key[0] == "base_link"
               and key[1].startswith("view_")) for key in pairs), pairs
    nodes = []
    for node_id in WALKED:
        node = world.graph.nodes[node_id]
        nodes.append(tuple(float(v) for v in world.graph.frame.to_xy(node.lat, node.lon)))
    assert positions
    for east_north in nodes:  # the walker was seen at every node it walked to ...
        assert min(math.dist(p[:2], east_north) for p in positions) < TOLERANCE_M, (east_north, positions)
    for p in positions:  # ... and nowhere off the graph's nodes
        assert min(math.dist(p[:2], east_north) for east_north in nodes) < TOLERANCE_M, p

    # the camera mount, and its optical frame (REP 103: z forward, x right, y down)
    assert set(static) == {("base_link", "camera"), ("camera", "camera_optical")}, static
    assert static["base_link", "camera"][0] == pytest.approx(CAMERA_XYZ)
    optical = static["camera", "camera_optical"][1]
    assert rotate(optical, (0.0, 0.0, 1.0)) == pytest.approx((1.0, 0.0, 0.0), abs=1e-9)  # looks forward
    assert rotate(optical, (1.0, 0.0, 0.0)) == pytest.approx((0.0, -1.0, 0.0), abs=1e-9)  # right
    assert rotate(optical, (0.0, 1.0, 0.0)) == pytest.approx((0.0, 0.0, -1.0), abs=1e-9)  # down
