"""Core types <-> messages and JSON records, without a running graph (message classes are
plain Python)."""
from __future__ import annotations

import inspect
import json
import math

import cv2
import numpy as np
import pytest
from pydantic import ValidationError

from cityseeker_ros.core.agents.policies.base import Decision
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.loop.view_set import Answer, EpisodeBrief, ViewSet
from cityseeker_ros.core.streets.directions import RelativeDirection
from cityseeker_ros.core.tasks.environment import STOP, Environment, Observation, View, move, retrace
from cityseeker_ros.ros import convert, parameters, typed
from cityseeker_ros.ros.schema import (
    ActionMsg,
    EpisodeMsg,
    action_from_dict,
    as_dict,
    parse,
    to_json,
)

STAMP = Stamp(sec=12, nanosec=345)


def red_image(h: int = 24, w: int = 32) -> np.ndarray:
    img = np.zeros((h, w, 3), np.uint8)
    img[..., 0] = 220  # red
    img[..., 1] = np.linspace(0, 120, w, dtype=np.uint8)[None, :]
    img[..., 2] = 20
    return img


def test_view_set_round_trips_an_observation_exactly(tiny_world):
    env = Environment(tiny_world)
    obs = env.reset(tiny_world.episodes[0])
    obs = env.step(move(0)).observation  # at B, facing east: three views
    task = EpisodeBrief.of(tiny_world.episodes[0], seed=4, run=2)
    msg = convert.observation_to_view_set(obs, task, "vs-1", STAMP)
    back = typed.from_ros(typed.to_ros(msg))  # what crosses DDS: cityseeker_interfaces/ViewSet
    assert back == msg and back.task.key() == ("tinytown-0", 4, 0, 2)
    assert convert.view_set_to_observation(back) == obs
    assert [v.relative for v in back.views] == [v.relative.value for v in obs.views]


def test_awkward_floats_survive_json():
    view = View(0, 359.99999999999994, RelativeDirection.FRONT)
    obs = Observation("e", "go", "n", 22.281234567891234, 114.15876543210987, 1e-300, (view,), 3, 32, "retry")
    task = EpisodeBrief.of(_episode(), 0, 1)
    back = convert.view_set_to_observation(parse(ViewSet, to_json(convert.observation_to_view_set(
        obs, task, "x", STAMP))))
    assert back == Observation("ep", "go", "n", obs.lat, obs.lon, obs.facing, (view,), 3, 32, "retry")


def _episode():
    from cityseeker_ros.core.tasks.episode import Episode

    return Episode("ep", "town", "Basic POI", "easy", "go", "cafe", "n", "t", ("n", "t"))


def test_views_with_images_name_their_frames_and_get_them_back():
    img0, img2 = red_image(), red_image(8, 8)
    obs = Observation("e", "i", "n", 0.0, 0.0, 90.0,
                      (View(0, 90.0, RelativeDirection.FRONT, img0), View(1, 180.0, RelativeDirection.RIGHT),
                       View(2, 0.0, RelativeDirection.LEFT, img2)), 0, 35)
    msg = convert.observation_to_view_set(obs, EpisodeBrief.of(_episode(), 0, 1), "v", STAMP)
    assert msg.image_frames() == ["view_0", "view_2"] and msg.views[1].frame_id is None
    back = convert.view_set_to_observation(msg, {"view_0": img0, "view_2": img2})
    assert back.views[0].image is img0 and back.views[1].image is None and back.views[2].image is img2


def test_a_panorama_travels_as_one_more_frame_and_decodes_only_when_shown(monkeypatch):
    view, pano = red_image(), red_image(16, 32)
    obs = Observation("e", "i", "n", 0.0, 0.0, 90.0, (View(0, 90.0, RelativeDirection.FRONT, view),), 0, 35)
    task = EpisodeBrief.of(_episode(), 0, 1)
    msg = typed.from_ros(typed.to_ros(convert.observation_to_view_set(obs, task, "v", STAMP, panorama=pano)))
    assert as_dict(msg)["panorama"] == {"frame_id": "panorama", "width": 32, "height": 16}
    assert msg.image_frames() == ["view_0", "panorama"]
    received = {f: convert.image_to_msg(img, STAMP, f, "png") for f, img in (("view_0", view), ("panorama", pano))}
    decoded = []
    real = convert.image_from_msg
    monkeypatch.setattr(convert, "image_from_msg", lambda m: decoded.append(m.header.frame_id) or real(m))
    back = convert.view_set_to_observation(msg, convert.view_set_images(msg, received))
    assert decoded == ["view_0"] and np.array_equal(back.views[0].image, view)  # the panorama waits
    assert np.array_equal(back.panorama.get(), pano) and back.panorama.get() is back.panorama.get()
    assert decoded == ["view_0", "panorama"]  # decoded once, on first use
    # Without one (a source with none, `panorama` off, or a bag recorded before panoramas), None.
    plain = convert.observation_to_view_set(obs, task, "v", STAMP)
    assert plain.panorama is None and plain.image_frames() == ["view_0"]
    old = {k: v for k, v in as_dict(plain).items() if k != "panorama"}
    assert convert.view_set_to_observation(parse(ViewSet, json.dumps(old)), {"view_0": view}).panorama is None


