"""Bags with the custom cityseeker_interfaces types: rosbags gets their definitions from the
installed package with rosidl's type hashes, the project's bag tools read them back, and an
MCAP reader the project does not otherwise use (pybag-sdk, its own MCAP and CDR code) decodes
them from the bag alone, as does rclpy from the recorded bytes."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.ros import bag_interfaces
from cityseeker_ros.ros.bag_storage import BagReader, BagWriter, typestore
from tests.ros.conftest import REPO

VIEW_SET = "cityseeker_interfaces/msg/ViewSet"
FEEDBACK = "cityseeker_interfaces/action/Seek_FeedbackMessage"


def test_every_definition_carries_rosidl_s_type_hash():
    share = bag_interfaces.share_dir()
    recorded = {h["type_name"]: h["hash_string"] for path in share.glob("*/*.json")
                for h in json.loads(path.read_text())["type_hashes"]}
    store = typestore()  # the bag tools' store: Jazzy's types plus the package's
    names = bag_interfaces.register(store)
    messages = {f"cityseeker_interfaces/msg/{p.stem}" for p in (share / "msg").glob("*.msg")}
    actions = {f"cityseeker_interfaces/action/{p.stem}_{part}" for p in (share / "action").glob("*.action")
               for part in ("Goal", "Result", "Feedback", "FeedbackMessage")}
    assert set(names) == messages | actions and len(actions) == 12
    assert {n: store.hash_rihs01(n) for n in names} == {n: recorded[n] for n in names}


def sample(store):
    m = bag_interfaces.message
    view_set = m(store, VIEW_SET, header={"stamp": {"sec": 17, "nanosec": 5}, "frame_id": "map"},
                 view_set_id="vs-1", node="n42", facing_deg=271.5, step=3, steps_left=7, feedback="straße ✓ 咖啡",
                 position={"latitude": 43.7384, "longitude": 7.4246, "altitude": math.nan},
                 views=[m(store, "cityseeker_interfaces/msg/View", index=i, heading_deg=90.0 * i, relative=r,
                          frame_id=f"view{i}") for i, r in enumerate(("front", "right"))],
                 has_panorama=True, panorama={"frame_id": "pano", "width": 2048, "height": 1024})
    view_set.task.seed, view_set.task.instruction = 2**40 + 3, "I am thirsty"
    feedback = m(store, FEEDBACK, feedback={"node": "n43", "step": 4, "reason": "a café sign ahead",
                                            "distance_m": 81.25, "heading_deg": 90.0, "direction": "right"})
    feedback.feedback.action.kind, feedback.feedback.action.index = 0, 1
    feedback.goal_id.uuid[:] = range(16)
    return view_set, feedback


def write_bag(path):
    with BagWriter(path) as writer:
        store = writer._typestore
        view_set, feedback = sample(store)
        writer.add_topic("/supervisor/views", VIEW_SET)
        writer.add_topic("/supervisor/seek/_action/feedback", FEEDBACK)
        writer.write_message("/supervisor/views", 1_000, view_set)
        writer.write_message("/supervisor/seek/_action/feedback", 2_000, feedback)
        writer.write_message("/supervisor/seek/_action/feedback", 3_000, feedback)
    return path


def test_a_custom_type_bag_decodes_with_the_bag_tools_and_another_mcap_reader(tmp_path):
    from pybag.mcap_reader import McapFileReader

    bag = write_bag(tmp_path / "seek")
    with BagReader(bag) as reader:
        assert reader.topics == {"/supervisor/views": VIEW_SET, "/supervisor/seek/_action/feedback": FEEDBACK}
        decoded = [reader.decode(message) for message in reader.messages()]
    assert [d.__msgtype__ for d in decoded] == [VIEW_SET, FEEDBACK, FEEDBACK]
    assert decoded[0].views[1].relative == "right" and decoded[1].feedback.reason == "a café sign ahead"

    (mcap,) = bag.glob("*.mcap")
    with McapFileReader.from_file(mcap) as other:
        assert other.get_schema("/supervisor/views").name == VIEW_SET
        views = [msg.data for msg in other.messages("/supervisor/views")]
        feedbacks = [msg.data for msg in other.messages("/supervisor/seek/_action/feedback")]
    assert len(views) == 1 and len(feedbacks) == 2
    v = views[0]
    assert (v.header.stamp.sec, v.header.stamp.nanosec, v.header.frame_id) == (17, 5, "map")
    assert (v.view_set_id, v.node, v.facing_deg, v.step, v.steps_left) == ("vs-1", "n42", 271.5, 3, 7)
    assert v.feedback == "straße ✓ 咖啡" and v.task.seed == 2**40 + 3 and v.task.instruction == "I am thirsty"
    assert (v.position.latitude, v.position.longitude) == (43.7384, 7.4246) and math.isnan(v.position.altitude)
    assert [(x.index, x.heading_deg, x.relative, x.frame_id) for x in v.views] == [
        (0, 0.0, "front", "view0"), (1, 90.0, "right", "view1")]
    assert v.has_panorama and (v.panorama.frame_id, v.panorama.width, v.panorama.height) == ("pano", 2048, 1024)
    f = feedbacks[0]
    assert list(f.goal_id.uuid) == list(range(16))
    assert (f.feedback.node, f.feedback.step, f.feedback.reason, f.feedback.distance_m, f.feedback.direction) == (
        "n43", 4, "a café sign ahead", 81.25, "right")
    assert (f.feedback.action.kind, f.feedback.action.index) == (0, 1)


READ_WITH_RCLPY = """
import json, sys
from rclpy.serialization import deserialize_message
from cityseeker_interfaces.action import Seek
from cityseeker_interfaces.msg import ViewSet
from cityseeker_ros.ros.bag_storage import BagReader
out = []
with BagReader(sys.argv[1]) as reader:
    for m in reader.messages():
        msg = deserialize_message(m.data, ViewSet if m.msgtype.endswith("ViewSet") else Seek.Impl.FeedbackMessage)
        out.append(msg.view_set_id if hasattr(msg, "view_set_id") else msg.feedback.reason)
print(json.dumps(out))
"""


def test_rclpy_decodes_the_recorded_bytes(tmp_path, ros_env):
    bag = write_bag(tmp_path / "seek")
    done = subprocess.run([sys.executable, "-c", READ_WITH_RCLPY, str(bag)], env=ros_env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["vs-1", "a café sign ahead", "a café sign ahead"]


def test_missing_package_and_bad_action_are_one_line_errors(tmp_path):
    with pytest.raises(ConfigError, match=f"cityseeker_interfaces is not installed in {tmp_path}: pip install"):
        bag_interfaces.share_dir([str(tmp_path)])
    bad = tmp_path / "Bad.action"
    bad.write_text("string need\n---\nstring result\n")
    with pytest.raises(ConfigError, match="Bad.action: an action has goal, result and feedback .* found 1"):
        bag_interfaces.split_action(bad.read_text(), bad)
    with pytest.raises(ConfigError, match="ViewSet: no field colour"):
        bag_interfaces.message(typestore(), VIEW_SET, colour="red")
