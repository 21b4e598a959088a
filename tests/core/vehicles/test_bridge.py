"""The generic bridge (core/vehicles/bridge.py) against a scripted link whose calls can block, and
the walker link: every test counts the calls the link took and waits on events, never on a sleep
followed by "nothing happened"."""
from __future__ import annotations

import threading
import time
from typing import Optional

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.bridge import LINK_ERROR, LOW_BATTERY, PILOT_OVERRIDE, VehicleBridge
from cityseeker_ros.core.vehicles.link import Capabilities, ConnectReport, LinkError, VehicleLink, VehicleState
from cityseeker_ros.core.vehicles.safety import EStop, Goal, LatchFile, SafetyConfig, SafetyGate, Velocity
from cityseeker_ros.core.vehicles.sim import SimulatedWalker, WalkerLink

HOME = (43.7384, 7.4246)
FENCE = {"circle": {"center": list(HOME), "radius_m": 200.0}}
MOTION = {"go_to", "velocity", "take_control", "hold", "land", "return_to_launch", "terminate"}


def wait_for(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.002)
    return condition()


class ScriptedLink(VehicleLink):
    """A link whose calls are recorded (name, time) and may be made to block until released."""

    name = "scripted"

    def __init__(self, take_control: bool = False) -> None:
        self.calls: list[tuple[str, float]] = []
        self.block: dict[str, threading.Event] = {}  # name -> released when set
        self.entered: dict[str, threading.Event] = {}
        self.fail: set[str] = set()
        self.in_control, self.battery, self.lost = True, None, False
        self.foreign: Optional[str] = None  # VehicleState.foreign_mode: a pilot's mode, as a link reports it
        self.modal = False  # in_control follows take_control (True) and the stops (False), as on an autopilot
        self._take_control = take_control
        self.lock = threading.Lock()

    def _do(self, name: str) -> None:
        with self.lock:
            self.calls.append((name, time.monotonic()))
        self.entered.setdefault(name, threading.Event()).set()
        if name in self.block:
            self.block[name].wait(10.0)
        if name in self.fail:
            raise LinkError(f"{name} failed on purpose")
        if self.modal and name in ("take_control", "hold", "land", "return_to_launch"):
            self.in_control = name == "take_control"

    def names(self, only=MOTION) -> list[str]:
        with self.lock:
            return [n for n, _ in self.calls if n in only]

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(arm=True, go_to=True, velocity=True, hold=True, land=True, rtl=True, terminate=True,
                            take_control=self._take_control)

    def connect(self, timeout_s: float = 3.0) -> ConnectReport:
        self._do("connect")
        return ConnectReport("scripted", "none", 1, 1, "test", 1, (), 0, 0.0)

    def state(self) -> VehicleState:
        self._do("state")
        return VehicleState(HOME[0], HOME[1], 10.0, 0.0, 0.0, 0.0, 90.0, (0.0, 0.0, 0.0), True, "OFFBOARD",
                            self.in_control, self.battery, 0.0, 0.0, self.lost, self.foreign)

    @property
    def link_lost(self) -> bool:
        return self.lost

    def arm(self) -> None:
        self._do("arm")

    def takeoff(self, alt_m: Optional[float] = None, timeout_s: float = 30.0) -> None:
        self._do("takeoff")

    def take_control(self) -> None:
        self._do("take_control")

    def go_to(self, lat, lon, alt_m, heading_deg=None, speed_m_s=None) -> None:
        self._do("go_to")

    def velocity(self, east_m_s, north_m_s, up_m_s=0.0, yaw_rate_deg_s=0.0) -> None:
        self._do("velocity")

    def hold(self) -> None:
        self._do("hold")

    def land(self) -> None:
        self._do("land")

    def return_to_launch(self) -> None:
        self._do("return_to_launch")

    def terminate(self) -> None:
        self._do("terminate")

    def close(self) -> None:
        self._do("close")


