"""Geofence through the mission protocol (MAV_MISSION_TYPE_FENCE) and the flavour's parameters, read
back the same way; and the simulator acting on a breach."""
import pytest

from cityseeker_ros.core.vehicles.link import LinkError
from cityseeker_ros.core.vehicles.mavlink.fence import VERTEX
from tests.core.vehicles.mavlink.conftest import HOME, airborne, north_of, wait_until

SQUARE = [(HOME[0] - 0.0003, HOME[1] - 0.0004), (HOME[0] - 0.0003, HOME[1] + 0.0004),
          (HOME[0] + 0.0003, HOME[1] + 0.0004), (HOME[0] + 0.0003, HOME[1] - 0.0004), (HOME[0], HOME[1] - 0.00051)]


@pytest.mark.parametrize("flavour, params", [
    ("px4", {"GF_ACTION": 3, "GF_MAX_VER_DIST": 37.3}),
    ("ardupilot", {"FENCE_ACTION": 1, "FENCE_ALT_MAX": 37.3, "FENCE_TYPE": 5, "FENCE_ENABLE": 1}),
])
def test_fence_upload_then_read_back_equal(vehicle, flavour, params):
    sim, link = vehicle(flavour)
    sent = link.upload_fence(SQUARE, 37.3, "rtl")
    assert len(sent.polygon) == 5 and all(abs(a - b) < 1e-7 for v, w in zip(sent.polygon, SQUARE) for a, b in
                                          zip(v, w))
    assert link.read_fence() == sent
    assert [(i.command, i.param1) for i in sim.fence] == [(VERTEX, 5.0)] * 5
    assert {name: pytest.approx(sim.param(name), abs=1e-5) for name in params} == params
    again = link.upload_fence(SQUARE[:3], 80.0, "land")  # a second upload replaces the first
    assert link.read_fence() == again and len(sim.fence) == 3


def test_reading_a_fence_the_stack_did_not_write_fails_in_one_line(vehicle):
    sim, link = vehicle("px4")
    with pytest.raises(LinkError, match=r"holds no fence polygon \(0 vertices\)"):
        link.read_fence()
    link.upload_fence(SQUARE, 50.0, "hold")
    sim.params["GF_ACTION"][0] = 4  # terminate, set by someone else
    with pytest.raises(LinkError, match="GF_ACTION is 4, a breach action the stack does not set"):
        link.read_fence()


@pytest.mark.parametrize("flavour, action_mode", [("px4", "AUTO.LOITER"), ("ardupilot", "BRAKE")])
def test_the_vehicle_holds_on_a_breach(vehicle, flavour, action_mode):
    sim, link = vehicle(flavour)
    link.upload_fence(SQUARE, 50.0, "hold")
    airborne(link)
    link.go_to(north_of(HOME[0], 60.0), HOME[1], 5.0)  # 33 m north is the edge
    wait_until(lambda: sim.mode == action_mode, 6.0, link, "the breach action")
    assert sim.failsafes[-1][1] == f"geofence breach -> {action_mode}" and "Geofence breached" in sim.texts
    wait_until(lambda: not link.state().in_control, 2.0, link, "the link seeing it")
