"""`cityseeker run vehicle --link airsim` (alias `run airsim`) end to end against the AirSim protocol
fake (tests/core/vehicles/airsim/
fake_flight.py: it speaks AirSim's msgpack-rpc wire protocol and keeps one vehicle pose; it is a
protocol fake, not the simulator, and runs in this rclpy-free pytest process).

The drone is teleported to each task's start, graph_localiser snaps the bridge's fix, camera_ingest
turns the drone's camera (never the drone) for one image per walkable direction, the supervisor (live) sends a
goal per decision, and the bridge teleports the vehicle there: the flown paths are those of the
in-process benchmark, and the fake saw the poses and image requests. Flown with an e-stop in the
middle, no motion reaches the vehicle from the e-stop's hold to its reset."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.vehicles.safety import EStop, LatchFile
from cityseeker_ros.ros import env as ros
from tests.core.vehicles.airsim.fake_airsim import MOUNT, moves_vehicle
from tests.core.vehicles.airsim.fake_flight import FlightFake
from tests.ros.test_live import COMPARED
from tests.ros.test_runner import REPO, in_process, logs, records

pytest.importorskip("cosysairsim", reason="the AirSim client library (test extra) is not installed")

# The camera source's AirSim links: they grab images and never read the multirotor state (the
# bridge's control link, which may also grab, reads it every state tick).
CAMERA_LINKS = ("simGetImages", "getMultirotorState")


def run_airsim(fake: FlightFake, out, ros_domain: int, anchor: dict, *flags: str) -> subprocess.CompletedProcess:
    """`cityseeker run airsim` (= run vehicle --link airsim) against the fake, teleporting unless `flags`
    say otherwise."""
    return subprocess.run(
        [sys.executable, "-m", "cityseeker_ros.cli", "run", "airsim", *flags, "--link-param", f"port={fake.port}",
         "--link-param", f"anchor={json.dumps(anchor)}", "--camera-param", "settle_s=0", "--out", str(out),
         "--domain-id", str(ros_domain), "--timeout", "200"],
        cwd=REPO, capture_output=True, text=True, timeout=260)


def start_driver(tmp_path, ros_domain: int, steps: list[dict]):
    """tests/ros/vehicle_driver.py playing `steps` against the bridge, once the bridge and the
    supervisor both hear its /estop; its report: driver_out.json."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"bridge": "/vehicle_bridge", "command": "/supervisor/command",
                                "estop_listeners": 2, "steps": steps}))
    command = ros.python_module_command("tests.ros.vehicle_driver", str(plan), str(tmp_path / "driver_out.json"))
    return ros.spawn(command, ros.ros_env(domain_id=ros_domain), stdout=open(tmp_path / "driver.log", "w"),
                     stderr=subprocess.STDOUT, cwd=REPO)


def driver_steps(report_file) -> str:
    """The driver's report of its steps, for a failure's message."""
    return "\ndriver steps: " + (report_file.read_text() if report_file.exists() else "(no report)")


def test_a_drone_flies_the_tasks_through_the_bridge(monaco_dir, ros_domain, tmp_path):
    flags = ("--data", str(monaco_dir), "--policy", "random", "--limit", "2", "--max-steps", "4")
    in_process(tmp_path / "cli", *flags)
    graph = load_dataset(monaco_dir)[0].graph
    anchor = {"lat": graph.frame.lat0, "lon": graph.frame.lon0}
    fake = FlightFake()
    try:
        out = tmp_path / "ros"
        result = run_airsim(fake, out, ros_domain, anchor, *flags, "--link-param", "motion=teleport")
        assert result.returncode == 0, result.stdout + result.stderr + logs(out)
        got, expected = records(out), records(tmp_path / "cli")
        assert [{k: r[k] for k in COMPARED} for r in got] == [{k: r[k] for k in COMPARED} for r in expected]
        methods = [name for name, _ in fake.calls]
        assert methods.count("simSetVehiclePose") >= sum(r["steps"] + 1 for r in got)
        # The camera's link never moved, posed or armed the vehicle: the views came from the
        # camera turned on its mount, which it is back on.
        assert fake.vehicle_calls_on_links(*CAMERA_LINKS) == [], fake.connection_summary()
        # Every view the camera's links grabbed was taken with the camera pointed first (the
        # bridge's control link grabs its own frames without turning anything).
        camera = [calls for calls in list(fake.connections) if "simGetImages" in calls and
                  "getMultirotorState" not in calls]
        assert camera and all(c.count("simSetCameraPose") >= c.count("simGetImages") for c in camera), \
            fake.connection_summary()
        assert fake.cameras["front"]["orientation"] == pytest.approx(MOUNT["orientation"])
    finally:
        fake.close()