def config(**extra) -> SafetyConfig:
    return SafetyConfig.from_dict({"geofence": FENCE, "heartbeat_timeout_s": None, "decision_timeout_s": 0.3,
                                   "max_altitude_m": 30.0, **extra})


def bridge_for(made, link: VehicleLink, estop: Optional[EStop] = None, wait: bool = True, **kw) -> VehicleBridge:
    """A bridge on `link`; with `wait`, once its first hold went out (a decision sent before it is a
    decision made before a stop: it never flies)."""
    b = VehicleBridge(link, SafetyGate.from_config(config(**kw.pop("safety", {})), estop=estop), **kw)
    made.append(b)
    if wait:
        wait_for(lambda: b.holds >= 1, 3.0)
    return b


def goal(metres: float = 30.0) -> Goal:
    return Goal(*destination(*HOME, 45.0, metres), alt_m=10.0)


def test_a_new_bridge_holds_first_even_with_no_estop(made):
    link = ScriptedLink()
    b = bridge_for(made, link)
    assert wait_for(lambda: link.names() == ["hold"])
    b.command(goal())
    assert wait_for(lambda: link.names() == ["hold", "go_to"])


def test_a_velocity_stops_when_decisions_stop_though_nobody_calls_a_step(made):
    """The control step of the old bridge ran only when the node called it: a stalled node left a
    velocity flying. The safety thread holds on its own, and not one velocity is sent after."""
    link = ScriptedLink()
    b = bridge_for(made, link, velocity_period_s=0.02)
    b.command(Velocity(1.0, 0.0))
    assert wait_for(lambda: link.names().count("velocity") >= 3)
    assert wait_for(lambda: link.names()[-1] == "hold", 2.0)  # the watchdog (0.3 s) fired by itself
    sent = link.names().count("velocity")
    wait_for(lambda: False, 0.2)
    assert link.names().count("velocity") == sent and b.status().code == "no_decision"


def test_an_estop_holds_while_a_motion_call_is_stuck_and_its_late_result_is_dropped(made):
    link = ScriptedLink()
    link.block["go_to"] = release = threading.Event()
    b = bridge_for(made, link)
    b.command(goal())
    assert link.entered.setdefault("go_to", threading.Event()).wait(5.0)
    tripped = time.monotonic()
    b.trip_estop("test", "person ahead")
    assert wait_for(lambda: link.names().count("hold") == 2, 1.0)  # the start hold, then the e-stop's
    held_at = [t for n, t in link.calls if n == "hold"][-1]
    assert held_at - tripped < 0.2  # not behind the stuck go_to
    release.set()
    assert wait_for(lambda: b.door.in_flight == 0)
    assert wait_for(lambda: link.names()[-1] == "hold")  # re-held after the stuck call returned
    b.command(goal(40.0))
    wait_for(lambda: False, 0.1)
    assert link.names().count("go_to") == 1 and b.status().code == "estop"


def test_a_dropped_link_is_not_reported_holding_until_a_hold_went_out(made):
    link = ScriptedLink()
    b = bridge_for(made, link, reconnect_period_s=60.0)
    b.command(goal())
    assert wait_for(lambda: "go_to" in link.names())
    link.fail |= {"hold", "state"}
    link.lost = True
    assert wait_for(lambda: b.status().code == LINK_ERROR, 1.0)  # within a second
    status = b.status()
    assert status.moving and "hold not confirmed" in status.reason, status
    link.fail.clear()
    link.lost = False


