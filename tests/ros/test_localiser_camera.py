"""graph_localiser and camera_ingest as real node processes over loopback DDS: a driver
publishes a jittery NavSatFix track along n0-n1-n2-n3 of the tiny world and a running episode;
locations must not flicker, off-graph must be reported, and every node arrival must give one
view set whose images decode. The camera is the "replay" source (the tiny world's renderer):
a synthetic camera, since no real one exists here."""
from __future__ import annotations

import json
from collections import Counter
from itertools import groupby

import numpy as np

from cityseeker_ros.core.streets.geodesy import destination, geodesic_m, initial_bearing_deg
from cityseeker_ros.ros import env as ros
from tests.core.sensing.camera.conftest import tiny_graph, write_tiny_world
from tests.ros.conftest import REPO

CONFIG = REPO / "config"
ROUTE = ["n0", "n1", "n2", "n3"]


def jittery_track(step_m: float = 2.0, jitter_m: float = 1.5, dwell: int = 4, seed: int = 0) -> list[list]:
    """[lat, lon, wait]: the last fix of each dwell waits for that node's view set."""
    graph, rng = tiny_graph(), np.random.default_rng(seed)
    points, waits = [], []
    for a, b in zip(ROUTE, ROUTE[1:]):
        waits.append(len(points) + dwell - 1)
        na, nb = graph.nodes[a], graph.nodes[b]
        bearing = initial_bearing_deg(na.lat, na.lon, nb.lat, nb.lon)
        length = geodesic_m(na.lat, na.lon, nb.lat, nb.lon)
        points += [(na.lat, na.lon)] * dwell
        points += [destination(na.lat, na.lon, bearing, d) for d in np.arange(step_m, length, step_m)]
    waits.append(len(points) + dwell - 1)
    points += [(graph.nodes[ROUTE[-1]].lat, graph.nodes[ROUTE[-1]].lon)] * dwell
    noisy = [destination(lat, lon, float(rng.uniform(0, 360)), float(rng.uniform(0, jitter_m))) for lat, lon in points]
    wait_at = dict(zip(waits, ROUTE))
    return [[float(lat), float(lon), wait_at.get(i)] for i, (lat, lon) in enumerate(noisy)]


def test_fixes_to_locations_to_one_view_set_per_arrival(ros_processes, tmp_path):
    world = write_tiny_world(tmp_path / "tinyville")
    source_params = json.dumps({"views": "rendered", "view_params": {"width": 32, "height": 24}})
    ros_processes.node("cityseeker_ros.nodes.graph_localiser", "--params-file", str(CONFIG / "graph_localiser.yaml"),
                       "-p", f"data:={world}", "-p", "snap_radius_m:=6.0", "-r", "fix:=/test/fix")
    ros_processes.node("cityseeker_ros.nodes.camera_ingest", "--params-file", str(CONFIG / "camera_ingest.yaml"),
                       "-p", f"data:={world}", "-p", "source:=replay", "-p", f"source_params:='{source_params}'",
                       "-p", "image_format:=png", "-p", "diagnostics_period_s:=0.5",
                       "-r", "location:=/graph_localiser/location", "-r", "episode:=/test/episode")
    n3 = tiny_graph().nodes["n3"]
    task = {"episode_id": "tinyville-cam-0", "city": "tinyville", "category": "Basic POI", "difficulty": "easy",
            "instruction": "Find a cafe.", "request": "cafe", "start": "n0", "seed": 1, "round": 0, "run": 1}
    plan = {"fixes": jittery_track(), "off_graph": list(destination(n3.lat, n3.lon, 180.0, 200.0)), "task": task,
            "period_s": 0.05, "timeout_s": 90}
    plan_file, out_file = tmp_path / "logs" / "plan.json", tmp_path / "logs" / "camera_out.json"
    plan_file.write_text(json.dumps(plan))
    driver = ros_processes._start("driver", ros.python_module_command("tests.ros.camera_driver", str(plan_file),
                                                                      str(out_file)))
    report = ros_processes.finish((driver, out_file), timeout_s=240)

    assert report["matched"] and report["episode_seen"]
    assert report["view_sets_before_episode"] == 0  # no running task: nothing published, and it says so
    assert "waiting for a running episode" in report["camera_waiting"][1]
    track = report["track_locations"]
    assert report["waits"] == [[node, True] for node in ROUTE]
    assert len(track) >= len(ROUTE) * 3  # keep-last 1: a busy driver may coalesce some
    nodes = [key for key, _ in groupby(loc["node"] for loc in track)]
    assert nodes == ROUTE  # hysteresis: jitter never flips the node back and forth
    assert {loc["status"] for loc in track} <= {"on-node", "between"}
    assert any(loc["status"] == "between" for loc in track)
    walking = [loc["heading_deg"] for loc in track[10:] if loc["heading_deg"] is not None]
    assert walking and abs(float(np.median(walking)) - 90.0) < 20.0  # heading from motion: east

    assert report["off_graph_seen"]
    assert report["locations_after"][-1]["status"] == "off-graph"
    assert "off-graph" in report["locations_after"][-1]["reason"]

    view_sets = report["view_sets"]
    assert [v["node"] for v in view_sets] == ROUTE  # one per arrival, never two in a visit
    assert [v["step"] for v in view_sets] == [0, 1, 2, 3] and all(v["run"] == 1 for v in view_sets)
    assert view_sets[1]["headings"] == [270.0, 90.0, 0.0] and view_sets[1]["frames"] == ["view_0", "view_1", "view_2"]
    assert len({v["id"] for v in view_sets}) == 4
    for v in view_sets:
        for frame in v["frames"]:
            shape = report["images"][f"{v['stamp'][0]}.{v['stamp'][1]}/{frame}"]
            assert shape[:3] == [24, 32, 3]
    assert Counter(len(v["frames"]) for v in view_sets) == Counter({1: 2, 3: 1, 2: 1})


def test_bad_parameters_exit_with_one_clear_line(ros_processes, tmp_path):
    world = write_tiny_world(tmp_path / "tinyville")
    localiser = ros_processes.node("cityseeker_ros.nodes.graph_localiser", "-p", f"data:={world}",
                                   "-p", "input:=gps")
    camera = ros_processes.node("cityseeker_ros.nodes.camera_ingest", "-p", f"data:={world}", "-p", "source:=kinect")
    assert localiser.wait(120) == 2 and camera.wait(120) == 2
    logs = ros_processes.log_text()
    assert "parameter input must be 'fix' or 'odom', got 'gps'" in logs
    assert "unknown frame source 'kinect'; known: airsim, equirect, replay, rig, rosbag, topic, video" in logs
