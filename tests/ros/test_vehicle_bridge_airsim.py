"""The vehicle_bridge node with the airsim link as a real process over DDS on loopback, against the protocol fake of
AirSim's RPC server (tests/core/vehicles/airsim/fake_flight.py): a protocol fake, not the simulator. It
speaks AirSim's msgpack-rpc wire protocol, runs in this (rclpy-free) pytest process and stamps
every call with time.monotonic; a driver process (tests/ros/vehicle_driver.py) stands in for the
supervisor and stamps what it sent and saw on the same host-wide monotonic clock.

Shown here: goals flow (moveToPosition, simSetVehiclePose); the vehicle holds within 1 s when
decisions stop and when the heartbeat stops, and ~/safety says why; a goal outside the geofence is
refused; the e-stop latches until ~/reset_estop; fix and odometry follow the fake's pose with
REP 103 conversions. With AirSim's task semantics and RPC latency in the fake: an e-stop while a
goal flies leaves a hover as the last call, and no motion call after it; a latched e-stop
survives a SIGKILL and restart of the bridge until ~/reset_estop.
"""
from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.frames import compass_to_enu_yaw, quat_from_yaw, yaw_from_quat
from cityseeker_ros.ros import env as ros
from tests.core.vehicles.airsim.fake_airsim import quat_yaw, vec
from tests.core.vehicles.airsim.fake_flight import MOTION, FlightFake

pytest.importorskip("cosysairsim", reason="the AirSim client library (test extra) is not installed")

ANCHOR = Anchor(lat=43.7384, lon=7.4246, alt=10.0, yaw_offset_deg=25.0)
BRIDGE = "cityseeker_ros.nodes.vehicle_bridge"
LINK_KEYS = ("motion", "camera", "motion_params", "state_from_pose")  # the airsim link's, in link_params
HOLD_WITHIN_S = 1.0


def goal(metres: float, bearing: float, heading: float = 0.0) -> dict[str, float]:
    lat, lon = destination(ANCHOR.lat, ANCHOR.lon, bearing, metres)
    return {"lat": lat, "lon": lon, "alt_m": 3.0, "heading_deg": heading}


def ned_of(g: dict[str, float]) -> np.ndarray:
    return ANCHOR.geo_to_airsim(g["lat"], g["lon"], ANCHOR.alt + g["alt_m"])


@pytest.fixture
def flight():
    server = FlightFake()
    yield server
    server.close()


def anchor_json() -> str:
    return json.dumps({"lat": ANCHOR.lat, "lon": ANCHOR.lon, "alt": ANCHOR.alt,
                       "yaw_offset_deg": ANCHOR.yaw_offset_deg})


def start_bridge(ros_processes, flight: FlightFake, name: str = "vehicle_bridge", **params: Any) -> subprocess.Popen:
    """JSON-valued parameters go through a params file: `-p` parses its value as YAML first. The
    e-stop state file is the test's own unless given; the airsim link's own settings go in link_params."""
    link = {"port": flight.port, "client": "cosysairsim", "anchor": json.loads(anchor_json()),
            **{k: params.pop(k) for k in LINK_KEYS if k in params}}
    values = {"link": "airsim", "link_params": json.dumps(link), "state_rate_hz": 20.0,
              "estop_state_file": str(ros_processes.logs / "estop.json"), **params}
    params_file = ros_processes.logs / f"{name}.yaml"
    params_file.write_text(json.dumps({"vehicle_bridge": {"ros__parameters": values}}))  # JSON is YAML
    return ros_processes.node(BRIDGE, "--params-file", str(params_file), name=name)


def drive(ros_processes, plan: dict[str, Any], timeout_s: float = 180.0, name: str = "driver") -> dict[str, Any]:
    logs: Path = ros_processes.logs
    plan_file, out_file = logs / f"{name}_plan.json", logs / f"{name}_out.json"
    plan_file.write_text(json.dumps(plan))
    process = ros_processes._start(name, ros.python_module_command("tests.ros.vehicle_driver", str(plan_file),
                                                                    str(out_file)))
    return ros_processes.finish((process, out_file), timeout_s)