def test_after_a_reconnect_nothing_moves_until_a_new_goal(made):
    link = ScriptedLink()
    b = bridge_for(made, link, reconnect_period_s=0.05, safety={"decision_timeout_s": 30.0})
    b.command(goal())
    assert wait_for(lambda: "go_to" in link.names())
    link.fail.add("state")
    assert wait_for(lambda: b.status().code == LINK_ERROR, 1.0)
    link.fail.clear()
    connects = link.names({"connect"})
    assert wait_for(lambda: len(link.names({"connect"})) > len(connects) and b.status().code != LINK_ERROR)
    assert wait_for(lambda: link.names()[-1] == "hold")
    wait_for(lambda: False, 0.2)
    assert link.names().count("go_to") == 1  # the old goal is forgotten
    b.command(goal())
    assert wait_for(lambda: link.names().count("go_to") == 2)


def test_a_verdict_does_not_go_stale_across_a_blocking_connect(made):
    """A goal decided before a slow connect; the e-stop trips while connecting: no go_to goes out."""
    link = ScriptedLink()
    link.block["connect"] = release = threading.Event()
    b = bridge_for(made, link, wait=False)
    b.command(goal())
    assert link.entered.setdefault("connect", threading.Event()).wait(5.0)
    b.trip_estop("test")
    release.set()
    assert wait_for(lambda: "hold" in link.names())
    wait_for(lambda: False, 0.2)
    assert "go_to" not in link.names()


def test_the_walker_refuses_motion_under_a_latched_estop(made, tmp_path):
    EStop(LatchFile(tmp_path / "estop.json")).trigger("/estop", "before the restart")
    walker = SimulatedWalker(*HOME)
    b = bridge_for(made, WalkerLink(walker), estop=EStop(LatchFile(tmp_path / "estop.json")))
    there = destination(*HOME, 90.0, 20.0)
    assert wait_for(lambda: walker.holds == 1)  # held first, latched
    for _ in range(3):
        b.command(Goal(*there))
        b.tick()
    assert walker.fix() == HOME and walker.moves == 0 and walker.holds >= 1
    assert b.reset_estop().ok
    b.command(Goal(*there))
    assert wait_for(lambda: walker.fix() == there)


def test_a_pilot_takeover_stops_commanding_and_the_mode_is_never_taken_back(made):
    link = ScriptedLink(take_control=True)
    link.in_control = False
    b = bridge_for(made, link, safety={"decision_timeout_s": 30.0})
    b.command(goal())
    assert wait_for(lambda: link.names() == ["hold", "take_control", "go_to"])
    assert wait_for(lambda: b.status().code != PILOT_OVERRIDE)
    link.in_control = True
    wait_for(lambda: False, 0.2)
    link.in_control = False  # the pilot switched modes
    assert wait_for(lambda: b.status().code == PILOT_OVERRIDE, 1.0)
    b.command(goal(40.0))
    wait_for(lambda: False, 0.2)
    assert link.names() == ["hold", "take_control", "go_to"]  # no hold, no take_control, no motion
    b.take_control()
    b.command(goal(40.0))
    assert wait_for(lambda: link.names().count("take_control") == 2 and link.names().count("go_to") == 2)


def test_return_to_launch_is_refused_while_a_pilot_has_the_vehicle_and_only_then(made):
    """As take_control answers no with nothing to end, RTL answers no while a pilot has the vehicle
    (the stack sends it nothing), and yes once control is back."""
    link = ScriptedLink()
    b = bridge_for(made, link)
    link.foreign = "POSCTL"
    assert wait_for(lambda: b.status().code == PILOT_OVERRIDE, 2.0)
    refused = b.return_to_launch()
    assert not refused.ok and "pilot" in refused.message and "take control" in refused.message, refused
    assert "return_to_launch" not in link.names()
    link.foreign = None
    assert b.take_control(), b.control_note
    answer = b.return_to_launch()
    assert answer.ok and link.names().count("return_to_launch") == 1, (answer, link.names())


def test_low_battery_returns_to_launch_once(made):
    link = ScriptedLink()
    b = bridge_for(made, link, rtl_battery_fraction=0.25, safety={"decision_timeout_s": 30.0})
    b.command(goal())
    assert wait_for(lambda: "go_to" in link.names())
    link.battery = 0.2
    assert wait_for(lambda: b.status().code == LOW_BATTERY, 1.0)
    wait_for(lambda: False, 0.2)
    assert link.names().count("return_to_launch") == 1


