"""Decision watchdog, supervisor heartbeat and the latching e-stop, on an injected clock."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.safety import DecisionWatchdog, EStop, Heartbeat, SafetyCode


def test_watchdog_holds_before_the_first_decision_and_after_the_timeout(clock):
    dog = DecisionWatchdog(3.0, clock)
    first = dog.check()
    assert (first.ok, first.code, first.reason) == (False, SafetyCode.NO_DECISION, "no decision received yet")
    dog.feed()
    clock.t += 3.0
    assert dog.check().ok  # exactly at the timeout still moves
    late = dog.check(clock.t + 0.2)
    assert (late.ok, late.code, late.reason) == (False, SafetyCode.NO_DECISION, "no decision for 3.2 s > 3.0 s")
    dog.feed(clock.t + 0.2)
    assert dog.check(clock.t + 0.3).ok  # not latching: the next decision resumes motion


def test_heartbeat_monitor_has_its_own_code(clock):
    beat = Heartbeat(0.5, clock)
    assert beat.check().code is SafetyCode.HEARTBEAT_LOST
    beat.feed()
    assert beat.check(clock.t + 0.5).ok
    lost = beat.check(clock.t + 0.75)
    assert not lost.ok and lost.reason == "no supervisor heartbeat for 0.8 s > 0.5 s"


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), "3"])
def test_timeouts_must_be_positive_seconds(timeout, clock):
    with pytest.raises(ConfigError, match="decision timeout"):
        DecisionWatchdog(timeout, clock)


def test_estop_latches_until_reset():
    stop = EStop()
    assert stop.check().ok and not stop.latched
    stop.trigger("operator", "tablet button")
    assert stop.latched and stop.check().code is SafetyCode.ESTOP
    assert stop.check().reason == "e-stop from operator: tablet button"
    stop.trigger("geofence monitor")  # a second trigger keeps the first reason
    assert "operator" in stop.check().reason
    assert stop.reset().ok and not stop.latched


def test_estop_reset_is_refused_while_a_source_is_still_asserted():
    stop = EStop()
    stop.trigger("kill switch", held=True)
    refused = stop.reset()
    assert (refused.ok, refused.code) == (False, SafetyCode.RESET_REFUSED) and "kill switch" in refused.reason
    assert stop.latched
    stop.release("kill switch")
    assert stop.latched  # releasing the source does not release the vehicle
    assert stop.reset().ok and not stop.latched
