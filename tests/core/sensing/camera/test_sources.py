"""Each frame source on real inputs: a video file written here with OpenCV, a rosbag2 written
here with `rosbags`, the tiny world's renderer, and AirSim's RPC protocol fake (not the
simulator, which cannot run here)."""
from __future__ import annotations

import importlib.util
import math

import cv2
import numpy as np
import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.camera import FRAME_SOURCES, FrameError, TopicFrameSource, make_frame_source
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.sensing.views.panorama import PanoramaCutter
from cityseeker_ros.core.streets.directions import RelativeDirection
from tests.core.sensing.camera.conftest import localise_at, tiny_graph

W, H = 64, 32  # an equirectangular frame: 2:1


def pano_frame(i: int) -> np.ndarray:
    """A 2:1 panorama whose columns encode longitude (green ramp) and whose red is the frame index."""
    img = np.zeros((H, W, 3), np.uint8)
    img[..., 0] = 20 * i
    img[..., 1] = (np.arange(W) * 4)[None, :]
    img[..., 2] = (np.arange(H) * 8)[:, None]
    return img


@pytest.fixture
def video_file(tmp_path):
    """Six frames at 5 fps, MJPG in AVI (what OpenCV here writes and reads back)."""
    path = tmp_path / "drive.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 5.0, (W, H))
    assert writer.isOpened()
    for i in range(6):
        writer.write(cv2.cvtColor(pano_frame(i), cv2.COLOR_RGB2BGR))
    writer.release()
    return path


def red(img: np.ndarray) -> float:
    return float(img[..., 0].mean())


def test_registry_lists_every_source_and_unknown_names_fail():
    assert FRAME_SOURCES.names() == ["airsim", "equirect", "replay", "rig", "rosbag", "topic", "video"]
    with pytest.raises(ConfigError, match="unknown frame source 'kinect'; known: airsim, equirect"):
        make_frame_source("kinect")
    with pytest.raises(ConfigError, match="frame source 'video': bad parameters"):
        make_frame_source("video", None, {"url": "x"})


def test_video_file_follows_the_fix_clock(video_file):
    source = make_frame_source("video", None, {"uri": str(video_file), "start_stamp": 100.0})
    try:
        assert source.fps == 5.0 and not source.live
        assert red(source.frame(100.0)) == pytest.approx(0, abs=3)
        assert red(source.frame(100.6)) == pytest.approx(60, abs=3)  # frame 3
        assert source.frame_index == 3
        assert red(source.frame(100.2)) == pytest.approx(20, abs=3)  # back in time: rewinds
        assert red(source.frame(109.0)) == pytest.approx(100, abs=3)  # past the end: the last frame
        frame = source.frame(100.0)
        assert frame.dtype == np.uint8 and frame.shape == (H, W, 3)
        assert abs(float(frame[..., 2].mean()) - float(pano_frame(0)[..., 2].mean())) < 3  # RGB, not BGR
    finally:
        source.close()


@pytest.mark.parametrize("params, match", [
    ({}, "parameter uri is required"),
    ({"uri": "/nonexistent/drive.avi"}, "no such video file"),
    ({"uri": True}, "parameter uri must be"),
    ({"uri": "x", "fov_deg": "wide"}, "parameter fov_deg must be a number"),
])
def test_video_bad_settings_name_the_parameter(params, match):
    with pytest.raises(ConfigError, match=match):
        make_frame_source("video", None, params)


def test_a_plain_camera_sees_only_within_its_field_of_view(video_file):
    graph = tiny_graph()
    source = make_frame_source("video", None, {"uri": str(video_file), "fov_deg": 90.0})
    try:
        views = source.views(localise_at(graph, "n1", heading=90.0, stamp=5.0))
    finally:
        source.close()
    assert [v.heading for v in views] == [270.0, 90.0, 0.0]
    assert [v.relative for v in views] == [RelativeDirection.BACK, RelativeDirection.FRONT, RelativeDirection.LEFT]
    assert [v.image is not None for v in views] == [False, True, False]


