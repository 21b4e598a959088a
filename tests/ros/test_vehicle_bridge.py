"""nodes/vehicle_bridge.py with the walker link (and the refusals every link shares), as real
processes over DDS on loopback; tests/ros/vehicle_driver.py stands in for the supervisor. The AirSim
link: tests/ros/test_vehicle_bridge_airsim.py; runs: test_vehicle_run_airsim.py, test_seek_action.py.

Shown here: the simulated walker runs behind the gate (a latched e-stop refuses its motion until
~/reset_estop); a restarted bridge does not replay the goal still latched on a transient-local
command publisher (nothing moves until a new goal); a flying link without a safety file, or a bad
walker start, stops the node at start with one line; `cityseeker run camera --walker sim` (the
walker behind the bridge) scores like the in-process benchmark.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from cityseeker_ros.core.streets.geodesy import destination, geodesic_m
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros.runner import CONFIG_ERROR_EXIT
from tests.ros.test_live import COMPARED
from tests.ros.test_runner import REPO, in_process, logs, records

BRIDGE = "cityseeker_ros.nodes.vehicle_bridge"
START = (43.7384, 7.4246)


def goal(metres: float, bearing: float) -> dict[str, float]:
    lat, lon = destination(*START, bearing, metres)
    return {"lat": lat, "lon": lon}


def start_walker(ros_processes, name: str = "vehicle_bridge", **params: Any) -> subprocess.Popen:
    values = {"link": "walker", "link_params": json.dumps({"start": f"{START[0]},{START[1]}"}),
              "state_rate_hz": 20.0, "estop_state_file": str(ros_processes.logs / "estop.json"), **params}
    params_file = ros_processes.logs / f"{name}.yaml"
    params_file.write_text(json.dumps({"vehicle_bridge": {"ros__parameters": values}}))
    return ros_processes.node(BRIDGE, "--params-file", str(params_file), name=name)


def start_driver(ros_processes, steps: list[dict[str, Any]], name: str):
    plan, out = ros_processes.logs / f"{name}_plan.json", ros_processes.logs / f"{name}_out.json"
    plan.write_text(json.dumps({"steps": steps}))
    return ros_processes._start(name, ros.python_module_command("tests.ros.vehicle_driver", str(plan), str(out))), out


def at(fix: dict[str, Any], where: dict[str, float] | tuple[float, float]) -> float:
    lat, lon = (where["lat"], where["lon"]) if isinstance(where, dict) else where
    return geodesic_m(fix["lat"], fix["lon"], lat, lon)


def test_the_walker_refuses_motion_under_a_latched_estop(ros_processes):
    start_walker(ros_processes)
    g1, g2 = goal(40.0, 90.0), goal(60.0, 200.0)
    driver, out = start_driver(ros_processes, [
        {"op": "wait_state"},                                                   # 0
        {"op": "estop", "value": True},                                         # 1
        {"op": "wait_safety", "code": "estop", "moving": False},                # 2
        {"op": "estop", "value": False},                                        # 3
        {"op": "commands", "goal": g1, "period_s": 0.1, "for_s": 1.0},          # 4 latched: refused
        {"op": "wait_state"},                                                   # 5
        {"op": "reset_estop"},                                                  # 6
        {"op": "commands", "goal": g2, "period_s": 0.1, "for_s": 0.5},          # 7
        {"op": "wait_safety", "code": "ok", "moving": True},                    # 8
        {"op": "sleep", "s": 0.5},
        {"op": "wait_state"},                                                   # 10
    ], "driver")
    s = ros_processes.finish((driver, out), 120)["steps"]
    assert all(step.get("ok", True) for step in s), s
    assert at(s[0]["fix"], START) < 0.01
    assert s[2]["safety"]["estop"] and at(s[5]["fix"], START) < 0.01, s[5]  # no step while latched
    assert s[6]["success"] is True
    assert at(s[10]["fix"], g2) < 0.01  # after the reset, a new goal walks


def test_a_restarted_bridge_does_not_replay_the_latched_goal(ros_processes):
    """The old walker node subscribed to commands transient-local: restarted, it walked to the last
    goal still latched by the supervisor's publisher. The bridge subscribes volatile and holds first,
    so after a SIGKILL and restart nothing moves until a new goal arrives."""
    first = start_walker(ros_processes)
    g1, g2 = goal(50.0, 45.0), goal(30.0, 300.0)
    holder, holder_out = start_driver(ros_processes, [
        {"op": "command", "goal": g1},   # 0: latched on the driver's transient-local publisher
        {"op": "sleep", "s": 1.0},
        {"op": "wait_state"},            # 2: the walker got there
        {"op": "sleep", "s": 25.0},      # 3: keeps the goal latched while the bridge restarts
    ], "holder")
    deadline = time.monotonic() + 60
    log = ros_processes.logs / "vehicle_bridge.log"
    while time.monotonic() < deadline and "connected" not in log.read_text():
        time.sleep(0.1)
    time.sleep(6.0)  # the holder found the bridge, sent g1, and the walker walked
    os.kill(first.pid, signal.SIGKILL)
    first.wait(30)
    killed = time.monotonic()
    start_walker(ros_processes, name="vehicle_bridge2")
    driver, out = start_driver(ros_processes, [
        {"op": "wait_state"},                                              # 0
        {"op": "sleep", "s": 2.0},
        {"op": "wait_state"},                                              # 2: still where it restarted
        {"op": "commands", "goal": g2, "period_s": 0.1, "for_s": 0.5},     # 3: a new goal
        {"op": "sleep", "s": 0.5},
        {"op": "wait_state"},                                              # 5
    ], "driver")
    s = ros_processes.finish((driver, out), 120)["steps"]
    assert all(step.get("ok", True) for step in s), s
    moved_after_restart = [step["fix"] for step in (s[0], s[2]) if at(step["fix"], START) > 0.01]
    assert moved_after_restart == [], moved_after_restart
    assert at(s[5]["fix"], g2) < 0.01
    holder.wait(60)
    h = json.loads(holder_out.read_text())["steps"]
    assert at(h[2]["fix"], g1) < 0.01 and h[2]["t"] < killed  # the first bridge did walk to g1


@pytest.mark.parametrize("params, named", [
    ({"link": "mavlink", "link_params": json.dumps({"connection": "udp://127.0.0.1:14599"})},
     "parameter safety_config is required for the mavlink link (it flies)"),
    ({"link": "airsim", "link_params": json.dumps({"anchor": {"lat": 43.7, "lon": 7.4}, "motion": "fly"})},
     "parameter safety_config is required for the airsim link (it flies)"),
    ({"link": "walker", "link_params": json.dumps({"start": "north"})}, "link_params start: expected \"lat,lon\""),
    ({"link": "walker", "link_params": json.dumps({"start_node": "nowhere"})}, "parameter data is required"),
    ({"link": "drone"}, "unknown vehicle link 'drone'; known: airsim, mavlink, walker"),
], ids=["mavlink-unfenced", "airsim-fly-unfenced", "walker-bad-start", "walker-no-world", "unknown-link"])
def test_a_bridge_that_cannot_run_safely_refuses_to_start_naming_why(ros_processes, params, named):
    params_file = ros_processes.logs / "bad.yaml"
    params_file.write_text(json.dumps({"vehicle_bridge": {"ros__parameters": {
        "estop_state_file": str(ros_processes.logs / "estop.json"), **params}}}))
    process = ros_processes.node(BRIDGE, "--params-file", str(params_file))
    assert process.wait(timeout=60) == CONFIG_ERROR_EXIT
    log = (ros_processes.logs / "vehicle_bridge.log").read_text()
    assert named in log, log


def test_run_camera_with_the_simulated_walker_scores_like_the_benchmark(monaco_dir, ros_domain, tmp_path):
    flags = ("--data", str(monaco_dir), "--policy", "random", "--limit", "2", "--max-steps", "5")
    in_process(tmp_path / "cli", *flags)
    out = tmp_path / "ros"
    result = subprocess.run([sys.executable, "-m", "cityseeker_ros.cli", "run", "camera", *flags, "--source", "replay",
                             "--source-param", "views=rendered", "--source-param",
                             'view_params={"width": 32, "height": 24}', "--walker", "sim", "--out", str(out),
                             "--domain-id", str(ros_domain), "--timeout", "200"],
                            cwd=REPO, capture_output=True, text=True, timeout=260)
    assert result.returncode == 0, result.stdout + result.stderr + logs(out)
    got, expected = records(out), records(tmp_path / "cli")
    assert [{k: r[k] for k in COMPARED} for r in got] == [{k: r[k] for k in COMPARED} for r in expected]
    assert "walker link, e-stop only" in (out / "ros" / "vehicle_bridge.log").read_text()
