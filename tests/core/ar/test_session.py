"""A trial's state: counted drops, the accuracy threshold, what a Seek waits for, one goal at a time."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.ar.protocol import Fix, Need, encode_frame
from cityseeker_ros.core.ar.session import ArSession
from cityseeker_ros.core.infra.errors import ConfigError
from tests.core.ar.test_protocol import jpeg


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def ready(session: ArSession) -> None:
    session.stack_ready = True
    assert session.frame(encode_frame(jpeg(64, 48), 1.0)) is not None
    assert session.text('{"type":"fix","lat":43.7,"lon":7.4,"accuracy_m":5,"heading_deg":90}') is not None


def test_it_waits_for_the_server_camera_fix_and_heading_in_that_order():
    session = ArSession(clock=Clock())
    assert [k for k, _ in session.waiting()] == ["server", "camera", "fix", "heading"]
    ready(session)
    assert session.waiting() == []


def test_a_coarse_fix_is_counted_kept_from_ros_and_said():
    session = ArSession(min_accuracy_m=20, clock=Clock())
    session.stack_ready = True
    session.frame(encode_frame(jpeg(64, 48), 1.0))
    assert session.text('{"type":"fix","lat":43.7,"lon":7.4,"accuracy_m":80,"heading_deg":10}') is None
    assert session.last_coarse and session.counts["fix.coarse"] == 1
    assert session.waiting() == [("fix", "waiting for a better fix: ±80 m, needs ±20 m or better")]
    refusal = session.need(Need("I am thirsty"))
    assert refusal is not None and refusal.code == "waiting" and "better fix" in refusal.reason
    assert session.counts["goal.sent"] == 0


def test_a_stale_input_is_waited_for_again():
    clock = Clock()
    session = ArSession(clock=clock)
    ready(session)
    clock.t += 3.5
    assert [k for k, _ in session.waiting()] == ["camera"]
    clock.t += 2.0
    assert [k for k, _ in session.waiting()] == ["camera", "fix"]


def test_the_heading_goes_with_the_next_fix():
    session = ArSession(clock=Clock())
    session.text('{"type":"heading","heading_deg":45}')
    fix = session.text('{"type":"fix","lat":43.7,"lon":7.4,"accuracy_m":5}')
    assert fix == Fix(43.7, 7.4, 5.0, 45.0)


def test_one_goal_at_a_time_and_the_servers_own_checks_first():
    session = ArSession(clock=Clock(), run_max_steps=35)
    ready(session)
    assert session.need(Need("   ")).code == "bad_need"
    assert session.need(Need("I am thirsty", 5000)).code == "bad_budget"
    assert session.need(Need("I am thirsty", 4)) is None and session.goal_active
    assert session.need(Need("I am hungry")).code == "busy"
    session.ended()
    assert session.need(Need("I am hungry")) is None
    assert session.counts["goal.sent"] == 2


def test_drops_are_counted_by_reason():
    session = ArSession(clock=Clock())
    for text in ("{", "[]", '{"type":"x"}', '{"type":"fix","lat":100,"lon":0,"accuracy_m":1}'):
        assert session.text(text) is None
    assert session.frame(b"\x00" * 100) is None
    assert session.counts["dropped"] == 5
    assert session.counts["message.dropped.not_json"] == 1 and session.counts["fix.dropped.bad_lat"] == 1
    assert session.counts["frame.dropped.not_jpeg"] == 1


@pytest.mark.parametrize("bad", [0, -1, 5000, True, "20"])
def test_a_bad_threshold_names_the_parameter(bad):
    with pytest.raises(ConfigError, match="min_accuracy_m"):
        ArSession(min_accuracy_m=bad)
