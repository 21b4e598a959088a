"""The live monitor beside a real bridge, fed by its taps only: a MAVLink bridge on the shipped simulator
over loopback UDP (the connection's wire hook, both directions), and the walker through MonitoredLink.
A clean flight gives no violation; a setpoint outside the fence sent by a test driver from the stack's
own system id is flagged, and the callback trips the bridge's e-stop."""
from __future__ import annotations

import threading
import time

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.bridge import VehicleBridge
from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
from cityseeker_ros.core.vehicles.mavlink.simulator import MavlinkSimulator
from cityseeker_ros.core.vehicles.monitor import LiveMonitor, MonitoredLink, Violation, limits_from_dict
from cityseeker_ros.core.vehicles.safety import Goal, SafetyConfig, SafetyGate
from cityseeker_ros.core.vehicles.safety.commands import HOLD
from cityseeker_ros.core.vehicles.sim import SimulatedWalker, WalkerLink
from tests.core.vehicles.mavlink.conftest import HOME, free_udp_port
from tests.core.vehicles.test_bridge import wait_for

SAFETY = {"geofence": {"circle": {"center": list(HOME[:2]), "radius_m": 100.0}}, "heartbeat_timeout_s": None,
          "decision_timeout_s": 60.0, "max_altitude_m": 30.0, "max_speed_m_s": 3.0, "max_vertical_speed_m_s": 2.0}
# Within the safety file's limits, as the autopilot's parameters must be in the field.
VEHICLE = {"max_climb_m_s": 2.0, "max_descent_m_s": 2.0, "cruise_m_s": 3.0, "max_speed_m_s": 3.0}


class Tripper:
    """What the node does on a violation: note it and trip the bridge's e-stop."""

    def __init__(self) -> None:
        self.bridge: VehicleBridge | None = None
        self.seen: list[Violation] = []
        self.event = threading.Event()

    def __call__(self, v: Violation) -> None:
        self.seen.append(v)
        if self.bridge is not None:
            self.bridge.trip_estop("monitor", f"{v.rule}: {v.detail}")
        self.event.set()


@pytest.fixture
def mavlink_rig():
    made = []

    def make(flavour: str = "px4"):
        port = free_udp_port()
        sim = MavlinkSimulator(flavour, port, home=HOME, **VEHICLE).start()
        tripper = Tripper()
        live = LiveMonitor(limits_from_dict(SAFETY), on_violation=tripper, reorder_s=0.05)
        link = MavlinkLink(f"udp://127.0.0.1:{port}", takeoff_alt_m=3.0)
        link.on_wire = live.mavlink_tap()
        bridge = VehicleBridge(link, SafetyGate.from_config(SafetyConfig.from_dict(SAFETY)), safety_period_s=0.02,
                               state_period_s=0.05)
        tripper.bridge = bridge
        made.append((sim, bridge, live))
        assert wait_for(lambda: bridge.holds >= 1, 8.0), bridge.status()
        return sim, link, bridge, live, tripper

    yield make
    for sim, bridge, live in made:
        bridge.close()
        live.close()
        sim.close()


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_clean_mavlink_flight_has_no_violation(mavlink_rig, flavour):
    sim, link, bridge, live, tripper = mavlink_rig(flavour)
    live.decide("goal", goal=(HOME[0], HOME[1], 3.0), stamp=time.monotonic())  # the flying start: arm, climb
    bridge.command(Goal(HOME[0], HOME[1], 3.0))
    assert wait_for(lambda: sim.position[2] > 2.5, 15.0), (bridge.status(), bridge.events)
    lat, lon = destination(HOME[0], HOME[1], 45.0, 8.0)
    live.decide("goal", goal=(lat, lon, 4.0), stamp=time.monotonic())
    bridge.command(Goal(lat, lon, 4.0))
    assert wait_for(lambda: bridge.state is not None and bridge.state.lat is not None
                    and abs(bridge.state.lat - lat) < 2e-5, 15.0), (bridge.status(), bridge.events)
    live.decide("hold", stamp=time.monotonic())
    live.mark("session_end", "hold command")
    bridge.command(HOLD)
    assert wait_for(lambda: not bridge.moving, 3.0)
    live.mark("session_end", "shutdown")
    bridge.close()
    live.close()
    report = live.report()
    assert live.violations == [] and tripper.seen == [], live.violations
    assert report["verdict"] == "clean"
    judged = {r["name"]: r["judged"] for r in report["rules"]}
    assert judged["inside_fence"] > 10 and judged["speed_limits"] > 10 and judged["no_motion_after_hold"] > 10
    assert report["messages"]["stack SET_POSITION_TARGET_GLOBAL_INT"] > 10  # the wire, both directions
    assert report["messages"]["vehicle GLOBAL_POSITION_INT"] > 10


