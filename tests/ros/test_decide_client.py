"""ros/decide_client.DecideClient against a plain rclpy Decide ActionServer over real DDS (two
processes on loopback): acceptance, result, rejection and cancel at random instants behave as
with rclpy's ActionClient, and the client takes no subscription, so the server's status
messages (three a goal) wake nothing in the supervisor."""
from __future__ import annotations

TRIALS = 20
TICK_S = 0.005
TICKS = 40  # a cancel trial's goal runs at least 200 ms; cancels come 0 to 400 ms after acceptance


def test_decide_client_goals_results_rejection_and_cancel(ros_processes):
    ros_processes.node("tests.interfaces.decide_peers", "-p", "role:=server", "-p", f"tick_s:={TICK_S}",
                       name="server")
    out = ros_processes.logs / "driver_out.json"
    driver = ros_processes.node("tests.ros.decide_client_driver", "-p", f"out:={out}", "-p", f"trials:={TRIALS}",
                                "-p", f"ticks:={TICKS}", "-p", f"tick_s:={TICK_S}", "-p", "seed:=11", name="driver")
    report = ros_processes.finish((driver, out), timeout_s=240)

    assert report["ready"]
    assert report["plain"] == {"accepted": True, "status": "succeeded", "ok": True, "error": "",
                               "view_set_id": "vs-plain", "index": 2, "rationale": "context: n1 -> n42",
                               "same_handle_future": True}
    assert report["rejected"] == {"accepted": False}

    failures = [t for t in report["trials"] if not (
        (t["status"] == "canceled" and t["cancel_accepted"] and not t["ok"] and t["error"] == "cancelled")
        or (t["status"] == "succeeded" and not t["cancel_accepted"] and t["ok"] and t["index"] == 2))]
    assert not failures, failures

    assert report["subscriptions"] == []
    assert report["status_writers"] == 1 and report["status_readers"] == 0
