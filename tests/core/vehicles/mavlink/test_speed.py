"""The speed limit is enforced by what the stack sends, not only asked for: against a vehicle that
acknowledges MAV_CMD_DO_CHANGE_SPEED and ignores it (the simulator's --ignore-speed-change, cruising
at its own 5 m/s), a goal with a speed is flown as a carrot of position targets advancing at that
speed, with the carrot's velocity as a feed-forward, and the vehicle still arrives.

The flown speed is computed here from the simulator's own position reports (`sim.track`: where it
was at each GLOBAL_POSITION_INT it sent) over one-second spans. TOLERANCE_M_S is what a position
controller chasing a point that jumps 0.3 m ten times a second on a loaded machine may add over one
second; a vehicle that flies its own cruise speed exceeds it by far (5 m/s against 3).
"""
import math

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.streets.geodesy import geodesic_m
from cityseeker_ros.core.vehicles.mavlink.link import PathSetpoint, PositionSetpoint
from tests.core.vehicles.mavlink.conftest import HOME, airborne, north_of, wait_until

TOLERANCE_M_S = 0.3
SPAN_S = 1.0
STUBBORN = {"ignore_speed_change": True, "cruise_m_s": 5.0}


def speeds(track, since: float, span_s: float = SPAN_S) -> list[tuple[float, float]]:
    """(horizontal, vertical) m/s over each `span_s` of the simulator's position reports after `since`."""
    points = [p for p in track if p[0] >= since]
    out, j = [], 0
    for t, e, n, u in points:
        while j < len(points) and points[j][0] < t + span_s:
            j += 1
        if j == len(points):
            break
        t2, e2, n2, u2 = points[j]
        out.append((math.hypot(e2 - e, n2 - n) / (t2 - t), abs(u2 - u) / (t2 - t)))
    return out


@pytest.mark.parametrize("flavour, metres", [("px4", 100.0), ("ardupilot", 45.0)])
def test_a_vehicle_that_ignores_the_speed_change_still_flies_at_the_goals_speed(vehicle, flavour, metres):
    sim, link = vehicle(flavour, sim=STUBBORN)
    airborne(link)
    goal = (north_of(HOME[0], metres), HOME[1])
    started = sim.track[-1][0]
    link.go_to(goal[0], goal[1], 5.0, speed_m_s=3.0)
    took = wait_until(lambda: geodesic_m(link.state().lat, link.state().lon, *goal) < 0.5, metres / 3.0 + 10.0,
                      link, "the goal")
    flown = speeds(list(sim.track), started)
    fastest = max(h for h, _ in flown)
    print(f"\n{flavour}: {metres:g} m at 3 m/s against a vehicle cruising at 5 m/s and ignoring DO_CHANGE_SPEED: "
          f"arrived in {took:.1f} s, fastest {fastest:.2f} m/s over {SPAN_S:g} s spans")
    assert sim.ignore_speed_change and sim.cruise == 5.0  # the speed change was received and ignored
    assert sim.count((), commands=frozenset({mavlink.MAV_CMD_DO_CHANGE_SPEED})) >= 1
    assert fastest < 3.0 + TOLERANCE_M_S
    assert took > metres / (3.0 + TOLERANCE_M_S)  # arrived, and not early
    lat, lon, alt = sim.position
    assert geodesic_m(lat, lon, *goal) < 0.6 and abs(alt - 5.0) < 0.3


def test_a_climb_is_no_faster_than_the_goals_speed(vehicle):
    """The carrot moves in three dimensions: a climb of 12 m over 5 m at 2 m/s, on a vehicle that
    climbs at 5 m/s on its own, rises at about 2 * 12/13 m/s."""
    sim, link = vehicle("px4", sim=STUBBORN)
    airborne(link, 4.0)
    goal = (north_of(HOME[0], 5.0), HOME[1], 16.0)
    started = sim.track[-1][0]
    link.go_to(*goal, speed_m_s=2.0)
    wait_until(lambda: abs(link.state().alt_m - 16.0) < 0.3, 15.0, link, "the height")
    flown = speeds(list(sim.track), started)
    assert max(v for _, v in flown) < 2.0 + TOLERANCE_M_S
    assert max(math.hypot(h, v) for h, v in flown) < 2.0 + TOLERANCE_M_S


def test_a_vehicle_that_honours_the_speed_change_is_capped_by_it_too(vehicle):
    sim, link = vehicle("px4", sim={"cruise_m_s": 5.0})
    airborne(link)
    link.go_to(north_of(HOME[0], 30.0), HOME[1], 5.0, speed_m_s=4.0)
    assert sim.cruise == 4.0
    wait_until(lambda: link.state().velocity_enu[1] > 3.5, 3.0, link, "at speed")


def test_without_a_speed_the_goal_is_one_position_target_at_the_vehicles_own_speed(vehicle):
    sim, link = vehicle("px4", sim={"cruise_m_s": 5.0})
    airborne(link)
    goal = (north_of(HOME[0], 30.0), HOME[1])
    link.go_to(*goal, 5.0)
    wait_until(lambda: link.state().velocity_enu[1] > 4.8, 3.0, link, "at the vehicle's own cruise speed")
    assert sim.goal[1:4] == pytest.approx((0.0, 30.0, 5.0), abs=0.05) and sim.goal[5] == (0.0, 0.0, 0.0)


def test_the_carrot_advances_at_its_speed_and_stops_at_the_goal():
    goal = PositionSetpoint(north_of(HOME[0], 30.0), HOME[1], 14.0, 90.0)
    carrot = PathSetpoint((HOME[0], HOME[1], 10.0), goal, 2.5, started=100.0)
    point, velocity = carrot.at(104.0)  # 10 m along a 30.27 m line (on a sphere: 0.3% off WGS84 here)
    assert geodesic_m(HOME[0], HOME[1], point.lat, point.lon) == pytest.approx(10.0 * 30.0 / math.hypot(30, 4),
                                                                              rel=3e-3)
    assert point.alt_m == pytest.approx(10.0 + 10.0 * 4.0 / math.hypot(30, 4)) and point.heading_deg == 90.0
    assert math.hypot(*velocity) == pytest.approx(2.5) and velocity[0] == pytest.approx(0.0, abs=1e-9)
    assert carrot.at(99.0)[0].lat == HOME[0]  # never behind its start
    assert carrot.at(200.0) == (goal, (0.0, 0.0, 0.0))