def first_after(flight: FlightFake, method: str, t: float) -> float:
    calls = flight.timed(method, after=t)
    assert calls, f"no {method} after t={t:.3f}: {[(round(c[0] - t, 3), c[1]) for c in flight.timed(after=t)]}"
    return calls[0][0]


def test_fly_goals_holds_fence_and_estop(ros_processes, flight, tmp_path):
    safety = tmp_path / "safety.yaml"
    safety.write_text(json.dumps({"safety": {
        "geofence": {"circle": {"center": [ANCHOR.lat, ANCHOR.lon], "radius_m": 200.0}},
        "decision_timeout_s": 0.5, "heartbeat_timeout_s": 0.5, "max_speed_m_s": 3.0, "max_altitude_m": 30.0}}))
    start_bridge(ros_processes, flight, motion="fly", safety_config=str(safety))
    g1, g2, outside = goal(50.0, 45.0, 90.0), goal(80.0, 200.0, 180.0), goal(400.0, 10.0)
    steps = [
        {"op": "heartbeat", "on": True, "rate_hz": 20},
        {"op": "wait_safety", "code": "no_decision", "moving": False},                        # 1
        {"op": "commands", "goal": g1, "period_s": 0.1, "for_s": 1.0},                        # 2 decisions stop
        {"op": "wait_safety", "code": "no_decision", "moving": False},                        # 3
        {"op": "commands", "goal": g2, "period_s": 0.1, "for_s": 0.6},                        # 4
        {"op": "heartbeat", "on": False},                                                     # 5 heartbeat stops
        {"op": "commands", "goal": g2, "period_s": 0.1, "for_s": 1.5},                        # 6 decisions go on
        {"op": "wait_safety", "code": "heartbeat_lost", "moving": False},                     # 7
        {"op": "heartbeat", "on": True, "rate_hz": 20},                                       # 8
        {"op": "commands", "goal": outside, "period_s": 0.1, "for_s": 1.0},                   # 9
        {"op": "wait_safety", "code": "outside_geofence", "moving": False},                   # 10
        {"op": "commands", "goal": g1, "period_s": 0.1, "for_s": 0.5},                        # 11 moving again
        {"op": "wait_safety", "code": "ok", "moving": True},                                  # 12
        {"op": "estop", "value": True},                                                       # 13
        {"op": "wait_safety", "code": "estop", "moving": False},                              # 14
        {"op": "reset_estop"},                                                                # 15 still held
        {"op": "estop", "value": False},                                                      # 16
        {"op": "commands", "goal": g1, "period_s": 0.1, "for_s": 0.5},                        # 17
        {"op": "wait_safety", "code": "estop", "moving": False},                              # 18 latched
        {"op": "reset_estop"},                                                                # 19
        {"op": "commands", "goal": g1, "period_s": 0.1, "for_s": 0.5},                        # 20
        {"op": "wait_safety", "code": "ok", "moving": True},                                  # 21
        {"op": "wait_state"},                                                                 # 22
    ]
    report = drive(ros_processes, {"steps": steps})
    s = report["steps"]
    assert all(step.get("ok", True) for step in s), [(i, step) for i, step in enumerate(s) if not step.get("ok", 1)]

    # (1) goals flow: the fake was told to fly to g1, then g2, at the gate's speed cap
    moves = flight.params("moveToPosition")
    np.testing.assert_allclose(moves[0][:3], ned_of(g1), atol=1e-6)
    assert moves[0][3] == pytest.approx(3.0)
    assert any(np.allclose(m[:3], ned_of(g2), atol=1e-6) for m in moves)
    assert {"enableApiControl", "armDisarm", "rotateToYaw"} <= set(flight.methods())

    # (2) decisions stop -> hover within 1 s of the last command; ~/safety says why
    last_command = s[2]["t"]
    held = first_after(flight, "hover", last_command)
    assert 0.4 < held - last_command < HOLD_WITHIN_S, held - last_command
    assert "no decision for" in s[3]["safety"]["reason"]

    # (3) heartbeat stops (decisions still coming) -> hover within 1 s of the last beat
    last_beat = s[5]["t"]
    held = first_after(flight, "hover", last_beat)
    assert held - last_beat < HOLD_WITHIN_S, held - last_beat
    assert "no supervisor heartbeat for" in s[7]["safety"]["reason"]

    # (4) a goal outside the fence is refused: never sent, and the code names the geofence
    assert not any(np.allclose(m[:3], ned_of(outside), atol=1e-3) for m in moves)
    assert "outside the circle geofence" in s[10]["safety"]["reason"]

    # (5) the e-stop holds at once and latches: reset refused while asserted, then accepted
    assert first_after(flight, "hover", s[13]["sent_t"]) - s[13]["sent_t"] < HOLD_WITHIN_S
    assert s[14]["safety"]["estop"] is True
    assert s[15]["success"] is False and "still asserted by /estop" in s[15]["message"]
    assert s[18]["safety"]["code"] == "estop"  # commands after the release did not move it
    assert s[19]["success"] is True
    assert flight.timed("moveToPosition", after=s[19]["t"]), "motion resumes after the reset"
    assert flight.timed("moveToPosition", after=s[13]["sent_t"])[0][0] > s[19]["t"] - 0.1  # none while latched

    # the state follows the fake: fix at g1 (where the fake now is)
    fix = s[22]["fix"]
    assert fix["lat"] == pytest.approx(g1["lat"], abs=1e-7) and fix["lon"] == pytest.approx(g1["lon"], abs=1e-7)
    assert fix["alt"] == pytest.approx(ANCHOR.alt + 3.0, abs=1e-6)


