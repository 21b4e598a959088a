"""A trial's state: counted drops, the accuracy threshold, what a Seek waits for, one goal at a
time, and each page's inputs its own (a heading never passes from one page to another)."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.ar.page import HEADING_MAX_AGE_S
from cityseeker_ros.core.ar.protocol import Fix, Need, encode_frame
from cityseeker_ros.core.ar.session import ArSession
from cityseeker_ros.core.infra.errors import ConfigError
from tests.core.ar.test_protocol import jpeg

FIX = '{"type":"fix","lat":43.7,"lon":7.4,"accuracy_m":5}'


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def ready(session: ArSession, page: int, heading: bool = True) -> None:
    """The stack answers and `page` sends a frame and a good fix (with its heading unless not)."""
    session.stack_ready = True
    assert session.frame(page, encode_frame(jpeg(64, 48), 1.0)) is not None
    fix = FIX[:-1] + (',"heading_deg":90}' if heading else "}")
    assert session.text(page, fix) is not None


def test_it_waits_for_the_server_camera_fix_and_heading_in_that_order():
    session = ArSession(clock=Clock())
    page = session.open_page()
    assert [k for k, _ in session.waiting(page)] == ["server", "camera", "fix", "heading"]
    ready(session, page)
    assert session.waiting(page) == []


def test_a_coarse_fix_is_counted_kept_from_ros_and_said():
    session = ArSession(min_accuracy_m=20, clock=Clock())
    page = session.open_page()
    session.stack_ready = True
    session.frame(page, encode_frame(jpeg(64, 48), 1.0))
    assert session.text(page, '{"type":"fix","lat":43.7,"lon":7.4,"accuracy_m":80,"heading_deg":10}') is None
    assert session.last_coarse and session.counts["fix.coarse"] == 1
    assert session.waiting(page) == [("fix", "waiting for a better fix: ±80 m, needs ±20 m or better")]
    refusal = session.need(page, Need("I am thirsty"))
    assert refusal is not None and refusal.code == "waiting" and "better fix" in refusal.reason
    assert refusal.missing == ("fix",)
    assert session.counts["goal.sent"] == 0


def test_a_stale_input_is_waited_for_again():
    clock = Clock()
    session = ArSession(clock=clock)
    page = session.open_page()
    ready(session, page)
    clock.t += 3.5  # the camera (3 s) and the heading (3 s) are stale, the fix (5 s) is not
    assert [k for k, _ in session.waiting(page)] == ["camera", "heading"]
    clock.t += 2.0
    assert [k for k, _ in session.waiting(page)] == ["camera", "fix", "heading"]


def test_the_heading_goes_with_the_same_pages_next_fix_while_it_is_fresh():
    clock = Clock()
    session = ArSession(clock=clock)
    page = session.open_page()
    session.text(page, '{"type":"heading","heading_deg":45}')
    assert session.text(page, FIX) == Fix(43.7, 7.4, 5.0, 45.0)
    clock.t += HEADING_MAX_AGE_S + 0.1
    assert session.text(page, FIX) == Fix(43.7, 7.4, 5.0, None)  # expired: the fix goes without it


def test_a_page_with_no_heading_of_its_own_cannot_start_a_seek_beside_a_page_with_one():
    session = ArSession(clock=Clock())
    first, second = session.open_page(), session.open_page()
    ready(session, first)
    ready(session, second, heading=False)
    assert session.waiting(first) == []
    refusal = session.need(second, Need("I am thirsty"))
    assert refusal is not None and refusal.code == "waiting" and refusal.missing == ("heading",)
    assert refusal.reason == ("waiting for the compass heading: this page has sent none "
                              "(allow motion and orientation access)")
    assert not session.goal_active and session.counts["goal.sent"] == 0
    assert session.counts["goal.refused.waiting.heading"] == 1
    # nor does its fix borrow the other page's heading on its way to the localiser
    assert session.text(second, FIX).heading_deg is None
    assert session.text(first, FIX).heading_deg == 90.0


def test_two_pages_one_after_the_other_do_not_share_a_heading():
    clock = Clock()
    session = ArSession(clock=clock)
    before = session.open_page()
    ready(session, before)
    session.close_page(before)
    clock.t += 0.5  # at once: the closed page's heading would still be fresh
    after = session.open_page()
    ready(session, after, heading=False)
    assert [k for k, _ in session.waiting(after)] == ["heading"]
    assert session.need(after, Need("I am thirsty")).missing == ("heading",)
    session.text(after, '{"type":"heading","heading_deg":270}')  # its own: now it may
    assert session.need(after, Need("I am thirsty")) is None and session.goal_active


def test_a_stale_heading_is_refused_with_its_age_and_a_fresh_one_starts_the_seek():
    clock = Clock()
    session = ArSession(clock=clock)
    page = session.open_page()
    ready(session, page)
    session.frame(page, encode_frame(jpeg(64, 48), 2.0))
    clock.t += HEADING_MAX_AGE_S + 0.5
    session.frame(page, encode_frame(jpeg(64, 48), 3.0))
    session.text(page, FIX)  # a fix without a heading does not renew it
    refusal = session.need(page, Need("I am thirsty"))
    assert refusal.missing == ("heading",)
    assert "this page's last is 3.5 s old; a Seek needs one from the last 3 s" in refusal.reason
    session.text(page, '{"type":"heading","heading_deg":91}')
    assert session.need(page, Need("I am thirsty")) is None


def test_a_closed_or_unknown_page_is_named():
    session = ArSession(clock=Clock())
    page = session.open_page()
    session.close_page(page)
    with pytest.raises(KeyError, match=f"no open page {page}"):
        session.text(page, FIX)
    with pytest.raises(KeyError, match="no open page 99"):
        session.waiting(99)


def test_one_goal_at_a_time_and_the_servers_own_checks_first():
    session = ArSession(clock=Clock(), run_max_steps=35)
    page = session.open_page()
    ready(session, page)
    assert session.need(page, Need("   ")).code == "bad_need"
    assert session.need(page, Need("I am thirsty", 5000)).code == "bad_budget"
    assert session.need(page, Need("I am thirsty", 4)) is None and session.goal_active
    other = session.open_page()
    ready(session, other)
    assert session.need(other, Need("I am hungry")).code == "busy"  # one stack: one goal for all pages
    session.ended()
    assert session.need(page, Need("I am hungry")) is None
    assert session.counts["goal.sent"] == 2


def test_drops_are_counted_by_reason():
    session = ArSession(clock=Clock())
    page = session.open_page()
    for text in ("{", "[]", '{"type":"x"}', '{"type":"fix","lat":100,"lon":0,"accuracy_m":1}'):
        assert session.text(page, text) is None
    assert session.frame(page, b"\x00" * 100) is None
    assert session.counts["dropped"] == 5
    assert session.counts["message.dropped.not_json"] == 1 and session.counts["fix.dropped.bad_lat"] == 1
    assert session.counts["frame.dropped.not_jpeg"] == 1


@pytest.mark.parametrize("bad", [0, -1, 5000, True, "20"])
def test_a_bad_threshold_names_the_parameter(bad):
    with pytest.raises(ConfigError, match="min_accuracy_m"):
        ArSession(min_accuracy_m=bad)