def test_png_is_lossless_and_jpeg_keeps_rgb_order():
    img = red_image()
    fmt, data = convert.encode_image(img, "png")
    assert fmt == "rgb8; png compressed bgr8" and np.array_equal(convert.decode_image(data), img)
    fmt, data = convert.encode_image(img, "jpeg", quality=95)
    assert fmt == "rgb8; jpeg compressed bgr8"
    decoded = convert.decode_image(data)
    assert decoded.shape == img.shape and np.abs(decoded.astype(int) - img).mean() < 4
    assert decoded[..., 0].mean() > 200 > 40 > decoded[..., 2].mean()  # red stays red
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)  # what image_transport decoders see
    assert bgr[..., 2].mean() > 200 and bgr[..., 0].mean() < 40
    with pytest.raises(ValueError):
        convert.encode_image(img, "webp")
    with pytest.raises(ValueError):
        convert.encode_image(img[..., 0], "png")


@pytest.mark.parametrize("image_format", convert.IMAGE_FORMATS)
def test_every_image_format_round_trips_with_its_recorded_format(image_format):
    """raw and png give back the very pixels; jpeg is lossy (and says so in its format string),
    keeps the size and the channel order. The message type and topic follow image_transport."""
    img = red_image(48, 64)
    msg = convert.image_to_msg(img, STAMP, "view_1", image_format)
    back = convert.image_from_msg(msg)
    assert type(msg) is convert.image_message_type(image_format)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (12, 345, "view_1")
    expected = {"raw": "rgb8", "png": "rgb8; png compressed bgr8", "jpeg": "rgb8; jpeg compressed bgr8"}
    assert convert.wire_format(msg) == expected[image_format]
    assert convert.image_topic("/streetview_replay/images", image_format) == (
        "/streetview_replay/images" if image_format == "raw" else "/streetview_replay/images/compressed")
    assert back.shape == img.shape and back.dtype == np.uint8
    if image_format == "jpeg":
        assert np.abs(back.astype(int) - img).mean() < 4 and back[..., 0].mean() > 200 > 40 > back[..., 2].mean()
    else:
        assert np.array_equal(back, img)


def test_raw_images_are_plain_rgb8_and_foreign_encodings_decode():
    img = red_image(5, 7)
    msg = convert.image_to_msg(img, STAMP, "view_0", "raw")
    assert (msg.encoding, msg.height, msg.width, msg.step, msg.is_bigendian) == ("rgb8", 5, 7, 21, 0)
    assert bytes(msg.data) == img.tobytes()
    decoded = convert.image_from_msg(msg)
    decoded[0, 0, 0] = 1  # a copy: the message keeps its pixels
    assert bytes(msg.data) == img.tobytes()
    # bgr8 with row padding, as a camera driver may send (or a bag holds): read as RGB
    padded = np.zeros((5, 7 * 3 + 3), np.uint8)
    padded[:, :21] = img[..., ::-1].reshape(5, 21)
    msg.encoding, msg.step, msg.data = "bgr8", 24, padded.tobytes()
    assert np.array_equal(convert.image_from_msg(msg), img)
    assert convert.wire_format(msg) == "bgr8"


def test_images_a_bag_reader_decodes_read_like_rclpy_messages():
    """The bag evaluator hands rosbags' deserialised messages to the same functions."""
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    img = red_image(6, 8)
    for image_format in convert.IMAGE_FORMATS:
        msg = convert.image_to_msg(img, STAMP, "view_2", image_format)
        msgtype = f"sensor_msgs/msg/{type(msg).__name__}"
        fields = ({"encoding": msg.encoding, "height": msg.height, "width": msg.width, "step": msg.step,
                   "is_bigendian": 0} if image_format == "raw" else {"format": msg.format})
        stamp = store.types["builtin_interfaces/msg/Time"](sec=12, nanosec=345)
        header = store.types["std_msgs/msg/Header"](stamp=stamp, frame_id="view_2")
        cdr = store.serialize_cdr(store.types[msgtype](header=header, data=np.frombuffer(bytes(msg.data), np.uint8),
                                                       **fields), msgtype)
        read = store.deserialize_cdr(cdr, msgtype)
        assert convert.wire_format(read) == convert.wire_format(msg)
        assert np.array_equal(convert.image_from_msg(read), convert.image_from_msg(msg))


