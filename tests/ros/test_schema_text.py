"""Text crossing ROS: a record holding a lone surrogate is published as valid UTF-8 (rclpy
encodes a String's data as UTF-8 and raises on it), and a received record whose JSON escapes one (Python's json writes
them so, pydantic refuses them) is read with U+FFFD instead of being dropped as malformed."""
from __future__ import annotations

import json

from cityseeker_ros.ros import convert
from cityseeker_ros.ros.schema import OutcomeMsg, SupervisorStatusMsg, parse

RECORD = {"episode_id": "e1", "seed": 0, "decisions": [{"raw": ["go \ud800 left \udfff"]}], "note": "ok 😀"}


def test_a_record_with_lone_surrogates_is_sent_as_valid_utf8():
    msg = convert.to_string(OutcomeMsg(index=0, total=1, record=RECORD))  # raised before
    wire = msg.data.encode("utf-8")  # what rclpy does with a String's data (PyUnicode_AsUTF8String)
    outcome = parse(OutcomeMsg, wire.decode("utf-8"))
    assert outcome.record["decisions"][0]["raw"] == ["go \ufffd left \ufffd"]
    assert outcome.record["note"] == "ok 😀"


def test_clean_records_serialise_exactly_as_before():
    status = SupervisorStatusMsg(state="running", reason="3 m to the next corner", episode_id="é")
    assert status.to_json() == status.model_dump_json()


def test_escaped_lone_surrogates_from_another_publisher_are_read_not_dropped():
    text = json.dumps({"kind": "outcome", "version": 1, "index": 2, "total": 3, "record": RECORD})
    assert "\\ud800" in text
    outcome = parse(OutcomeMsg, text)
    assert outcome.index == 2 and outcome.record["decisions"][0]["raw"] == ["go \ufffd left \ufffd"]


def test_diagnostics_with_bad_text_are_sendable():
    status = convert.diagnostic_status("vlm_decision", "error", "reply \ud800", {"last_error": "x\udfff"})
    assert status.message == "reply \ufffd" and status.values[0].value == "x\ufffd"
    for text in (status.name, status.message, status.hardware_id, status.values[0].key, status.values[0].value):
        text.encode("utf-8")
