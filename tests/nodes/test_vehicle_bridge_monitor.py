"""The flight-rules monitor in the vehicle-bridge node (parameter `monitor`), on the walker link with a
safety file, in one child process per case (tests/nodes/monitor_probe.py builds the node and drives it
without spinning it): a clean goal leaves no violation; a goal sent to the link behind the bridge's
back is one error line `flight rule violated: inside_fence: ...`, a DiagnosticArray on
~/flight_rule_violations, the `flight_rules` status on /diagnostics, an e-stop trip, and the report
written when the node stops. With `monitor` false nothing of it runs."""
from __future__ import annotations

from tests.nodes.test_vehicle_bridge_node import run_probe

START = (43.7384, 7.4246)  # monitor_probe.START (not imported: the pytest process never imports rclpy)

SAFETY = f"""geofence:
  circle: {{center: [{START[0]}, {START[1]}], radius_m: 100}}
max_altitude_m: 30
decision_timeout_s: 30
heartbeat_timeout_s: null
"""


def probe(ros_env: dict[str, str], tmp_path, monitor: bool) -> tuple[dict, dict[str, list[str]]]:
    out, safety = tmp_path / "probe.json", tmp_path / "safety.yaml"
    safety.write_text(SAFETY)
    return run_probe("tests.nodes.monitor_probe", ros_env, out, str(tmp_path / "bridge.estop.json"), str(safety),
                     "true" if monitor else "false")


def flight_rules(diagnostics: list[dict]) -> list[dict]:
    return [s for s in diagnostics if s["name"].endswith(": flight_rules")]


def test_a_violation_trips_the_estop_and_shows_in_the_log_diagnostics_topic_and_report(ros_env, tmp_path):
    report, phases = probe(ros_env, tmp_path, monitor=True)
    assert report["link"] == "MonitoredLink"
    clean = report["clean"]
    assert not clean["estop"] and clean["violations"] == []
    [ok] = flight_rules(clean["diagnostics"])
    assert ok["level"] == 0 and ok["values"]["violations"] == "0", ok

    assert report["tripped"], report
    assert report["estop_reason"].startswith("e-stop from monitor: inside_fence: "), report
    lines = [line for lines in phases.values() for line in lines if "flight rule violated: " in line]
    inside = [line for line in lines if "flight rule violated: inside_fence: " in line]
    assert len(inside) == 1 and "[ERROR]" in inside[0] and "outside the circle" in inside[0], lines
    assert all(line in phases["VIOLATION"] for line in lines), phases  # none before the driver's call
    published = report["after"]["violations"]
    assert "inside_fence" in {v["values"]["rule"] for v in published}, published
    assert all(v["level"] == 2 for v in published)
    [status] = flight_rules(report["after"]["diagnostics"])
    assert status["level"] == 2 and int(status["values"]["violations"]) == len(lines), status
    assert status["values"]["violations.inside_fence"] == "1", status
    assert status["values"]["last_rule"] in {"inside_fence", "no_motion_after_hold"}, status

    # each MotionCommand is a decision, a HOLD also a session's end; the operator's and the link's markers
    assert report["take_control"] is True  # it ended the pilot's takeover the probe reported
    assert report["markers"] == {"decision goal": 1, "decision hold": 1, "marker session_end": 1,
                                 "marker operator_take_control": 1, "marker estop_trip": 2,
                                 "marker link_lost": 1, "marker link_back": 1}, report["markers"]

    written = report["monitor_report"]
    assert report["report_file"] == str(tmp_path / "bridge.flight_rules.json")
    assert written is not None and written["verdict"] == "violations" and written["link"] == "walker"
    assert "inside_fence" in {v["rule"] for v in written["violations"]}
    assert written["messages"]["stack go_to"] >= 2 and written["messages"]["vehicle state"] > 0


def test_with_monitor_false_nothing_watches(ros_env, tmp_path):
    report, phases = probe(ros_env, tmp_path, monitor=False)
    assert report["link"] == "WalkerLink" and report["monitor_report"] is None
    assert not report["tripped"]
    assert flight_rules(report["clean"]["diagnostics"]) == [] and report["after"]["violations"] == []
    vehicle = [s for s in report["clean"]["diagnostics"] if s["name"].endswith(": vehicle")]
    assert vehicle and "off" in vehicle[0]["values"]["flight_rules"]