def test_a_bad_image_format_is_named():
    with pytest.raises(ValueError, match="image_format must be one of raw, png, jpeg, got 'webp'"):
        convert.image_to_msg(red_image(), STAMP, "view_0", "webp")
    with pytest.raises(ValueError, match="image_format must be one of"):
        convert.image_topic("images", "PNG")
    with pytest.raises(ValueError, match="RGB uint8"):
        convert.image_to_msg(red_image().astype(np.float32), STAMP, "view_0", "raw")


def test_compressed_image_message_carries_stamp_and_frame():
    msg = convert.image_to_msg(red_image(), STAMP, "view_3", "png")
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (12, 345, "view_3")
    assert convert.stamp_from_msg(msg.header.stamp) == STAMP
    assert np.array_equal(convert.image_from_msg(msg), red_image())
    assert convert.stamp_from_ns(12 * 10**9 + 345) == STAMP


@pytest.mark.parametrize("action", [STOP, move(0), move(3), retrace("00000001")])
def test_actions_round_trip(action):
    assert action_from_dict(json.loads(json.dumps(as_dict(action)))) == action


@pytest.mark.parametrize("bad", [{"kind": "move"}, {"kind": "stop", "index": 1}, {"kind": "back"},
                                 {"kind": "back", "back_to": "a", "index": 0}, {"kind": "jump"}])
def test_inconsistent_actions_are_rejected(bad):
    with pytest.raises(ValueError):
        action_from_dict(bad)


def test_decision_and_action_records_carry_one_outcome():
    task = EpisodeBrief.of(_episode(), 1, 1)
    view_set = ViewSet(view_set_id="v", stamp=STAMP, task=task, node="n", lat=0, lon=0, facing=0, step=2,
                          steps_left=33)
    msg = Answer.of(view_set, Decision(move(1), 0.8, "a cafe sign"), "vlm", 0.5)
    assert as_dict(parse(Answer, to_json(msg)))["action"] == {"kind": "move", "index": 1, "back_to": None}
    assert parse(Answer, to_json(msg)) == msg
    assert (msg.decision.confidence, msg.decision.rationale, msg.step, msg.view_set_id) == (0.8, "a cafe sign", 2, "v")
    failed = Answer.failed(view_set, "BackendError: down", "vlm", 0.1)
    assert failed.action is None and failed.error == "BackendError: down"
    with pytest.raises(ValueError, match="either an action or an error"):
        Answer(view_set_id="v", task=task, step=0, policy="p", latency_s=0.0)
    with pytest.raises(ValueError, match="either an action or an error"):
        parse(Answer, to_json(failed).replace('"error":"BackendError: down"', '"error":null'))
    with pytest.raises(ValidationError):
        ActionMsg(view_set_id="v", action=STOP, error="both")
    with pytest.raises(ValidationError):
        parse(ActionMsg, '{"kind": "action", "view_set_id": "v", "action": {"kind": "stop"}, "extra": 1}')


def test_task_hides_the_target_from_non_privileged_policies():
    episode = _episode()
    task = EpisodeBrief.of(episode, seed=3, run=7, round=1)
    assert "target" not in as_dict(task)
    seen = task.episode()
    assert (seen.episode_id, seen.instruction, seen.request, seen.start) == ("ep", "go", "cafe", "n")
    assert seen.target == "" and seen.reference_path == ()


def test_episode_record_accepts_the_trajectory_action_codes():
    msg = EpisodeMsg(status="ended", actions=[0, "back", None], path=["a", "b", "a"], steps=2)
    assert parse(EpisodeMsg, msg.to_json()).actions == [0, "back", None]