def test_teleport_state_conversions_and_pose(ros_processes, flight):
    flight.position, flight.orientation = vec(30.0, -20.0, -5.0), quat_yaw(math.radians(40.0))
    flight.velocity = vec(1.0, 2.0, -0.5)  # NED m/s
    start_bridge(ros_processes, flight, motion="teleport", camera="front", image_rate_hz=5.0)
    target = goal(60.0, 300.0, heading=120.0)
    report = drive(ros_processes, {"steps": [
        {"op": "wait_state"},
        {"op": "command", "goal": target},
        {"op": "wait_safety", "code": "ok", "moving": True},
        {"op": "sleep", "s": 0.3},
        {"op": "wait_state"},
    ]})
    s = report["steps"]
    assert all(step.get("ok", True) for step in s), s

    # (6) before the goal: the preset pose, through REP 103 (ENU, FLU, yaw counter-clockwise from east)
    fix, odom = s[0]["fix"], s[0]["odom"]
    lat, lon, alt = ANCHOR.airsim_to_geo(30.0, -20.0, -5.0)
    assert (fix["lat"], fix["lon"], fix["alt"]) == pytest.approx((lat, lon, alt), abs=1e-9)
    assert alt == pytest.approx(15.0)
    np.testing.assert_allclose(odom["position"], ANCHOR.airsim_to_enu([30.0, -20.0, -5.0]), atol=1e-9)
    heading = 40.0 + ANCHOR.yaw_offset_deg  # compass: AirSim yaw in a map turned by the offset
    enu_yaw = yaw_from_quat(type(quat_from_yaw(0.0))(*odom["orientation"]))
    assert enu_yaw == pytest.approx(compass_to_enu_yaw(heading), abs=1e-9)
    assert enu_yaw == pytest.approx(math.radians(90.0 - 65.0), abs=1e-9)
    # twist in the body frame (FLU): rotate the world ENU velocity by -yaw
    v_enu = ANCHOR.airsim_to_enu([1.0, 2.0, -0.5])
    c, sn = math.cos(enu_yaw), math.sin(enu_yaw)
    np.testing.assert_allclose(odom["twist"], [c * v_enu[0] + sn * v_enu[1], -sn * v_enu[0] + c * v_enu[1], 0.5],
                               atol=1e-9)
    assert (odom["frame_id"], odom["child"], fix["frame_id"]) == ("map", "base_link", "base_link")

    # (1) the goal is a teleport (no hover, no flight controller) and the state follows it
    pose = flight.params("simSetVehiclePose")[0][0]
    xyz = [pose["position"][k] for k in ("x_val", "y_val", "z_val")]
    np.testing.assert_allclose(xyz, ned_of(target), atol=1e-6)
    assert {"hover", "moveToPosition", "enableApiControl"}.isdisjoint(flight.methods())
    fix, odom = s[4]["fix"], s[4]["odom"]
    assert (fix["lat"], fix["lon"]) == pytest.approx((target["lat"], target["lon"]), abs=1e-9)
    enu_yaw = yaw_from_quat(type(quat_from_yaw(0.0))(*odom["orientation"]))
    assert enu_yaw == pytest.approx(compass_to_enu_yaw(120.0), abs=1e-9)
    assert "simGetImages" in flight.methods()  # the camera timer grabs through the same link


