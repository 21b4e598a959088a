"""SafetyGate: order of checks, codes and reasons, clamps, and a real-clock flight loop that must
hold within timeout + 1 s of the last decision."""
from __future__ import annotations

import math
import threading
import time

import pytest

from cityseeker_ros.core.vehicles.safety import HOLD, Goal, Hold, SafetyCode, SafetyConfig, SafetyGate, Velocity
from tests.core.vehicles.safety.conftest import CIRCLE, north_of_origin

INSIDE = Goal(north_of_origin(50.0), 0.0, alt_m=10.0, heading_deg=0.0, speed_m_s=2.0)
HERE = (0.0, 0.0, 10.0)  # the vehicle, level with INSIDE: no climb slows it
GROUND = (0.0, 0.0, 0.0)


def live(gate) -> None:
    gate.beat()
    gate.decision(INSIDE, position=HERE)


def test_nothing_moves_before_a_decision_and_a_heartbeat(gate):
    assert gate.tick().code is SafetyCode.HEARTBEAT_LOST
    gate.beat()
    first = gate.tick()
    assert (first.command, first.code, first.moving) == (HOLD, SafetyCode.NO_DECISION, False)


def test_a_goal_inside_passes_and_speed_is_capped(gate, clock):
    live(gate)
    ok = gate.tick(position=HERE)
    assert (ok.command, ok.code, ok.reason, ok.moving) == (INSIDE, SafetyCode.OK, "ok", True)
    fast = gate.decision(Goal(north_of_origin(50.0), 0.0, speed_m_s=7.5), position=GROUND)
    assert fast.code is SafetyCode.SPEED_CLAMPED and fast.command.speed_m_s == 3.0
    assert fast.reason == "speed 7.50 m/s clamped to 3 m/s"
    unspecified = gate.decision(Goal(north_of_origin(50.0), 0.0), position=GROUND)
    assert unspecified.code is SafetyCode.OK and unspecified.command.speed_m_s == 3.0


def test_a_goal_outside_the_fence_is_refused(gate, clock):
    live(gate)
    refused = gate.decision(Goal(north_of_origin(250.0), 0.0, alt_m=5.0))
    assert (refused.command, refused.code) == (HOLD, SafetyCode.OUTSIDE_GEOFENCE)
    assert "150.0 m outside the circle geofence" in refused.reason
    assert gate.tick().code is SafetyCode.OUTSIDE_GEOFENCE  # it stays refused, tick after tick
    high = gate.decision(Goal(north_of_origin(10.0), 0.0, alt_m=60.0))
    assert (high.command, high.code) == (HOLD, SafetyCode.ABOVE_MAX_ALTITUDE)


@pytest.mark.parametrize("command", [Goal(math.nan, 0.0), Goal(0.0, 0.0, speed_m_s=-1.0), Goal(91.0, 0.0),
                                     Velocity(math.inf, 0.0), "forward"])
def test_invalid_commands_hold(gate, clock, command):
    gate.beat()
    verdict = gate.decision(command)
    assert (verdict.command, verdict.code) == (HOLD, SafetyCode.INVALID_COMMAND)


def test_a_hold_decision_is_passed_on_with_its_own_code(gate, clock):
    gate.beat()
    verdict = gate.decision(Hold())
    assert (verdict.command, verdict.code, verdict.moving) == (HOLD, SafetyCode.HOLD_REQUESTED, False)


def test_watchdog_holds_after_the_timeout_and_the_next_decision_resumes(gate, clock):
    live(gate)
    clock.t += 1.5
    gate.beat()
    clock.t += 1.5
    gate.beat()
    assert gate.tick().moving  # 3.0 s since the decision: still within the timeout
    clock.t += 0.2
    gate.beat()
    stale = gate.tick()
    assert (stale.command, stale.code, stale.reason) == (HOLD, SafetyCode.NO_DECISION,
                                                         "no decision for 3.2 s > 3.0 s")
    gate.decision(INSIDE)
    assert gate.tick().moving


