"""The flight-rules monitor in the node set, on a whole Seek over MAVLink (`cityseeker seek --vehicle
mavlink:...` against the shipped simulator, as tests/ros/test_seek_mavlink.py runs it): the vehicle
bridge runs it by default on the wire; a flight within the safety file's limits leaves a clean report
in OUT/ros/vehicle_bridge.flight_rules.json, every rule having judged something, and no e-stop.

The simulated autopilot is set within config/safety.yaml's limits (3 m/s, 1 m/s vertical), as a real
autopilot's parameters must be (docs/vehicles.md): its default 3 m/s climb is a speed_limits
violation, which the monitor reports and stops with the e-stop."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.vehicles.mavlink.simulator import MavlinkSimulator
from tests.ros.test_seek_mavlink import free_udp_port, home_node, logs, seek

WITHIN_LIMITS = {"max_climb_m_s": 1.0, "max_descent_m_s": 1.0, "cruise_m_s": 3.0, "max_speed_m_s": 3.0}


@pytest.mark.parametrize("flavour", ["px4"])
def test_a_seek_within_the_limits_leaves_a_clean_flight_rules_report(monaco_dir, ros_domain, tmp_path, flavour):
    _, _, node = home_node(monaco_dir)
    port = free_udp_port()
    with MavlinkSimulator(flavour, port, home=(node.lat, node.lon, 10.0), **WITHIN_LIMITS) as sim:
        process = seek(monaco_dir, port, tmp_path, ros_domain, 2)
        output, _ = process.communicate(timeout=200)
        ended = (sim.mode, sim.armed, list(sim.failsafes))
    assert process.returncode == 0, output + logs(tmp_path)
    assert ended == (sim.flavour.hold_mode, True, []), ended
    report_file = tmp_path / "run" / "ros" / "vehicle_bridge.flight_rules.json"
    report = json.loads(report_file.read_text())
    assert report["verdict"] == "clean" and report["violations"] == [], (report["violations"], logs(tmp_path))
    judged = {r["name"]: r["judged"] for r in report["rules"]}
    for rule in ("no_motion_after_hold", "pilot_wins", "inside_fence", "speed_limits", "ends_in_hold"):
        assert judged[rule] > 0, judged
    assert report["messages"]["stack SET_POSITION_TARGET_GLOBAL_INT"] > 10, report["messages"]
    assert report["messages"]["vehicle GLOBAL_POSITION_INT"] > 10, report["messages"]
    bridge_log = (tmp_path / "run" / "ros" / "vehicle_bridge.log").read_text()
    assert "flight-rules monitor on the MAVLink wire" in bridge_log
    assert "flight rule violated" not in bridge_log and "e-stop from monitor" not in bridge_log
    assert "flight-rules report (clean, 0 violations)" in bridge_log
