"""The owner's gate on the MAVLink link: asked right before each message that moves the vehicle,
on the link's own setpoint-stream thread too (which the motion door does not govern). Found by the
PX4 soak under load: an e-stop, a Seek's end and a close each waited up to a third of a second for
their hold's thread while the stream sent on. Real MAVLink over loopback UDP on the shipped
simulator."""
from __future__ import annotations

import time

import pytest

from tests.core.vehicles.mavlink.conftest import airborne as link_airborne
from tests.core.vehicles.test_bridge_mavlink import (
    airborne,
    goal_at,
    stack,  # noqa: F401 (the fixture)
    wait_for,
)

FLAVOURS = ["px4", "ardupilot"]
SETPOINTS = ("SET_POSITION_TARGET_GLOBAL_INT", "SET_POSITION_TARGET_LOCAL_NED")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_closed_gate_stops_the_stream_at_once_and_a_stop_still_leaves(vehicle, flavour):
    sim, link = vehicle(flavour)
    link_airborne(link)
    allowed = [True]
    link.set_owner_gate(lambda: allowed[0])
    link.velocity(1.0, 0.0)
    time.sleep(0.3)
    assert sim.count(SETPOINTS, since=time.monotonic() - 0.3) >= 2  # streaming
    allowed[0] = False
    closed = time.monotonic()
    time.sleep(0.5)
    assert sim.count(SETPOINTS, since=closed + 0.01) == 0  # the stream asks the gate before each setpoint
    link.hold()  # a stop is never the gate's to refuse
    assert link.state().mode == link.flavour.hold_mode


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_an_estop_stops_the_stream_though_its_hold_waits_for_the_safety_thread(stack, flavour):  # noqa: F811
    sim, bridge = stack(flavour)
    airborne(bridge)
    bridge.command(goal_at(0.0, 60.0))
    wait_for(lambda: sim.count(SETPOINTS, since=time.monotonic() - 0.3) >= 2, 10.0, "streaming to the goal")
    assert bridge._tick_lock.acquire(timeout=2.0)  # the safety thread cannot tick: the hold must wait
    try:
        tripped = time.monotonic()
        bridge.trip_estop("test", "tripped while the safety thread is held")
        time.sleep(0.6)
        late = sim.count(SETPOINTS, since=tripped + 0.01)
    finally:
        bridge._tick_lock.release()
    assert late == 0, f"{late} setpoints after the trip, before its hold"
    wait_for(lambda: sim.mode == sim.flavour.hold_mode, 5.0, "the e-stop's hold")