def test_heartbeat_loss_holds_and_beating_again_resumes(gate, clock):
    live(gate)
    clock.t += 2.5
    gate.decision(INSIDE)
    lost = gate.tick()
    assert (lost.command, lost.code) == (HOLD, SafetyCode.HEARTBEAT_LOST)
    gate.beat()
    assert gate.tick().moving


def test_estop_overrides_everything_until_reset(gate, clock):
    live(gate)
    gate.estop.trigger("operator", "person on the pavement")
    clock.t += 10.0  # heartbeat and watchdog stale too: the e-stop is what gets reported
    assert gate.tick().code is SafetyCode.ESTOP
    live(gate)
    stopped = gate.tick()
    assert (stopped.command, stopped.reason) == (HOLD, "e-stop from operator: person on the pavement")
    assert gate.estop.reset().ok
    assert gate.tick().moving


def test_velocity_is_scaled_to_the_limits_keeping_direction(gate, clock):
    gate.beat()
    v = gate.decision(Velocity(4.0, 3.0, 2.0, 10.0), position=HERE)
    assert v.code is SafetyCode.SPEED_CLAMPED and v.moving
    assert (v.command.east_m_s, v.command.north_m_s, v.command.up_m_s) == pytest.approx((2.4, 1.8, 1.0))
    assert v.command.yaw_rate_deg_s == 10.0
    assert "speed 5.00 m/s clamped to 3 m/s" in v.reason and "vertical speed 2.00 m/s" in v.reason
    at_ceiling = gate.tick(position=(0.0, 0.0, 40.0))
    assert at_ceiling.command.up_m_s == 0.0 and "climb stopped at 40.0 m" in at_ceiling.reason
    slow = gate.decision(Velocity(1.0, 0.0, -0.5), position=HERE)
    assert (slow.code, slow.command) == (SafetyCode.OK, Velocity(1.0, 0.0, -0.5))


@pytest.mark.parametrize("timeout_s", [0.5, 1.0])
def test_real_clock_vehicle_holds_within_one_second_of_the_timeout(timeout_s):
    """A 20 Hz flight loop on time.monotonic, like a ROS timer, drives a simulated vehicle; the
    decision stream runs at 5 Hz, then stops. The vehicle must be holding (and standing still) no
    later than timeout + 1 s after the last decision, and not before the timeout."""
    config = SafetyConfig.from_dict({"geofence": CIRCLE, "decision_timeout_s": timeout_s,
                                     "heartbeat_timeout_s": None})
    gate = SafetyGate.from_config(config)
    lock = threading.Lock()
    log: list[tuple[float, bool, SafetyCode, float]] = []  # time, moving, code, vehicle position
    done = threading.Event()

    def flight_loop() -> None:
        position, period, due = 0.0, 0.05, time.monotonic()
        while not done.is_set():
            with lock:
                verdict = gate.tick()
            if verdict.moving:
                position += verdict.command.speed_m_s * period
            log.append((time.monotonic(), verdict.moving, verdict.code, position))
            due += period
            time.sleep(max(0.0, due - time.monotonic()))

    loop = threading.Thread(target=flight_loop, daemon=True)
    loop.start()
    for _ in range(3):
        with lock:
            gate.decision(INSIDE)
            last_decision = gate.watchdog.last
        time.sleep(0.2)
    deadline = last_decision + timeout_s + 1.5
    while time.monotonic() < deadline:  # until it has held for 0.3 s, so "stays parked" is checked too
        holds = [t for t, moving, _, _ in log if t > last_decision and not moving]
        if holds and log[-1][0] - holds[0] >= 0.3:
            break
        time.sleep(0.05)
    done.set()
    loop.join(timeout=2.0)

    assert any(moving for t, moving, _, _ in log if t <= last_decision)  # it was driving
    after = [entry for entry in log if entry[0] > last_decision]
    first_hold = next(i for i, (_, moving, _, _) in enumerate(after) if not moving)
    t_hold, _, code, parked_at = after[first_hold]
    assert code is SafetyCode.NO_DECISION
    assert timeout_s < t_hold - last_decision <= timeout_s + 1.0, t_hold - last_decision
    assert all(not moving and pos == parked_at for _, moving, _, pos in after[first_hold:])