def test_the_estop_can_land_and_cutting_motors_needs_the_confirmation(made):
    link = ScriptedLink()
    b = bridge_for(made, link, estop_action="land")
    assert wait_for(lambda: link.names() == ["hold"])
    b.trip_estop("test")
    assert wait_for(lambda: link.names() == ["hold", "land"])
    with pytest.raises(ConfigError, match='confirm="CUT MOTORS"'):
        b.terminate("yes")
    with pytest.raises(ConfigError, match="estop_action"):
        bridge_for(made, ScriptedLink(), estop_action="terminate")
    b.terminate(confirm="CUT MOTORS")
    assert wait_for(lambda: link.names() == ["hold", "land", "terminate"])


# -- the flying start, against the shipped MAVLink simulator (both autopilots' rules) --------------------

def _free_udp_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def flown():
    """make(flavour, **simulator) -> (simulator, bridge) connected over loopback UDP and held first."""
    from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
    from cityseeker_ros.core.vehicles.mavlink.simulator import MavlinkSimulator

    made: list = []

    def make(flavour: str, **sim_kw):
        port = _free_udp_port()
        sim = MavlinkSimulator(flavour, port, home=(*HOME, 10.0), **sim_kw).start()
        gate = SafetyGate.from_config(SafetyConfig.from_dict({"geofence": FENCE, "heartbeat_timeout_s": None,
                                                              "decision_timeout_s": 60.0, "max_speed_m_s": 8.0}))
        bridge = VehicleBridge(MavlinkLink(f"udp://127.0.0.1:{port}", takeoff_alt_m=4.0), gate)
        made.append((sim, bridge))
        assert wait_for(lambda: bridge.connected and bridge.stops and bridge.state is not None
                        and bridge.state.position_known, 20.0), bridge.status()
        return sim, bridge

    yield make
    for sim, bridge in made:
        bridge.close()
        sim.close()


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_goal_to_a_vehicle_on_the_ground_arms_takes_off_takes_control_and_flies(flown, flavour):
    from cityseeker_ros.core.vehicles.mavlink.simulator import SETPOINTS

    sim, bridge = flown(flavour)
    said: list[str] = []
    bridge.on_event = said.append
    assert not sim.armed and sim.position[2] == 0.0
    target = Goal(*destination(HOME[0], HOME[1], 90.0, 25.0), alt_m=0.0)  # a walker's goal, on the ground
    sent = time.monotonic()
    bridge.command(target)
    assert wait_for(lambda: any(line.startswith("took off") for line in said), 30.0), (said, bridge.status())
    took_off = next(t for t, line in bridge.events if line.startswith("took off")) - sent
    assert wait_for(lambda: sim.mode == sim.flavour.control_mode and sim.count(SETPOINTS) > 0, 10.0), said
    assert wait_for(lambda: abs(sim.pos[0] - 25.0) < 1.0, 20.0), (sim.pos, said)
    lat, lon, alt = sim.position
    print(f"\n{flavour}: goal -> took off to 4 m in {took_off:.1f} s; lines: {said}")
    assert said[:3] == ["arming", "armed in " + said[1].split("armed in ")[1], "taking off to 4 m"]
    assert said[-1].startswith(f"in control ({sim.flavour.control_mode})")
    assert abs(alt - 4.0) < 0.6  # a goal at 0 m is flown at the takeoff height, not into the street
    assert sim.armed and bridge.status().moving


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_newer_goal_during_the_climb_keeps_the_start_going_and_is_flown_after_it(flown, flavour):
    """A street walk decides its next goal while the vehicle still climbs (its first goal, the start
    node, is reached at once): the takeoff goes on, once, and the newer goal is the one flown."""
    from pymavlink.dialects.v20 import ardupilotmega as mavlink

    sim, bridge = flown(flavour, max_climb_m_s=0.8)  # 4 m in 5 s: the second goal comes mid-climb
    said: list[str] = []
    bridge.on_event = said.append
    first = Goal(*destination(HOME[0], HOME[1], 0.0, 0.0), alt_m=0.0)
    newer = Goal(*destination(HOME[0], HOME[1], 90.0, 20.0), alt_m=0.0)
    bridge.command(first)
    assert wait_for(lambda: "taking off to 4 m" in said and sim.position[2] > 0.3, 20.0), (said, sim.position)
    bridge.command(newer)
    assert sim.position[2] < 3.0  # still climbing when the newer goal came
    assert wait_for(lambda: abs(sim.pos[0] - 20.0) < 1.0, 30.0), (sim.pos, said, bridge.status())
    assert [line.split(" in ")[0] for line in said[:4]] == ["arming", "armed", "taking off to 4 m", "took off"]
    assert said[-1].startswith(f"in control ({sim.flavour.control_mode})"), said
    takeoffs = sim.count(frozenset(), commands=frozenset({mavlink.MAV_CMD_NAV_TAKEOFF}))
    assert takeoffs == 1 and bridge.holds == 1 and bridge.status().moving  # the hold is the connect's first


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_hold_during_the_climb_stops_the_start_and_nothing_follows(flown, flavour):
    from cityseeker_ros.core.vehicles.mavlink.simulator import SETPOINTS
    from cityseeker_ros.core.vehicles.safety import HOLD

    sim, bridge = flown(flavour, max_climb_m_s=0.8)
    said: list[str] = []
    bridge.on_event = said.append
    bridge.command(Goal(*destination(HOME[0], HOME[1], 90.0, 20.0), alt_m=0.0))
    assert wait_for(lambda: "taking off to 4 m" in said and sim.position[2] > 0.3, 20.0), (said, sim.position)
    held_at = time.monotonic()
    bridge.command(HOLD)
    assert wait_for(lambda: bridge.holds == 2, 5.0), bridge.status()
    assert wait_for(lambda: not bridge.status().moving, 5.0), bridge.status()
    assert not any(line.startswith(("took off", "taking control")) for line in said), said
    assert sim.count(SETPOINTS, held_at) == 0 and abs(sim.pos[0]) < 0.5


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_refused_arming_is_the_status_in_the_autopilots_words_and_nothing_flies(flown, flavour):
    from cityseeker_ros.core.vehicles.bridge import ARMING_DENIED
    from cityseeker_ros.core.vehicles.mavlink.simulator import SETPOINTS

    sim, bridge = flown(flavour, prearm_failure="Accelerometers not calibrated")
    target = Goal(*destination(HOME[0], HOME[1], 0.0, 25.0), alt_m=4.0)
    bridge.command(target)
    assert wait_for(lambda: bridge.status().code == ARMING_DENIED, 10.0), bridge.status()
    status = bridge.status()
    words = "Preflight Fail" if flavour == "px4" else "PreArm"
    print(f"\n{flavour}: {status.code}: {status.reason}")
    assert f"{words}: Accelerometers not calibrated" in status.reason and "\n" not in status.reason
    assert not status.moving and not sim.armed
    bridge.command(target)  # the same goal again (the supervisor repeats it): not retried
    assert wait_for(lambda: bridge.tick().code == ARMING_DENIED, 1.0)
    from pymavlink.dialects.v20 import ardupilotmega as mavlink

    assert sim.count(SETPOINTS) == 0
    assert sim.count(frozenset(), commands=frozenset({mavlink.MAV_CMD_NAV_TAKEOFF})) == 0
    assert sim.count(frozenset(), commands=frozenset({mavlink.MAV_CMD_COMPONENT_ARM_DISARM})) >= 1
    assert sim.position[2] == 0.0