def test_a_setpoint_outside_the_fence_on_the_stacks_wire_is_flagged_and_trips_the_estop(mavlink_rig):
    sim, link, bridge, live, tripper = mavlink_rig("px4")
    assert not bridge.status().estop
    conn = link._conn
    system, component = conn.target
    lat, lon = destination(HOME[0], HOME[1], 0.0, 500.0)  # 400 m past the fence
    conn.send(mavlink.MAVLink_set_position_target_global_int_message(
        0, system, component, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, 0b110111111000,
        int(lat * 1e7), int(lon * 1e7), 5.0, 0, 0, 0, 0, 0, 0, 0, 0))
    assert tripper.event.wait(3.0), live.report()
    assert "inside_fence" in {v.rule for v in tripper.seen}
    assert wait_for(lambda: bridge.status().estop, 2.0), bridge.status()
    assert "monitor" in bridge.gate.estop.check().reason


# -- the walker, through MonitoredLink ---------------------------------------------------------------

WALKER_SAFETY = {**SAFETY, "geofence": {"circle": {"center": list(HOME[:2]), "radius_m": 100.0}}}


def _walker_run(wrapped: bool):
    walker = SimulatedWalker(HOME[0], HOME[1])
    tripper = Tripper()
    live = LiveMonitor(limits_from_dict(WALKER_SAFETY), on_violation=tripper, reorder_s=0.05)
    inner = WalkerLink(walker)
    link = MonitoredLink(inner, live.feed) if wrapped else inner
    if wrapped:
        live.add_source("walker", link.counts)
    bridge = VehicleBridge(link, SafetyGate.from_config(SafetyConfig.from_dict(WALKER_SAFETY)),
                           safety_period_s=0.02, state_period_s=0.05)
    tripper.bridge = bridge
    seen = []
    try:
        assert wait_for(lambda: bridge.holds >= 1, 5.0)
        seen.append((bridge.status().code, bridge.capabilities, bridge.stops[:]))
        inside = destination(HOME[0], HOME[1], 90.0, 40.0)
        live.decide("goal", goal=(*inside, 0.0), stamp=time.monotonic())
        bridge.command(Goal(*inside, 0.0))
        assert wait_for(lambda: abs(walker.fix()[1] - inside[1]) < 1e-7, 3.0)
        seen.append((bridge.status().code, bridge.status().moving, walker.fix()))
        outside = destination(HOME[0], HOME[1], 0.0, 300.0)
        live.decide("goal", goal=(*outside, 0.0), stamp=time.monotonic())
        bridge.command(Goal(*outside, 0.0))  # refused by the gate: the walker holds where it is
        assert wait_for(lambda: not bridge.moving, 2.0)
        seen.append((bridge.status().code, walker.fix(), bridge.stops[:]))
        live.decide("hold", stamp=time.monotonic())
        live.mark("session_end", "hold command")
        bridge.command(HOLD)
        time.sleep(0.2)
        live.mark("session_end", "shutdown")
    finally:
        bridge.close()
        live.close()
    seen.append((bridge.stops[:], walker.fix()))
    return seen, live, tripper


def test_the_walker_bridge_behaves_the_same_with_the_tap_and_the_run_is_clean():
    plain, _, _ = _walker_run(wrapped=False)
    tapped, live, tripper = _walker_run(wrapped=True)
    assert tapped == plain
    assert live.violations == [] and tripper.seen == []
    report = live.report()
    assert report["verdict"] == "clean" and report["messages"]["stack go_to"] >= 1
    assert report["messages"]["vehicle state"] >= 3


def test_a_walker_sent_outside_the_fence_behind_the_bridges_back_trips_the_estop():
    walker = SimulatedWalker(HOME[0], HOME[1])
    tripper = Tripper()
    live = LiveMonitor(limits_from_dict(WALKER_SAFETY), on_violation=tripper, reorder_s=0.05)
    link = MonitoredLink(WalkerLink(walker), live.feed)
    bridge = VehicleBridge(link, SafetyGate.from_config(SafetyConfig.from_dict(WALKER_SAFETY)),
                           safety_period_s=0.02, state_period_s=0.05)
    tripper.bridge = bridge
    try:
        assert wait_for(lambda: bridge.holds >= 1, 5.0)
        link.go_to(*destination(HOME[0], HOME[1], 0.0, 300.0), 0.0)  # a driver calling the link directly
        assert tripper.event.wait(3.0)
        assert {v.rule for v in tripper.seen} >= {"inside_fence", "no_motion_after_hold"}
        assert wait_for(lambda: bridge.status().estop, 2.0)
    finally:
        bridge.close()
        live.close()
