"""Text crossing ROS: a record holding a lone surrogate is published as valid UTF-8 (rclpy
encodes every string field as UTF-8 and raises on one), and a record whose JSON escapes one
(Python's json writes them so, pydantic refuses them), in a typed message's free-form JSON
field or a bag from before the typed interfaces, is read with U+FFFD instead of being dropped.
tests/ros/test_typed.py puts every record through CDR."""
from __future__ import annotations

import json

from cityseeker_interfaces.msg import Outcome
from cityseeker_ros.core.loop.state_machine import SupervisorStatus
from cityseeker_ros.ros import convert, typed
from cityseeker_ros.ros.schema import OutcomeMsg, parse

RECORD = {"episode_id": "e1", "seed": 0, "decisions": [{"raw": ["go \ud800 left \udfff"]}], "note": "ok 😀"}


def test_a_record_with_lone_surrogates_is_sent_as_valid_utf8():
    msg = typed.to_ros(OutcomeMsg(index=0, total=1, record=RECORD))
    msg.record_json.encode("utf-8")  # what rclpy does with every string field: raised before
    outcome = typed.from_ros(msg)
    assert outcome.record["decisions"][0]["raw"] == ["go \ufffd left \ufffd"]
    assert outcome.record["note"] == "ok 😀"


def test_status_text_with_lone_surrogates_is_sendable():
    status = SupervisorStatus(state="holding", reason="no decision \ud800", episode_id="é\udfff")
    msg = typed.to_ros(status)
    for text in (msg.reason, msg.episode_id):
        text.encode("utf-8")
    back = typed.from_ros(msg)
    assert back.reason == "no decision \ufffd" and back.episode_id == "é\ufffd"


def test_escaped_lone_surrogates_from_another_publisher_are_read_not_dropped():
    text = json.dumps(RECORD)
    assert "\\ud800" in text
    outcome = typed.from_ros(Outcome(index=2, total=3, record_json=text))
    assert outcome.index == 2 and outcome.record["decisions"][0]["raw"] == ["go \ufffd left \ufffd"]


def test_legacy_json_records_with_escaped_surrogates_are_read():
    """Bags recorded before the typed interfaces carry these records as JSON in String."""
    text = json.dumps({"kind": "outcome", "version": 1, "index": 2, "total": 3, "record": RECORD})
    outcome = parse(OutcomeMsg, text)
    assert outcome.index == 2 and outcome.record["decisions"][0]["raw"] == ["go \ufffd left \ufffd"]


def test_diagnostics_with_bad_text_are_sendable():
    status = convert.diagnostic_status("decision", "error", "reply \ud800", {"last_error": "x\udfff"})
    assert status.message == "reply \ufffd" and status.values[0].value == "x\ufffd"
    for text in (status.name, status.message, status.hardware_id, status.values[0].key, status.values[0].value):
        text.encode("utf-8")
