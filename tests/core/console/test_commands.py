"""The console's commands through the one protocol module both pages use: each well-formed one
parsed, every malformed one named, counted by reason and dropped (never raised)."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.ar.protocol import (
    Cancel,
    EStop,
    Hold,
    Malformed,
    ResetEStop,
    ReturnToLaunch,
    SeekGoal,
    TakeControl,
    parse_command,
    parse_text,
)
from cityseeker_ros.core.console.session import ConsoleSession, Refused


@pytest.mark.parametrize("body, command", [
    ({"type": "hold"}, Hold()),
    ({"type": "estop", "confirm": True}, EStop()),
    ({"type": "reset_estop"}, ResetEStop()),
    ({"type": "take_control"}, TakeControl()),
    ({"type": "return_to_launch"}, ReturnToLaunch()),
    ({"type": "cancel"}, Cancel()),
    ({"type": "seek", "text": "I am thirsty"}, SeekGoal("I am thirsty", "needs", 0)),
    ({"type": "seek", "kind": "landmark", "text": "200 m north of the casino", "max_steps": 20},
     SeekGoal("200 m north of the casino", "landmarks", 20)),
    ({"type": "seek", "kind": "question", "text": "what is the cafe called?"},
     SeekGoal("what is the cafe called?", "questions", 0)),
])
def test_each_command_parses(body, command):
    assert parse_command(json.dumps(body)) == command


@pytest.mark.parametrize("text, kind, reason", [
    ("{", "message", "not_json"),
    ("[1, 2]", "message", "not_object"),
    ('{"type": "fly"}', "message", "unknown_type"),
    ('{"type": "fix", "lat": 1, "lon": 2, "accuracy_m": 3}', "message", "unknown_type"),  # the phone's, not ours
    ('{"type": "estop"}', "estop", "unconfirmed"),
    ('{"type": "estop", "confirm": "yes"}', "estop", "unconfirmed"),
    ('{"type": "seek", "kind": "wish", "text": "x"}', "seek", "bad_kind"),
    ('{"type": "seek", "text": 5}', "seek", "bad_text"),
    ('{"type": "seek", "text": "x", "max_steps": 2.5}', "seek", "bad_max_steps"),
    ('{"type": "seek", "text": "x", "max_steps": true}', "seek", "bad_max_steps"),
    ('{"type": "hold", "pad": "' + "x" * 5000 + '"}', "message", "oversized"),
    ("[" * 2000 + "]" * 2000, "message", "not_json"),  # nesting deep enough to recurse, within the size limit
])
def test_malformed_commands_are_named(text, kind, reason):
    with pytest.raises(Malformed) as exc:
        parse_command(text)
    assert (exc.value.kind, exc.value.reason) == (kind, reason)


def test_the_phone_pages_parser_shares_the_envelope():
    """One module: the same envelope checks name the same reasons for both pages."""
    for text in ("{", "[1]", "x" * 5000):
        with pytest.raises(Malformed) as phone:
            parse_text(text)
        with pytest.raises(Malformed) as console:
            parse_command(text)
        assert (phone.value.kind, phone.value.reason) == (console.value.kind, console.value.reason)


def test_the_session_counts_every_drop_by_reason_and_passes_the_rest():
    session = ConsoleSession(run_max_steps=35)
    garbage = ["{", "null", '{"type": 3}', '{"type": "estop"}', b"\xff\xfe", '{"type": "seek", "text": []}'] * 10
    assert all(session.text(g) is None for g in garbage)
    assert session.counts["dropped"] == 60
    assert session.counts["message.dropped.not_json"] == 20  # "{" and the undecodable bytes
    assert session.counts["estop.dropped.unconfirmed"] == 10 and session.counts["seek.dropped.bad_text"] == 10
    assert session.text('{"type": "estop", "confirm": true}') == EStop()
    assert session.counts["command.estop"] == 1


def test_a_goal_the_seek_server_would_refuse_is_refused_with_its_code():
    session = ConsoleSession(run_max_steps=35)
    empty = session.text('{"type": "seek", "text": "   "}')
    long = session.text(json.dumps({"type": "seek", "text": "x" * 300}))
    budget = session.text('{"type": "seek", "text": "I am thirsty", "max_steps": 5000}')
    assert isinstance(empty, Refused) and empty.code == "bad_need"
    assert isinstance(long, Refused) and long.code == "bad_need" and "200" in long.reason
    assert isinstance(budget, Refused) and budget.code == "bad_budget"
    assert session.counts["seek.refused.bad_need"] == 2 and session.counts["command.seek"] == 0