ESTOP_TRIALS = 12


def test_estop_while_flying_no_motion_after_the_hover(ros_processes, flight, tmp_path):
    """E-stops at random instants while a goal flies (each move runs 0.4 s in the fake, requests
    wait 0-10 ms), goals keep coming while latched: from the bridge's hold to the reset the
    vehicle takes no motion call after its last hover, and none after ~/safety said "estop"."""
    flight.task_s, flight.latency_s = 0.4, 0.010
    safety = tmp_path / "safety.yaml"
    safety.write_text(json.dumps({"safety": {
        "geofence": {"circle": {"center": [ANCHOR.lat, ANCHOR.lon], "radius_m": 200.0}},
        "decision_timeout_s": 1.0, "heartbeat_timeout_s": 1.0, "max_speed_m_s": 3.0}}))
    start_bridge(ros_processes, flight, motion="fly", safety_config=str(safety))
    rng = random.Random(5)
    steps: list[dict[str, Any]] = [{"op": "heartbeat", "on": True, "rate_hz": 20}]
    for _ in range(ESTOP_TRIALS):
        g = goal(rng.uniform(20.0, 90.0), rng.uniform(0.0, 360.0), rng.uniform(0.0, 360.0))
        steps += [
            {"op": "commands", "goal": g, "period_s": 0.05, "for_s": rng.uniform(0.0, 0.3)},
            {"op": "estop", "value": True},
            {"op": "wait_safety", "code": "estop", "moving": False, "new": True},
            {"op": "commands", "goal": goal(30.0, 90.0), "period_s": 0.05, "for_s": 0.3},  # while latched
            {"op": "estop", "value": False},
            {"op": "reset_estop"},
        ]
    report = drive(ros_processes, {"steps": steps})
    s = report["steps"]
    assert all(step.get("ok", True) for step in s), [(i, step) for i, step in enumerate(s) if not step.get("ok", 1)]
    after_hover = after_report = 0
    for trial in range(ESTOP_TRIALS):
        tripped, seen, reset = s[2 + 6 * trial], s[3 + 6 * trial], s[6 + 6 * trial]
        assert reset["success"], reset
        window = [(t, name) for t, name, _ in flight.timed(after=tripped["sent_t"])
                  if t < reset["t"] and (name in MOTION or name == "hover")]
        last_hover = max(i for i, (_, name) in enumerate(window) if name == "hover")
        after_hover += len(window[last_hover + 1:])
        after_report += sum(1 for t, name in window if name in MOTION and t > seen["safety"]["t"])
    moves = len(flight.params("moveToPosition"))
    print(f"\n{ESTOP_TRIALS} e-stops while flying ({moves} moves in all): motion calls after the last hover "
          f"{after_hover}, after ~/safety said estop {after_report}")
    assert (after_hover, after_report) == (0, 0)
    assert moves >= ESTOP_TRIALS // 2  # the goals did fly between the e-stops


