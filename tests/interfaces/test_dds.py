"""cityseeker_interfaces over real DDS between two processes on loopback: a ViewSet with every
kind of field round-trips unchanged, and a Decide goal gives its feedback and result, can be
rejected, and can be cancelled at any instant (random instants, many trials, 0 failures)."""
from __future__ import annotations

TRIALS = 30
TICK_S = 0.005  # between two feedbacks of a goal
TICKS = 40  # feedbacks of a cancel trial's goal: at least 200 ms to cancel in


def test_view_set_round_trip_and_decide_with_feedback_and_cancel(ros_processes):
    ros_processes.node("tests.interfaces.decide_peers", "-p", "role:=server", "-p", f"tick_s:={TICK_S}",
                       name="server")
    out = ros_processes.logs / "driver_out.json"
    client = ros_processes.node("tests.interfaces.decide_peers", "-p", "role:=client", "-p", f"out:={out}",
                                "-p", f"trials:={TRIALS}", "-p", f"ticks:={TICKS}", "-p", f"tick_s:={TICK_S}",
                                "-p", "seed:=7", name="driver")
    report = ros_processes.finish((client, out), timeout_s=240)

    echo = report["echo"]
    sent = dict(echo["sent"], header=echo["sent"]["header"][:2] + ["echo:map"])
    assert echo["received"] == [sent]  # exactly one echo, every field equal (NaN altitude included)
    assert sent["position"][2] == "nan" and sent["feedback"] == "straße ✓ 咖啡"

    plain = report["plain"]
    assert plain == {"accepted": True, "status": "succeeded", "feedback": 5, "stages": ["deciding"],
                     "view_set_id": "vs-plain", "ok": True, "error": "", "index": 2, "kind": 0,
                     "rationale": "context: n1 -> n42", "seed": 2**40 + 3, "confidence_nan": True}
    assert report["rejected"] == {"accepted": False}

    failures = []
    for trial in report["trials"]:
        fine = trial["accepted"] and trial["cancel_accepted"] in (True, False) and trial["view_set_id"] and (
            (trial["status"] == "canceled" and not trial["ok"] and trial["error"] == "cancelled"
             and trial["feedback"] <= TICKS)
            or (trial["status"] == "succeeded" and trial["ok"] and trial["feedback"] == TICKS
                and not trial["cancel_accepted"]))
        if not fine:
            failures.append(trial)
    assert not failures, failures
    assert len(report["trials"]) == TRIALS
    # A cancel sent in the first quarter of a goal's run (>= 150 ms before it can end) must win.
    early = [t for t in report["trials"] if t["delay_s"] < TICKS * TICK_S / 4]
    assert early and all(t["status"] == "canceled" for t in early)
