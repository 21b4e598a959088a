"""The frames node over loopback DDS during a benchmark replay: the walker's `map` position (the
path, and the /tf chain map -> odom -> base_link) lands on the graph node it stands at within
0.5 m at every step; the origin, the graph and the target are latched in `map`; without tf2_msgs
the node says why /tf is off and publishes the rest; bad parameters stop the node with one line.

tf2_msgs comes from vendor/tf2_msgs on a pip-only machine (setup.py builds it). No tf2 Buffer is
at hand in Python there (tf2_ros and tf2_py have no Jazzy wheel either), so the probe
(tests/ros/frames_probe.py) reads /tf and /tf_static with plain rclpy subscriptions and composes
map -> odom -> base_link itself, with core.frames' TransformTree."""
from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.ros import env as ros

REPLAY = "cityseeker_ros.nodes.streetview_replay"
FRAMES = "cityseeker_ros.nodes.frames"
CONFIG = Path(__file__).resolve().parents[2] / "config"
TOLERANCE_M = 0.5
TF2_MSGS = importlib.util.find_spec("tf2_msgs") is not None


def _probe(ros_processes, plan: dict, timeout_s: float = 90.0) -> dict:
    runs = sum(1 for name, _ in ros_processes.started if name.startswith("probe"))
    name = f"probe{runs or ''}"  # each probe run its own log and report
    plan_file, out_file = ros_processes.logs / f"{name}_plan.json", ros_processes.logs / f"{name}_out.json"
    plan_file.write_text(json.dumps(plan))
    process = ros_processes._start(name, ros.python_module_command("tests.ros.frames_probe", str(plan_file),
                                                                   str(out_file)))
    try:
        code = process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        code = None
    if code != 0 or not out_file.is_file():
        pytest.fail(f"probe exit {code}\n{ros_processes.log_text()}")
    return json.loads(out_file.read_text())


def params_file(tmp_path: Path, node: str, **values) -> str:
    """A params file layered over config/<node>.yaml (JSON strings stay strings this way)."""
    path = tmp_path / f"{node}.params.yaml"
    path.write_text(json.dumps({node: {"ros__parameters": values}}))
    return str(path)