def test_equirect_cuts_like_the_panorama_cutter(video_file):
    graph = tiny_graph()
    source = make_frame_source("equirect", None, {"frames": {"source": "video", "uri": str(video_file),
                                                             "start_stamp": 0.0},
                                                  "yaw_offset_deg": 10.0, "fov_deg": 90.0, "width": 24, "height": 16})
    try:
        loc = localise_at(graph, "n1", heading=80.0, stamp=0.4)  # frame 2
        views = source.views(loc)
        pano = source.inner.frame(0.4)
    finally:
        source.close()
    cutter = PanoramaCutter(90.0, 24, 16)
    assert len(views) == 3
    for view in views:  # panorama centre looks along 80 + 10 = 90 degrees
        assert np.array_equal(view.image, cutter.cut(pano, view.heading - 90.0))
    assert red(views[1].image) == pytest.approx(40, abs=3)
    # the view straight ahead is the panorama's centre columns: green ramp around column W/2
    assert float(views[1].image[:, 12, 1].mean()) == pytest.approx(W / 2 * 4, abs=6)


def test_equirect_refuses_frames_that_are_not_2_to_1(tmp_path):
    path = tmp_path / "narrow.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 5.0, (48, 32))
    writer.write(np.zeros((32, 48, 3), np.uint8))
    writer.release()
    source = make_frame_source("equirect", None, {"frames": {"source": "video", "uri": str(path)}})
    with pytest.raises(FrameError, match="not a 2:1 equirectangular"):
        source.views(localise_at(tiny_graph(), "n1", stamp=0.0))
    source.close()
    with pytest.raises(FrameError, match="needs the vehicle heading"):
        make_frame_source("equirect", None, {"frames": {"source": "topic"}}).views(
            localise_at(tiny_graph(), "n1", heading=None))
    with pytest.raises(ConfigError, match="parameter frames must name a camera"):
        make_frame_source("equirect", None, {"frames": {"source": "rig", "cameras": [
            {"frames": {"source": "topic"}}]}})
    with pytest.raises(ConfigError, match="parameter frames must be an object"):
        make_frame_source("equirect", None, {"frames": "video"})


def test_rig_gives_each_heading_the_nearest_camera():
    cameras = [{"yaw_deg": yaw, "frames": {"source": "topic"}} for yaw in (0.0, 90.0, 180.0, 270.0)]
    rig = make_frame_source("rig", None, {"cameras": cameras})
    for k, camera in enumerate(rig.cameras()):
        camera.push(np.full((4, 6, 3), 10 * (k + 1), np.uint8), stamp=1.0)
    views = rig.views(localise_at(tiny_graph(), "n1", heading=100.0, stamp=1.0))
    # headings 270, 90, 0 seen from 100: nearest cameras at yaw 180 (280), 0 (100), 270 (10)
    assert [int(v.image[0, 0, 0]) for v in views] == [30, 10, 40]
    narrow = make_frame_source("rig", None, {"cameras": cameras[:1], "max_offset_deg": 45.0})
    narrow.cameras()[0].push(np.zeros((4, 6, 3), np.uint8), stamp=1.0)
    assert [v.image is not None for v in narrow.views(localise_at(tiny_graph(), "n1", 100.0, 1.0))] == \
        [False, True, False]
    with pytest.raises(ConfigError, match=r"parameter cameras\[0\] must be"):
        make_frame_source("rig", None, {"cameras": [{"yaw": 0, "frames": {"source": "topic"}}]})
    with pytest.raises(ConfigError, match="parameter cameras must be a non-empty list"):
        make_frame_source("rig", None, {"cameras": []})


def test_topic_frames_keep_the_newest_and_refuse_stale_ones():
    source = TopicFrameSource(max_age_s=0.5)
    with pytest.raises(FrameError, match="no camera frame received yet"):
        source.frame(1.0)
    source.push(np.zeros((2, 2, 3), np.uint8), 1.0)
    source.push(np.ones((2, 2, 3), np.uint8), 2.0)
    assert int(source.frame(2.1)[0, 0, 0]) == 1 and source.received == 2
    with pytest.raises(FrameError, match="from the fix"):
        source.frame(3.0)


