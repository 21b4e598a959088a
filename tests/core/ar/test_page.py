"""One page's inputs and their ages: what is fresh, what expired, and the line that says so."""
from __future__ import annotations

from cityseeker_ros.core.ar.page import FIX_MAX_AGE_S, FRAME_MAX_AGE_S, HEADING_MAX_AGE_S, PageInputs
from cityseeker_ros.core.ar.protocol import Fix


def test_a_heading_is_fresh_up_to_its_age_and_then_expires():
    inputs = PageInputs(heading_deg=120.0, heading_at=10.0)
    assert inputs.heading(10.0) == 120.0
    assert inputs.heading(10.0 + HEADING_MAX_AGE_S) == 120.0
    assert inputs.heading(10.0 + HEADING_MAX_AGE_S + 0.01) is None
    assert PageInputs().heading(10.0) is None


def test_the_expiry_is_a_few_seconds():
    assert 1.0 <= HEADING_MAX_AGE_S <= 5.0  # docs/ar.md states 3 s; beats of 1 s from the page


def test_what_is_missing_names_the_input_and_why():
    now = 50.0
    assert [k for k, _ in PageInputs().missing(now, 20.0)] == ["camera", "fix", "heading"]
    fresh = PageInputs(frame_at=now - FRAME_MAX_AGE_S, fix=Fix(1.0, 2.0, 4.0), fix_at=now - FIX_MAX_AGE_S,
                       good_fix_at=now - FIX_MAX_AGE_S, heading_deg=3.0, heading_at=now - HEADING_MAX_AGE_S)
    assert fresh.missing(now, 20.0) == []
    coarse = PageInputs(frame_at=now, fix=Fix(1.0, 2.0, 45.0), fix_at=now, heading_deg=3.0, heading_at=now - 7.0)
    assert coarse.missing(now, 20.0) == [
        ("fix", "waiting for a better fix: ±45 m, needs ±20 m or better"),
        ("heading", "waiting for the compass heading: this page's last is 7.0 s old; a Seek needs one from "
                    "the last 3 s")]