def test_a_latched_estop_survives_sigkill_and_restart(ros_processes, flight, tmp_path):
    """Trip, release the button, SIGKILL the bridge, start it again: it hovers, and no goal moves
    the vehicle (however often sent) until ~/reset_estop; then the next goal flies."""
    safety = tmp_path / "safety.yaml"
    safety.write_text(json.dumps({"safety": {
        "geofence": {"circle": {"center": [ANCHOR.lat, ANCHOR.lon], "radius_m": 200.0}},
        "decision_timeout_s": 1.0, "heartbeat_timeout_s": 1.0}}))
    first = start_bridge(ros_processes, flight, motion="fly", safety_config=str(safety))
    g1, g2 = goal(40.0, 30.0, 90.0), goal(60.0, 250.0, 180.0)
    report = drive(ros_processes, {"steps": [
        {"op": "heartbeat", "on": True, "rate_hz": 20},
        {"op": "commands", "goal": g1, "period_s": 0.1, "for_s": 0.5},
        {"op": "wait_safety", "code": "ok", "moving": True},
        {"op": "estop", "value": True},
        {"op": "wait_safety", "code": "estop", "moving": False},
        {"op": "estop", "value": False},  # released: only the state file keeps the latch now
        {"op": "sleep", "s": 0.3},
    ]}, name="driver1")
    assert all(step.get("ok", True) for step in report["steps"]), report["steps"]
    assert (ros_processes.logs / "estop.json").is_file()
    os.kill(first.pid, signal.SIGKILL)
    first.wait(30)
    restarted = flight.timed()[-1][0]
    start_bridge(ros_processes, flight, name="vehicle_bridge2", motion="fly", safety_config=str(safety))
    report = drive(ros_processes, {"steps": [
        {"op": "heartbeat", "on": True, "rate_hz": 20},
        {"op": "commands", "goal": g2, "period_s": 0.1, "for_s": 2.0},   # 1: the supervisor repeats its goal
        {"op": "wait_safety", "code": "estop", "moving": False},           # 2
        {"op": "reset_estop"},                                             # 3
        {"op": "commands", "goal": g2, "period_s": 0.1, "for_s": 0.5},   # 4
        {"op": "wait_safety", "code": "ok", "moving": True},               # 5
    ]}, name="driver2")
    s = report["steps"]
    assert all(step.get("ok", True) for step in s), s
    assert "e-stop from /estop" in s[2]["safety"]["reason"]
    latched = [name for t, name, _ in flight.timed(after=restarted) if t < s[3]["t"]]
    assert [name for name in latched if name in MOTION or name == "armDisarm"] == [], latched
    assert "hover" in latched  # the restarted bridge made sure the vehicle holds
    assert s[3]["success"] is True and not (ros_processes.logs / "estop.json").exists()
    moved = flight.timed("moveToPosition", after=s[3]["t"])
    assert moved and np.allclose(moved[0][2][:3], ned_of(g2), atol=1e-6)


def wait_until(condition, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not condition():
        time.sleep(0.05)
    return condition()


def test_a_restarted_bridge_hears_an_estop_still_held_on_the_topic(ros_processes, flight):
    """/estop is transient-local: a bridge that starts while the button is still down (its state
    file lost, say) gets the held `true` at once and latches."""
    state = ros_processes.logs / "estop.json"
    first = start_bridge(ros_processes, flight)
    plan = ros_processes.logs / "hold_plan.json"
    plan.write_text(json.dumps({"steps": [{"op": "estop", "value": True}, {"op": "sleep", "s": 120.0}]}))
    ros_processes._start("holder", ros.python_module_command("tests.ros.vehicle_driver", str(plan),
                                                             str(ros_processes.logs / "holder_out.json")))
    assert wait_until(state.is_file), ros_processes.log_text()
    os.kill(first.pid, signal.SIGKILL)
    first.wait(30)
    state.unlink()
    start_bridge(ros_processes, flight, name="vehicle_bridge2")
    assert wait_until(state.is_file), ros_processes.log_text()  # latched again, from the topic alone
    assert json.loads(state.read_text())["reason"] == "e-stop from /estop: e-stop topic true"
