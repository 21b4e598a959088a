"""A command's envelope (core.vehicles.safety.envelope): a velocity in any frame but ENU, or a
command stamped long ago (1970: an unset header) or ahead of the clock, is refused with a code and
one line; a hold never is; the max-age parameter is bounded."""
from __future__ import annotations

import math

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.safety import SafetyCode
from cityseeker_ros.core.vehicles.safety.envelope import (
    DEFAULT_MAX_AGE_S,
    MAX_AGE_BOUNDS_S,
    check_envelope,
    check_max_age,
)

NOW = 1_764_640_000.0  # 2025-12-02, a wall clock's seconds


@pytest.mark.parametrize("frame", ["enu", "ENU", "", None])
def test_a_velocity_in_enu_or_no_frame_passes(frame):
    check = check_envelope("velocity", frame, NOW - 0.01, NOW, DEFAULT_MAX_AGE_S)
    assert (check.ok, check.code) == (True, SafetyCode.OK)


@pytest.mark.parametrize("frame", ["ned", "base_link", "map", "odom", "NED "])
def test_a_velocity_in_another_frame_is_refused_naming_the_frame(frame):
    check = check_envelope("velocity", frame, NOW, NOW, DEFAULT_MAX_AGE_S)
    assert (check.ok, check.code) == (False, SafetyCode.BAD_FRAME)
    assert repr(frame.strip()) in check.reason and "ENU" in check.reason


def test_a_goal_is_geographic_so_its_frame_id_is_not_read():
    assert check_envelope("goal", "base_link", NOW, NOW, DEFAULT_MAX_AGE_S).ok


@pytest.mark.parametrize("kind", ["goal", "velocity"])
@pytest.mark.parametrize("stamp, words", [
    (0.0, "no valid stamp"),                  # 1970: a header nobody stamped
    (86_400.0, "s ago"),                      # 1970-01-02
    (NOW - DEFAULT_MAX_AGE_S - 0.1, "2.1 s ago"),
    (NOW + 3600.0, "ahead of this clock"),    # a clock an hour fast
    (math.nan, "no valid stamp"),
    (-5.0, "no valid stamp"),
])
def test_a_command_stamped_long_ago_or_ahead_is_refused_as_stale(kind, stamp, words):
    check = check_envelope(kind, "enu", stamp, NOW, DEFAULT_MAX_AGE_S)
    assert (check.ok, check.code) == (False, SafetyCode.STALE_COMMAND)
    assert words in check.reason and kind in check.reason


@pytest.mark.parametrize("age", [0.0, 0.5, DEFAULT_MAX_AGE_S, -DEFAULT_MAX_AGE_S])
def test_a_command_within_the_max_age_either_side_passes(age):
    assert check_envelope("goal", "", NOW - age, NOW, DEFAULT_MAX_AGE_S).ok


@pytest.mark.parametrize("frame, stamp", [("ned", 0.0), ("base_link", NOW - 1e6), ("", math.nan)])
def test_a_hold_is_never_refused(frame, stamp):
    assert check_envelope("hold", frame, stamp, NOW, DEFAULT_MAX_AGE_S).ok


def test_an_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="kind must be one of"):
        check_envelope("teleport", "", NOW, NOW, DEFAULT_MAX_AGE_S)


def test_the_max_age_parameter_is_bounded_and_named():
    low, high = MAX_AGE_BOUNDS_S
    assert check_max_age(2) == 2.0 and check_max_age(low) == low and check_max_age(high) == high
    for bad in (0.0, high + 1, -1.0, math.inf, math.nan, True, "2"):
        with pytest.raises(ConfigError, match=r"parameter command_max_age_s must be a number of seconds from "
                                              r"0.05 to 10"):
            check_max_age(bad)


def test_the_kind_of_each_command():
    from cityseeker_ros.core.vehicles.safety import HOLD, Goal, Velocity
    from cityseeker_ros.core.vehicles.safety.envelope import kind_of

    assert [kind_of(c) for c in (Goal(0.0, 0.0), Velocity(1.0, 0.0), HOLD)] == ["goal", "velocity", "hold"]
