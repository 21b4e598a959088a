"""Faults of the gate found in issue 23, each shown by a test that failed on the gate before it:
velocities skipped the geofence, an unknown altitude let a climb through the ceiling, the yaw rate
was never limited, only a goal's endpoint was fenced (a straight flight across an L-shaped fence's
notch passed), goals far below home passed, and climbs ran at the horizontal speed cap."""
from __future__ import annotations

import math

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.safety import Goal, SafetyCode, SafetyConfig, SafetyGate, Velocity
from tests.core.vehicles.safety.conftest import CIRCLE, north_of_origin

# An L: 0..200 m east and 0..200 m north, without the square 100..200 m east x 100..200 m north.
M = 1.0 / 110574.3  # degrees of latitude (and, at the equator, longitude) per metre, near enough
L_FENCE = {"polygon": [[0, 0], [0, 200 * M], [100 * M, 200 * M], [100 * M, 100 * M], [200 * M, 100 * M],
                       [200 * M, 0]]}


def at(north_m: float, east_m: float, alt_m: float = 10.0) -> tuple[float, float, float]:
    return north_m * M, east_m * M, alt_m


def gate_for(clock, fence=CIRCLE, **extra) -> SafetyGate:
    config = SafetyConfig.from_dict({"geofence": fence, "heartbeat_timeout_s": None, **extra})
    gate = SafetyGate.from_config(config, clock)
    return gate


def test_a_velocity_further_out_of_the_fence_is_refused_and_one_back_in_passes(clock):
    gate = gate_for(clock)
    outside = (north_of_origin(150.0), 0.0, 10.0)  # 50 m north of the 100 m circle
    out = gate.decision(Velocity(0.0, 2.0), position=outside)
    assert (out.moving, out.code) == (False, SafetyCode.OUTSIDE_GEOFENCE), out
    back = gate.decision(Velocity(0.0, -2.0), position=outside)
    assert back.moving and back.command.north_m_s == -2.0
    inside = gate.decision(Velocity(0.0, 2.0), position=(0.0, 0.0, 10.0))
    assert inside.moving


def test_a_velocity_with_no_known_position_is_refused(clock):
    gate = gate_for(clock)
    verdict = gate.decision(Velocity(1.0, 0.0))
    assert (verdict.moving, verdict.code) == (False, SafetyCode.OUTSIDE_GEOFENCE)
    assert "position is unknown" in verdict.reason


@pytest.mark.parametrize("altitude", [None, math.nan])
def test_no_climb_nor_descent_while_the_altitude_is_unknown(clock, altitude):
    """The floor can be 5 m below home (a rooftop launch): a blind descent could pass it, so it is
    stopped like a blind climb (it used to be let through)."""
    gate = gate_for(clock)
    position = (0.0, 0.0, altitude)
    verdict = gate.decision(Velocity(0.0, 0.0, 0.8), position=position)
    assert verdict.command.up_m_s == 0.0 and "climb stopped: altitude unknown" in verdict.reason
    down = gate.decision(Velocity(0.0, 0.0, -0.5), position=position)
    assert down.command.up_m_s == 0.0 and "descent stopped: altitude unknown" in down.reason


@pytest.mark.parametrize("altitude, up, stopped", [(-4.6, -1.0, True), (-4.4, -1.0, False), (29.6, 1.0, True),
                                                    (29.4, 1.0, False)])
def test_a_vertical_velocity_stops_before_it_would_pass_the_floor_or_ceiling(clock, altitude, up, stopped):
    """A 1 m/s descent used to stop only once past the floor (it went to -15 m under a -5 m floor):
    it stops half a second before it would pass it, at the altitude read now."""
    gate = gate_for(clock, max_altitude_m=30.0, min_altitude_m=-5.0, max_vertical_speed_m_s=1.0)
    verdict = gate.decision(Velocity(0.0, 0.0, up), position=(0.0, 0.0, altitude))
    assert (verdict.command.up_m_s == 0.0) == stopped, verdict