def hide_tf2_msgs(ros_processes, folder: Path) -> None:
    """Every process started from here on finds a tf2_msgs that fails to import, as on a ROS 2
    install without it."""
    package = folder / "tf2_msgs"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('raise ImportError("tf2_msgs hidden by the test")\n')
    paths = [str(folder), ros_processes.env.get("PYTHONPATH", "")]
    ros_processes.env = {**ros_processes.env, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


@pytest.mark.parametrize("tf2_msgs", ["installed", "missing"])
def test_replayed_walker_is_on_the_graph_in_map(ros_processes, tiny_city, tmp_path, tf2_msgs):
    if tf2_msgs == "installed" and not TF2_MSGS:
        pytest.skip("tf2_msgs is not installed (pip installs vendor/tf2_msgs; this ROS 2 install lacks it)")
    tf = tf2_msgs == "installed"
    if not tf:
        hide_tf2_msgs(ros_processes, tmp_path / "hidden")
    world = load_dataset(tiny_city)[0]
    ros_processes.node(REPLAY, "--params-file", str(CONFIG / "streetview_replay.yaml"),
                       "-p", f"data:={tiny_city}", "-p", "episode:=0", "-p", "panorama:=false")
    cameras = json.dumps([{"frame_id": "camera", "xyz": [0.1, 0.0, 1.6]}])
    ros_processes.node(FRAMES, "--params-file", str(CONFIG / "frames.yaml"),
                       "--params-file", params_file(tmp_path, "frames", data=str(tiny_city), cameras=cameras))
    report = _probe(ros_processes, {"headings": [90.0, 90.0, 90.0], "timeout_s": 60})

    assert report["tf"] is tf
    steps = report["steps"]
    assert [s["node"] for s in steps] == ["00000000", "00000001", "00000002", "00000003", "00000003"], steps
    assert steps[-1]["done"]
    for i, s in enumerate(steps):
        assert s["outputs"], f"no frames output for the view set at {s['node']}: {report}"
        node = world.graph.nodes[s["node"]]
        east, north = (float(v) for v in world.graph.frame.to_xy(node.lat, node.lon))
        assert math.dist(s["path_xy"], (east, north)) < TOLERANCE_M, (s, east, north)
        assert s["odom_frames"] == ["odom", "base_link"]
        if tf:  # /tf read over DDS, map -> odom -> base_link composed by the probe
            assert math.dist(s["tf_xy"], (east, north)) < TOLERANCE_M, (s, east, north)
            if i:  # each step walked east: base_link faces +x of map (ENU)
                assert abs(s["tf_yaw"]) < 0.05, s
        else:
            assert "tf_xy" not in s
    # the walker goes east: the path grows by one pose a node, and the yaw says east
    assert [s["path_len"] for s in steps] == [1, 2, 3, 4, 4]

    assert report["origin"] == pytest.approx([world.graph.frame.lat0, world.graph.frame.lon0], abs=1e-12)
    markers = report["markers"]
    assert markers["graph"]["frame"] == "map" and len(markers["graph"]["points"]) == 2 * 4  # four streets
    target = world.graph.nodes[world.episodes[0].target]
    tx, ty = (float(v) for v in world.graph.frame.to_xy(target.lat, target.lon))
    assert math.dist(markers["target"]["points"][0], (tx, ty)) < 1e-3
    assert all(math.dist(p, (tx, ty)) == pytest.approx(15.0, abs=1e-6) for p in markers["target_area"]["points"])
    diagnostics = report["diagnostics"]
    assert float(diagnostics["origin_lat"]) == pytest.approx(world.graph.frame.lat0, abs=1e-9)
    assert float(diagnostics["origin_lon"]) == pytest.approx(world.graph.frame.lon0, abs=1e-9)
    assert int(diagnostics["poses"]) == len(steps)
    log = (ros_processes.logs / "frames.log").read_text()
    if tf:
        assert {"map", "odom", "base_link", "camera", "camera_optical"} <= set(report["frames"])
        assert report["camera_optical"] == pytest.approx([0.1, 0.0, 1.6])
        assert diagnostics["tf"] == "on" and "tf2_msgs" not in log
    else:  # the one line that says why /tf is off, and no frame on /tf
        assert diagnostics["tf"] == "off: tf2_msgs not installed"
        assert log.count("tf2_msgs is not installed") == 1, log
        assert report["frames"] == []


@pytest.mark.skipif(not TF2_MSGS, reason="tf2_msgs is not installed (pip installs vendor/tf2_msgs; this ROS 2 "
                    "install lacks it)")
def test_tf2_msgs_is_upstreams_tfmessage():
    """RViz or Foxglove on a ROS 2 install read /tf with the distribution's tf2_msgs: the installed
    TFMessage (vendor/tf2_msgs on a pip-only machine) has the type hash (RIHS01) that rosbags
    computes from ROS 2 Jazzy's own definition."""
    from rosbags.typesys import Stores, get_typestore

    package = Path(importlib.util.find_spec("tf2_msgs").submodule_search_locations[0])
    prefix = package.parents[3]  # <prefix>/lib/pythonX.Y/site-packages/tf2_msgs
    generated = json.loads((prefix / "share" / "tf2_msgs" / "msg" / "TFMessage.json").read_text())
    expected = get_typestore(Stores.ROS2_JAZZY).hash_rihs01("tf2_msgs/msg/TFMessage")
    assert generated["type_hashes"][0] == {"type_name": "tf2_msgs/msg/TFMessage", "hash_string": expected}


@pytest.mark.parametrize("params,expected", [
    (["-p", "source:=walker"], "parameter source must be one of replay, vehicle"),
    ([], "parameter data (a world folder) or origin"),
    (["-p", "origin:=43.7,north"], "parameter origin must be 'lat,lon'"),
    (["-p", "origin:=95,7"], "geographic origin lat must be"),
    (["cameras"],
     "parameter cameras[0].xyz must be three finite numbers"),
    (["-p", "origin:=43.7,7.4", "-p", "base_frame:=odom"], "frame names must be three different"),
    (["-p", "origin:=43.7,7.4", "-p", "path_max_poses:=1"], "path max_poses must be an integer of at least 2"),
    (["-p", "origin:=43.7,7.4", "-p", "tf_period_s:=0.0"], "parameter tf_period_s must be a positive number"),
])
def test_bad_parameters_stop_the_node_with_one_line(ros_processes, tmp_path, params, expected):
    if any("cameras" in p for p in params):  # a JSON list travels in a params file
        params = ["-p", "origin:=43.7,7.4", "--params-file",
                  params_file(tmp_path, "frames", cameras=json.dumps([{"frame_id": "cam", "xyz": [1, 2]}]))]
    process = ros_processes.node(FRAMES, *params)
    code = process.wait(60)
    assert code != 0
    log = (ros_processes.logs / "frames.log").read_text()
    assert expected in log, log


def test_a_walker_behind_the_vehicle_bridge_is_placed_in_map_by_its_fix(ros_processes):
    from cityseeker_ros.core.frames.geo_origin import GeoOrigin, MapFrame
    from tests.ros.test_vehicle_bridge import START, goal, start_driver, start_walker

    # the world's origin 300 m south-west of the walker: map and the bridge's odometry differ
    origin = GeoOrigin(START[0] - 0.002, START[1] - 0.003)
    start_walker(ros_processes)
    ros_processes.node(FRAMES, "-p", "source:=vehicle", "-p", f"origin:={origin.lat},{origin.lon}",
                       "-p", "episode_topic:=''")
    frame = MapFrame(origin)
    start_east, start_north, _ = frame.to_enu(*START)
    before = _probe(ros_processes, {"mode": "vehicle", "duration_s": 0.5, "timeout_s": 30})
    assert before["ok"] and math.dist(before["path"][-1], (start_east, start_north)) < TOLERANCE_M, before
    target = goal(40.0, 90.0)
    driver, out = start_driver(ros_processes, [
        {"op": "wait_state"}, {"op": "heartbeat", "on": True, "rate_hz": 20},
        {"op": "commands", "goal": target, "period_s": 0.1, "for_s": 1.0},
        {"op": "sleep", "s": 1.0}, {"op": "wait_state"}], "driver")
    ros_processes.finish((driver, out), 120)
    report = _probe(ros_processes, {"mode": "vehicle", "duration_s": 1.0, "timeout_s": 30})
    assert report["ok"], report
    end_east, end_north, _ = frame.to_enu(*report["fix"])
    assert math.dist((end_east, end_north), frame.to_enu(target["lat"], target["lon"])[:2]) < TOLERANCE_M
    path = report["path"]
    assert math.dist(path[0], (start_east, start_north)) < TOLERANCE_M, path  # where it stood
    assert math.dist(path[-1], (end_east, end_north)) < TOLERANCE_M, path  # where it went
    assert report["odom_frames"] == ["odom", "base_link"]
    assert math.dist(report["odom_xy"], (0.0, 0.0)) > 30.0  # odometry is about the walker's own start
    assert report["tf"] is TF2_MSGS
    if TF2_MSGS:
        assert math.dist(report["tf_xy"], (end_east, end_north)) < TOLERANCE_M
        assert math.dist(report["odom_in_map"], (start_east, start_north)) < TOLERANCE_M


def _config_topics() -> tuple[set[str], set[str]]:
    import yaml

    layout = json.loads((CONFIG / "foxglove_layout.json").read_text())
    foxglove = set(layout["configById"]["3D!cityseeker"]["topics"])
    foxglove |= {c["imageMode"]["imageTopic"] for c in layout["configById"].values() if "imageMode" in c}
    foxglove |= {c["topicPath"] for c in layout["configById"].values() if "topicPath" in c}
    rviz = yaml.safe_load((CONFIG / "frames.rviz").read_text())
    rviz_topics = {d["Topic"]["Value"] for d in rviz["Visualization Manager"]["Displays"] if "Topic" in d}
    return foxglove, rviz_topics


def test_the_shipped_viewer_configs_name_topics_the_stack_publishes_in_map():
    """A renamed topic or frame leaves an empty panel, silently: the configs are checked against the
    bag's topic table (what a recorded run holds) and the frames node's defaults."""
    import yaml

    from cityseeker_ros.ros.bag_topics import KNOWN_TOPICS

    foxglove, rviz_topics = _config_topics()
    published = set(KNOWN_TOPICS) | {"/supervisor/markers"}  # the supervisor's episode markers (not recorded)
    assert foxglove - published == set() and rviz_topics - published == set(), (foxglove, rviz_topics)
    assert {"/frames/markers", "/frames/path", "/frames/odom"} <= foxglove & rviz_topics
    rviz = yaml.safe_load((CONFIG / "frames.rviz").read_text())
    frames_yaml = yaml.safe_load((CONFIG / "frames.yaml").read_text())["frames"]["ros__parameters"]
    assert rviz["Visualization Manager"]["Global Options"]["Fixed Frame"] == frames_yaml["map_frame"] == "map"
    layout = json.loads((CONFIG / "foxglove_layout.json").read_text())
    assert layout["configById"]["3D!cityseeker"]["followTf"] == frames_yaml["base_frame"] == "base_link"
    panels = json.dumps(layout["layout"])
    assert all(panel in panels for panel in layout["configById"])  # every configured panel is shown