@pytest.mark.parametrize("storage, compressed", [("mcap", True), ("sqlite3", False)])
def test_rosbag_frames_in_time_order(tmp_path, storage, compressed):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    from cityseeker_ros.ros.convert import encode_image  # pure Pillow: no rclpy

    store = get_typestore(Stores.ROS2_JAZZY)
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    bag = tmp_path / "drive"
    msgtype = "sensor_msgs/msg/CompressedImage" if compressed else "sensor_msgs/msg/Image"
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(bag, version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection("/camera/image", msgtype, typestore=store)
        other = writer.add_connection("/chatter", "std_msgs/msg/String", typestore=store)
        chatter = store.types["std_msgs/msg/String"](data="hi")
        writer.write(other, 1, store.serialize_cdr(chatter, "std_msgs/msg/String"))
        # written out of header order: the source sorts by header stamp
        for i in (2, 0, 1):
            header = Header(stamp=Time(sec=10 + i, nanosec=0), frame_id="cam")
            img = pano_frame(i)
            if compressed:
                fmt, data = encode_image(img, "png")
                msg = store.types[msgtype](header=header, format=fmt, data=np.frombuffer(data, np.uint8))
            else:
                bgr = np.ascontiguousarray(img[..., ::-1])
                msg = store.types[msgtype](header=header, height=H, width=W, encoding="bgr8", is_bigendian=0,
                                           step=W * 3, data=bgr.reshape(-1))
            writer.write(conn, 1000 + i, store.serialize_cdr(msg, msgtype))
    source = make_frame_source("rosbag", None, {"path": str(bag), "topic": "/camera/image"})
    try:
        assert source.stamps == [10.0, 11.0, 12.0]
        assert np.array_equal(source.frame(), pano_frame(0))  # stamp None: in order
        assert np.array_equal(source.frame(), pano_frame(1))
        assert np.array_equal(source.frame(11.5), pano_frame(1))  # newest at or before
        assert np.array_equal(source.frame(99.0), pano_frame(2))
        with pytest.raises(FrameError, match="no frame on /camera/image at or before"):
            source.frame(9.0)
    finally:
        source.close()
    with pytest.raises(ConfigError, match="image topics: /camera/image"):
        make_frame_source("rosbag", None, {"path": str(bag), "topic": "/chatter"})
    with pytest.raises(ConfigError, match="parameter path: no such bag"):
        make_frame_source("rosbag", None, {"path": str(tmp_path / "none"), "topic": "/camera/image"})


def test_replay_is_the_world_view_source_at_the_node(tiny_world):
    params = {"views": "rendered", "view_params": {"width": 32, "height": 24}}
    source = make_frame_source("replay", tiny_world, params)
    views = source.views(localise_at(tiny_world.graph, "n1", heading=None))
    reference = make_view_source("rendered", tiny_world, {"width": 32, "height": 24})
    node = tiny_world.graph.nodes["n1"]
    assert [v.heading for v in views] == list(node.walkable_headings)
    for view, image in zip(views, reference.images(node, node.walkable_headings)):
        assert np.array_equal(view.image, image)
    assert source.synthetic and source.describe()["views"]["name"] == "rendered"
    with pytest.raises(ConfigError, match="needs a world: set parameter data"):
        make_frame_source("replay", None, params)


AIRSIM_CLIENT = next((n for n in ("cosysairsim", "airsim") if importlib.util.find_spec(n)), None)


@pytest.mark.skipif(AIRSIM_CLIENT is None, reason="no AirSim client library installed")
def test_airsim_turns_the_camera_where_the_vehicle_is_and_never_moves_it(tiny_world):
    """The vehicle stands 3 m north of n1 facing 110 degrees: the camera turns on its mount to each
    walkable heading (relative to that body yaw), the fake sees no call that moves, poses or arms
    the vehicle, and the camera ends back on its mount."""
    from cityseeker_ros.core.sensing.localisation import GraphLocaliser
    from cityseeker_ros.core.streets.geodesy import destination
    from tests.core.vehicles.airsim.fake_airsim import MOUNT, FakeAirSim, camera_image, quat_yaw, vec, yaw_of

    fake = FakeAirSim()
    fake.position, fake.orientation = vec(3.0, 20.0, -2.5), quat_yaw(math.radians(110.0))
    graph = tiny_world.graph
    anchor = {"lat": graph.nodes["n0"].lat, "lon": graph.nodes["n0"].lon, "alt": 0.0}
    source = make_frame_source("airsim", tiny_world, {"anchor": anchor, "port": fake.port, "client": AIRSIM_CLIENT,
                                                      "settle_s": 0})
    try:
        n1 = graph.nodes["n1"]
        lat, lon = destination(n1.lat, n1.lon, 0.0, 3.0)  # 3 m north of n1: the vehicle, not the node
        views = source.views(GraphLocaliser(graph).update(lat, lon, 110.0, 1.0))
    finally:
        source.close()
        fake.close()
    assert [v.heading for v in views] == [270.0, 90.0, 0.0]
    for view in views:
        assert np.array_equal(view.image, camera_image(math.radians(view.heading)))
    assert fake.vehicle_calls() == [] and fake.position == vec(3.0, 20.0, -2.5)
    assert [round(math.degrees(yaw_of(pose["orientation"]))) % 360 for _, pose in fake.shots] == [270, 90, 0]
    assert fake.cameras["front"]["orientation"] == pytest.approx(MOUNT["orientation"])
