"""ar/console_bridge.py over DDS, in a child process (tests/ar/console_bridge_probe.py: the pytest
process never imports rclpy), beside stand-ins for the vehicle bridge, the supervisor, the
decision node and camera_ingest: they are faked because what is checked is the console bridge's
wiring (each command to the topic or service the CLI and docs name, each topic to its event), not
the vehicle, which the vehicle bridge's own tests cover."""
from __future__ import annotations

import pytest

from tests.nodes.test_vehicle_bridge_node import run_probe
from tests.ros.conftest import require_ros, ros_domain, ros_env  # noqa: F401  the leased domain's fixtures


def test_every_command_reaches_its_service_or_topic_once_and_every_topic_becomes_an_event(
        request: pytest.FixtureRequest, tmp_path):
    require_ros()
    report, _ = run_probe("tests.ar.console_bridge_probe", request.getfixturevalue("ros_env"), tmp_path / "probe.json")
    events = report["events"]
    by_kind: dict[str, list[dict]] = {}
    for e in events:
        by_kind.setdefault(e["kind"], []).append(e)
    assert report["estop"] == [True, False]  # estop, then reset released the source before the service call
    assert report["calls"] == ["take_control", "return_to_launch", "reset_estop"] and report["resets"] == 1
    assert report["goals"][0] == {"need": "I am thirsty", "family": "needs", "max_steps": 12}
    answers = [(e["command"], e["ok"]) for e in by_kind["CommandDone"]]
    assert answers == [("hold", False), ("estop", True), ("take_control", True), ("return_to_launch", False),
                       ("reset_estop", True), ("hold", True)], answers
    # the second hold: a goal another client started (as `cityseeker seek` does) is cancelled too
    assert report["other_goal_code"] == "cancelled" and "1 Seek goal cancelled" in by_kind["CommandDone"][-1]["message"]
    fix = by_kind["VehicleFix"][0]
    assert (fix["lat"], fix["lon"]) == (43.7372, 7.4231) and abs(fix["heading_deg"] - 90.0) < 1e-6
    assert by_kind["SafetyReport"][0] == {"kind": "SafetyReport", "moving": True, "code": "ok",
                                          "reason": "moving to the next node", "estop": False, "connected": True}
    assert by_kind["LinkReport"][0]["link"] == "walker" and by_kind["LinkReport"][0]["mode"] == "walking"
    assert by_kind["BatteryReport"][0]["fraction"] == 0.5
    assert (by_kind["Violation"][0]["rule"], by_kind["Violation"][0]["detail"]) == ("max_speed", "6.1 m/s over 5 m/s")
    assert by_kind["GoingTo"][0]["node"] == "n2"
    decision = by_kind["DecisionMade"][0]
    assert (decision["node"], decision["chosen_index"], decision["action"], decision["step"],
            decision["max_steps"]) == ("n1", 1, "move", 2, 35)
    assert decision["reason"] == "the green street has a cafe" and decision["latency_s"] == 0.75
    assert not report["decided_before_its_images"]  # it waited for its view set and images, which came after it
    sizes = [v["image_bytes"] for v in decision["views"]]
    assert sizes[0] > 0 and sizes[1] > 0 and sizes[2] == 0  # thumbnails from camera_ingest's topic; none for ""
    # this console's goal (through its action client), then another client's (from the action's topics)
    seek_events = [e["kind"] for e in events if e["kind"].startswith("Seek")]
    assert seek_events == ["SeekStarted", "SeekProgress", "SeekEnded"] * 2, seek_events
    ended, other_ended = by_kind["SeekEnded"]
    assert (ended["outcome"], ended["code"], ended["node"], ended["steps"]) == ("found", "stopped", "n2", 1)
    assert by_kind["SeekStarted"][1]["text"] == "(a goal another client sent)"
    assert (by_kind["SeekProgress"][1]["node"], by_kind["SeekProgress"][1]["reason"]) == ("n7", "a bakery")
    assert (other_ended["outcome"], other_ended["node"]) == ("cancelled", "n7")