def test_navsatfix_and_enu_pose():
    fix = convert.navsatfix(22.3, 114.2, STAMP, "map")
    assert (fix.latitude, fix.longitude, fix.header.frame_id) == (22.3, 114.2, "map")
    assert math.isnan(fix.altitude) and fix.position_covariance_type == fix.COVARIANCE_TYPE_UNKNOWN
    north = convert.pose_stamped(3.0, 4.0, 0.0, STAMP, "map")  # facing north: ENU yaw +90 degrees
    q = north.pose.orientation
    assert (north.pose.position.x, north.pose.position.y) == (3.0, 4.0)
    assert q.z == pytest.approx(math.sin(math.pi / 4)) and q.w == pytest.approx(math.cos(math.pi / 4))
    east = convert.pose_stamped(0.0, 0.0, 90.0, STAMP, "map").pose.orientation  # yaw 0
    assert (east.w, east.z) == pytest.approx((1.0, 0.0))
    west = convert.pose_stamped(0.0, 0.0, 270.0, STAMP, "map").pose.orientation  # yaw 180 degrees
    assert abs(west.z) == pytest.approx(1.0)
    path = convert.path_msg([north], STAMP, "map")
    assert path.poses[0].pose.position.y == 4.0 and path.header.frame_id == "map"


def test_diagnostic_status():
    status = convert.diagnostic_status("/replay: replay", "warn", "late", {"step": 3, "node": "a"})
    assert status.level == status.WARN and [(kv.key, kv.value) for kv in status.values] == [("step", "3"),
                                                                                            ("node", "a")]


def test_a_location_round_trips_through_its_record(tiny_world):
    from cityseeker_ros.core.sensing.localisation import GraphLocaliser
    node = next(iter(tiny_world.graph.nodes.values()))
    loc = GraphLocaliser(tiny_world.graph).update(node.lat, node.lon, 90.0, stamp=12.5)
    assert loc.walkable and loc.status.value == "on-node"
    from cityseeker_ros.core.sensing.localisation import Localisation

    assert parse(Localisation, to_json(loc)) == loc
    assert typed.location_from_ros(typed.location_to_ros(loc)) == loc


def test_the_default_image_format_has_one_source():
    """convert encodes by default in the nodes' and runs' default (ros/parameters.py), not a copy."""
    default = inspect.signature(convert.image_to_msg).parameters["image_format"].default
    assert default == parameters.VIEW_IMAGE_FORMAT
    assert not hasattr(convert, "DEFAULT_IMAGE_FORMAT")
    msg = convert.image_to_msg(red_image(), STAMP, "view_0")
    assert convert.wire_format(msg) == convert.wire_format(
        convert.image_to_msg(red_image(), STAMP, "view_0", parameters.VIEW_IMAGE_FORMAT))


LEGACY_TASK = ('{"episode_id":"ep","city":"town","category":"Basic POI","difficulty":"easy","instruction":"go",'
               '"request":"cafe","start":"n","seed":1,"round":0,"run":1}')


def test_view_sets_and_decisions_of_bags_recorded_as_json_still_read():
    """std_msgs/String JSON of bags from before the typed interfaces, as the pydantic records wrote it."""
    view_set = parse(ViewSet, '{"version":1,"kind":"view_set","view_set_id":"v","stamp":{"sec":3,"nanosec":4},'
                              f'"task":{LEGACY_TASK},"node":"n","lat":1.5,"lon":2.5,"facing":90.0,"step":2,'
                              '"steps_left":33,"feedback":null,"views":[{"index":0,"heading":90.0,"relative":"front",'
                              '"frame_id":"view_0"}],"done":false,"context":{"backtrack":null,"surroundings":null,'
                              '"history":"n0 -> n","feedback":null},"panorama":{"frame_id":"panorama","width":8,'
                              '"height":4}}')
    assert view_set.task.key() == ("ep", 1, 0, 1) and view_set.context.history == "n0 -> n"
    assert view_set.image_frames() == ["view_0", "panorama"] and view_set.stamp == Stamp(3, 4)
    assert parse(ViewSet, to_json(view_set)) == view_set
    answer = parse(Answer, '{"version":1,"kind":"decision","view_set_id":"v",'
                           f'"task":{LEGACY_TASK},"step":2,"action":{{"kind":"move","index":0,"back_to":null}},'
                           '"confidence":0.5,"rationale":"a sign","error":null,"policy":"vlm","latency_s":0.25,'
                           '"records":[{"raw":"A"}]}')
    assert answer.decision == Decision(move(0), 0.5, "a sign") and answer.records == [{"raw": "A"}]
    assert json.loads(to_json(answer))["action"] == {"kind": "move", "index": 0, "back_to": None}
    failed = parse(Answer, '{"version":1,"kind":"decision","view_set_id":"v",'
                           f'"task":{LEGACY_TASK},"step":2,"action":null,"confidence":null,"rationale":"",'
                           '"error":"TimeoutError","policy":"vlm","latency_s":30.0,"records":[]}')
    assert failed.decision is None and failed.error == "TimeoutError"
    with pytest.raises(ValueError, match="kind"):
        parse(Answer, to_json(view_set))
