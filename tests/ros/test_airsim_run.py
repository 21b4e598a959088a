"""`cityseeker run airsim` end to end against the AirSim protocol fake (tests/core/airsim/
fake_flight.py: it speaks AirSim's msgpack-rpc wire protocol and keeps one vehicle pose; it is a
protocol fake, not the simulator, and runs in this rclpy-free pytest process).

The drone is teleported to each task's start, graph_localiser snaps the bridge's fix, camera_ingest
yaws the vehicle in place for one image per walkable direction, the supervisor (live) sends a
goal per decision, and the bridge teleports the vehicle there: the flown paths are those of the
in-process benchmark, and the fake saw the poses and image requests."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cityseeker_ros.core.datasets import load_dataset
from tests.core.airsim.fake_flight import FlightFake
from tests.ros.test_live import COMPARED
from tests.ros.test_runner import REPO, in_process, logs, records

pytest.importorskip("cosysairsim", reason="the AirSim client library (test extra) is not installed")


def test_a_drone_flies_the_tasks_through_the_bridge(monaco_dir, ros_domain, tmp_path):
    flags = ("--data", str(monaco_dir), "--policy", "random", "--limit", "2", "--max-steps", "4")
    in_process(tmp_path / "cli", *flags)
    graph = load_dataset(monaco_dir)[0].graph
    anchor = {"lat": graph.frame.lat0, "lon": graph.frame.lon0}
    fake = FlightFake()
    try:
        out = tmp_path / "ros"
        result = subprocess.run(
            [sys.executable, "-m", "cityseeker_ros.cli", "run", "airsim", *flags, "--port", str(fake.port),
             "--anchor", json.dumps(anchor), "--motion", "teleport", "--camera-param", "settle_s=0",
             "--out", str(out), "--domain-id", str(ros_domain), "--timeout", "200"],
            cwd=REPO, capture_output=True, text=True, timeout=260)
        assert result.returncode == 0, result.stdout + result.stderr + logs(out)
        got, expected = records(out), records(tmp_path / "cli")
        assert [{k: r[k] for k in COMPARED} for r in got] == [{k: r[k] for k in COMPARED} for r in expected]
        methods = [name for name, _ in fake.calls]
        assert methods.count("simSetVehiclePose") >= sum(r["steps"] + 1 for r in got)
        assert "simGetImages" in methods
    finally:
        fake.close()