def test_an_estop_during_a_flown_run_stops_every_motion_until_reset(monaco_dir, ros_domain, tmp_path):
    """`cityseeker run airsim --motion fly`, the fake with AirSim's task semantics (moves run
    0.3 s, requests wait 0-10 ms). A driver trips /estop while a goal flies, waits, then releases
    and resets both latches: between the trip and the reset the vehicle takes no motion call after
    its last hover, none after ~/safety said "estop"; after the reset the supervisor decides again
    and the run flies on and finishes every task."""
    graph = load_dataset(monaco_dir)[0].graph
    anchor = {"lat": graph.frame.lat0, "lon": graph.frame.lon0}
    safety = tmp_path / "safety.yaml"
    safety.write_text(json.dumps({"safety": {
        "geofence": {"circle": {"center": [anchor["lat"], anchor["lon"]], "radius_m": 5000.0}},
        "decision_timeout_s": 3.0, "heartbeat_timeout_s": 2.0, "max_speed_m_s": 10.0, "max_altitude_m": 100.0}}))
    report_file = tmp_path / "driver_out.json"
    fake = FlightFake(task_s=0.3, latency_s=0.010)
    out = tmp_path / "ros"
    driver = start_driver(tmp_path, ros_domain, [
        {"op": "wait_safety", "code": "ok", "moving": True, "timeout_s": 150},  # 0: a goal flies
        {"op": "estop", "value": True},                                        # 1
        {"op": "wait_safety", "code": "estop", "moving": False, "new": True},  # 2
        {"op": "sleep", "s": 2.5},                                             # 3: goals keep coming
        {"op": "estop", "value": False},                                       # 4
        {"op": "reset_estop", "supervisor": True},                             # 5: both latches
    ])
    try:
        result = run_airsim(fake, out, ros_domain, anchor, "--data", str(monaco_dir), "--policy", "random",
                            "--limit", "1", "--max-steps", "3", "--link-param", "motion=fly",
                            "--safety-config", str(safety))
        assert driver.wait(60) == 0, (tmp_path / "driver.log").read_text() + driver_steps(report_file) + \
            f"\nthe run (exit {result.returncode}):\n" + result.stdout[-3000:] + result.stderr[-3000:] + logs(out)
        assert result.returncode == 0, result.stdout + result.stderr + logs(out)
        s = json.loads(report_file.read_text())["steps"]
        assert all(step.get("ok", True) for step in s) and s[5]["success"], s
        # Every call that moves, poses or arms the vehicle, from any connection (bridge or camera).
        window = [(t, name) for t, name, _ in fake.timed(after=s[1]["sent_t"])
                  if t < s[5]["t"] and moves_vehicle(name)]
        last_hover = max(i for i, (_, name) in enumerate(window) if name == "hover")
        after_hover = [name for _, name in window[last_hover + 1:]]
        after_report = [name for t, name in window if name != "hover" and t > s[2]["safety"]["t"]]
        print(f"\nrun airsim, e-stop while flying: motion calls after the last hover {after_hover}, "
              f"after ~/safety said estop {after_report}")
        assert (after_hover, after_report) == ([], [])
        assert fake.vehicle_calls_on_links(*CAMERA_LINKS) == [], fake.connection_summary()
        assert "simSetCameraPose" in [name for _, name, _ in fake.timed()]  # the camera did look around
        assert len(records(out)) == 1
        assert fake.timed("moveToPosition", after=s[5]["t"]), "the run flew on after the reset"
        assert not (out / "ros" / "vehicle_bridge.estop.json").exists()
    finally:
        ros.stop(driver)
        fake.close()


def test_a_runner_restarted_on_a_latched_estop_does_not_fly_until_reset(monaco_dir, ros_domain, tmp_path):
    """The runner (and every node) died with the e-stop latched: `cityseeker run airsim` on the
    same --out starts latched, and the vehicle is sent no motion while the supervisor repeats its
    goal; after ~/reset_estop the run flies and finishes."""
    graph = load_dataset(monaco_dir)[0].graph
    anchor = {"lat": graph.frame.lat0, "lon": graph.frame.lon0}
    out = tmp_path / "ros"
    latch = out / "ros" / "vehicle_bridge.estop.json"
    latch.parent.mkdir(parents=True)
    EStop(LatchFile(latch)).trigger("/estop", "before the runner died")
    report_file = tmp_path / "driver_out.json"
    fake = FlightFake()
    driver = start_driver(tmp_path, ros_domain, [
        {"op": "wait_safety", "code": "estop", "moving": False, "timeout_s": 150},  # 0
        {"op": "sleep", "s": 3.0},  # 1: the supervisor repeats its goal every second
        {"op": "reset_estop"},      # 2
    ])
    try:
        result = run_airsim(fake, out, ros_domain, anchor, "--data", str(monaco_dir), "--policy", "random",
                            "--limit", "1", "--max-steps", "3", "--link-param", "motion=teleport")
        assert driver.wait(60) == 0, (tmp_path / "driver.log").read_text() + driver_steps(report_file) + \
            f"\nthe run (exit {result.returncode}):\n" + result.stdout[-3000:] + result.stderr[-3000:] + logs(out)
        assert result.returncode == 0, result.stdout + result.stderr + logs(out)
        s = json.loads(report_file.read_text())["steps"]
        assert s[0]["ok"] and "before the runner died" in s[0]["safety"]["reason"] and s[2]["success"], s
        assert "starting with the e-stop latched" in (out / "ros" / "vehicle_bridge.log").read_text()
        latched = [name for t, name, _ in fake.timed() if t < s[2]["t"]]
        assert "getMultirotorState" in latched  # connected all along
        assert [m for m in latched if moves_vehicle(m) and m != "hover"] == [], latched
        assert fake.timed("simSetVehiclePose", after=s[2]["t"]), "the run flew after the reset"
        assert len(records(out)) == 1 and not latch.exists()
    finally:
        ros.stop(driver)
        fake.close()
