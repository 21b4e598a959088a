"""The simulated walker: teleports or walks to each goal at its speed, stops where it stands on a
hold, jitters its fixes within noise_m (seeded), stops listening after follow_goals, and rejects
bad settings with the setting's name."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import destination, geodesic_m
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Goal, Velocity
from cityseeker_ros.core.vehicles.sim import SimulatedWalker
from tests.core.loop.rigs import FakeClock

HOME = (43.7384, 7.4246)


def test_a_teleporting_walker_is_at_each_goal_at_once_and_a_goal_where_it_stands_is_no_move():
    walker = SimulatedWalker(*HOME)
    there = destination(*HOME, 90.0, 20.0)
    walker.command(Goal(*there))
    assert walker.fix() == there and not walker.moving and walker.moves == 1
    walker.command(Goal(*there))
    assert walker.moves == 1 and walker.travelled_m == pytest.approx(20.0, abs=1e-6)


def test_a_walking_walker_takes_distance_over_speed_and_a_hold_stops_it_where_it_is():
    clock = FakeClock()
    walker = SimulatedWalker(*HOME, speed_m_s=2.0, clock=clock)
    there = destination(*HOME, 0.0, 20.0)
    walker.command(Goal(*there))
    clock.t += 5.0
    assert geodesic_m(*HOME, *walker.fix()) == pytest.approx(10.0, abs=1e-3) and walker.moving
    clock.t += 5.0
    assert walker.fix() == there and not walker.moving
    walker.command(Goal(*HOME))
    clock.t += 2.5
    walker.command(HOLD)
    clock.t += 60.0
    assert geodesic_m(*there, *walker.fix()) == pytest.approx(5.0, abs=1e-3) and not walker.moving
    assert walker.holds == 1 and walker.travelled_m == pytest.approx(25.0, abs=1e-3)
    walker.command(Velocity(1.0, 0.0))  # not a walker's command: it holds
    assert walker.refused == 1 and not walker.moving


def test_fixes_jitter_within_the_noise_and_repeat_with_the_seed():
    a, b = (SimulatedWalker(*HOME, noise_m=3.0, seed=7) for _ in range(2))
    fixes = [a.fix() for _ in range(500)]
    assert fixes == [b.fix() for _ in range(500)]
    distances = [geodesic_m(*HOME, *f) for f in fixes]
    assert max(distances) <= 3.0 + 1e-6 and max(distances) > 2.5 and len(set(fixes)) == 500


def test_after_follow_goals_moves_it_stops_listening():
    walker = SimulatedWalker(*HOME, follow_goals=1)
    first, second = destination(*HOME, 0.0, 20.0), destination(*HOME, 0.0, 40.0)
    walker.command(Goal(*first))
    walker.command(Goal(*second))
    assert walker.fix() == first and walker.moves == 2


@pytest.mark.parametrize("kwargs, name", [
    ({"lat": float("nan")}, "walker start"), ({"lon": 200.0}, "walker start"),
    ({"speed_m_s": 0.0}, "speed_m_s"), ({"speed_m_s": float("inf")}, "speed_m_s"),
    ({"noise_m": -1.0}, "noise_m"), ({"follow_goals": -1}, "follow_goals"), ({"follow_goals": True}, "follow_goals"),
])
def test_bad_settings_name_the_setting(kwargs, name):
    args = {"lat": HOME[0], "lon": HOME[1], **kwargs}
    with pytest.raises(ConfigError, match=name):
        SimulatedWalker(args.pop("lat"), args.pop("lon"), **args)