def test_the_yaw_rate_is_limited_with_a_default_and_a_setting(clock):
    gate = gate_for(clock)
    fast = gate.decision(Velocity(0.0, 0.0, 0.0, -200.0), position=(0.0, 0.0, 10.0))
    assert fast.code is SafetyCode.SPEED_CLAMPED and fast.command.yaw_rate_deg_s == -45.0
    assert "yaw rate 200.0 deg/s clamped to 45 deg/s" in fast.reason
    slow_gate = gate_for(clock, max_yaw_rate_deg_s=10.0)
    assert slow_gate.decision(Velocity(0.0, 0.0, 0.0, 30.0), position=(0.0, 0.0, 10.0)).command.yaw_rate_deg_s == 10.0


def test_a_straight_flight_across_the_notch_of_an_l_fence_is_refused(clock):
    gate = gate_for(clock, fence=L_FENCE)
    start, goal = at(150.0, 50.0), at(50.0, 150.0)  # both inside the L; the line between cuts the notch
    assert gate.geofence.contains(*start[:2]) and gate.geofence.contains(*goal[:2])
    verdict = gate.decision(Goal(goal[0], goal[1], 10.0), position=start)
    assert (verdict.moving, verdict.code) == (False, SafetyCode.OUTSIDE_GEOFENCE), verdict
    assert "path" in verdict.reason
    around = gate.decision(Goal(*at(50.0, 50.0)[:2], 10.0), position=start)  # down the L's leg: inside
    assert around.moving


def test_from_outside_a_path_straight_back_in_passes(clock):
    gate = gate_for(clock, fence=L_FENCE)
    verdict = gate.decision(Goal(*at(50.0, 50.0)[:2], 10.0), position=at(-20.0, 50.0))
    assert verdict.moving, verdict


def test_a_goal_below_the_floor_is_refused(clock):
    gate = gate_for(clock)
    deep = gate.decision(Goal(north_of_origin(10.0), 0.0, alt_m=-500.0))
    assert (deep.moving, deep.code) == (False, SafetyCode.BELOW_MIN_ALTITUDE)
    assert "-500.0 m is below the -5 m floor" in deep.reason
    assert gate.decision(Goal(north_of_origin(10.0), 0.0, alt_m=-2.0)).moving


def test_a_climbing_goal_is_slowed_to_the_vertical_limit(clock):
    gate = gate_for(clock, max_speed_m_s=3.0, max_vertical_speed_m_s=1.0)
    start = (0.0, 0.0, 0.0)
    straight_up = gate.decision(Goal(0.0, 0.0, alt_m=20.0, speed_m_s=3.0), position=start)
    assert straight_up.command.speed_m_s == pytest.approx(1.0) and straight_up.code is SafetyCode.SPEED_CLAMPED
    # 30 m north and 20 m up: the vertical part of 3 m/s along it is 1.66 m/s, so 1/sin slower
    slant = gate.decision(Goal(north_of_origin(30.0), 0.0, alt_m=20.0), position=start)
    assert slant.command.speed_m_s == pytest.approx(math.hypot(30.0, 20.0) / 20.0, rel=1e-3)
    unknown = gate.decision(Goal(north_of_origin(30.0), 0.0, alt_m=20.0))  # no position: the slower cap
    assert unknown.command.speed_m_s == pytest.approx(1.0)
    level = gate.decision(Goal(north_of_origin(30.0), 0.0, alt_m=0.0, speed_m_s=3.0), position=start)
    assert level.command.speed_m_s == pytest.approx(3.0)


@pytest.mark.parametrize("field, value, message", [
    ("rtl_battery_fraction", 1.5, "safety.rtl_battery_fraction must be a fraction between 0 and 1"),
    ("rtl_battery_fraction", "low", "safety.rtl_battery_fraction must be a fraction between 0 and 1"),
    ("max_yaw_rate_deg_s", 0, "safety.max_yaw_rate_deg_s must be a positive number"),
    ("min_altitude_m", 50.0, "safety.min_altitude_m must be a number below max_altitude_m"),
])
def test_new_fields_are_validated_naming_the_field(field, value, message):
    with pytest.raises(ConfigError, match=message):
        SafetyConfig.from_dict({"geofence": CIRCLE, field: value})


def test_new_fields_load_with_defaults():
    config = SafetyConfig.from_dict({"geofence": CIRCLE, "rtl_battery_fraction": 0.2})
    assert config.rtl_battery_fraction == 0.2 and config.max_yaw_rate_deg_s == 45.0 and config.min_altitude_m == -5.0
    assert SafetyConfig.from_dict({"geofence": CIRCLE}).rtl_battery_fraction is None
