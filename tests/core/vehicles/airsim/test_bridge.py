"""The bridge's control step (gate + motion mode + hold-once) against the protocol fake of AirSim's
RPC server (tests/core/vehicles/airsim/fake_flight.py: a protocol fake, not the simulator). The gate runs
on a hand-driven clock; only the motion worker's thread runs in real time, so each test waits
for the fake to see a call rather than sleeping a fixed time."""
from __future__ import annotations

import math
import random
import socket
import time

import numpy as np
import pytest

from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.link import AirSimVehicleLink, BridgeLink, enu_velocity_to_airsim
from cityseeker_ros.core.vehicles.bridge import LINK_ERROR, UNSUPPORTED, BridgeStatus, VehicleBridge, status_level
from cityseeker_ros.core.vehicles.link import LinkError
from cityseeker_ros.core.vehicles.safety import HOLD, EStop, Goal, LatchFile, SafetyConfig, SafetyGate, Velocity
from tests.core.vehicles.airsim.fake_flight import MOTION, FlightFake

ANCHOR = Anchor(lat=43.7384, lon=7.4246, alt=40.0, yaw_offset_deg=30.0)
FENCE = {"circle": {"center": [ANCHOR.lat, ANCHOR.lon], "radius_m": 200.0}}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def wait_for(condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


@pytest.fixture
def flight():
    server = FlightFake()
    yield server
    server.close()


class AirSimBridge:
    """The generic bridge (core/vehicles/bridge.py) over the AirSim vehicle link, with a tick the
    test calls (`step`) and the link's own reads on the test's thread (`kinematics`, `grab`)."""

    def __init__(self, gate: SafetyGate, anchor: Anchor, factory, motion: str = "teleport",
                 motion_params=None, clock=time.monotonic, **bridge) -> None:
        self.link = AirSimVehicleLink(anchor, factory, motion, motion_params)
        self.bridge = VehicleBridge(self.link, gate, clock=clock, **bridge)
        self.gate = gate
        # A decision sent before the first hold is one made before a stop: it never flies. Wait for
        # that hold (a test whose connection fails goes on after the wait).
        wait_for(lambda: self.bridge.holds >= 1, 3.0)

    def __getattr__(self, name: str):  # command, heartbeat, trip_estop, reset_estop, holds, close...
        return getattr(self.bridge, name)

    @property
    def altitude_m(self):
        state = self.bridge.state
        return None if state is None else state.alt_m

    def step(self, now=None) -> BridgeStatus:
        self.bridge.connect_tried.wait(self.bridge.connect_timeout_s + 2.0)
        return self.bridge.tick(now)

    def kinematics(self):
        self.bridge.connect_tried.wait(self.bridge.connect_timeout_s + 2.0)
        if not self.bridge.connected:
            return None
        try:
            self.link.state()
        except LinkError:
            return None
        return self.link.kinematics

    def grab(self, camera: str, depth: bool = False):
        return self.link.grab(camera, depth=depth) if self.bridge.connected else None


def make_bridge(flight: FlightFake, client_name: str, motion: str = "fly", clock: Clock | None = None,
                estop=None, **safety) -> AirSimBridge:
    clock = clock or Clock()
    config = SafetyConfig.from_dict({"geofence": FENCE, "decision_timeout_s": 0.5, "heartbeat_timeout_s": 0.5,
                                     "max_speed_m_s": 4.0, **safety})
    links = []

    def factory(role: str) -> BridgeLink:
        link = BridgeLink("127.0.0.1", flight.port, client=client_name, timeout_s=5.0).connect()
        links.append(link)
        return link

    bridge = AirSimBridge(SafetyGate.from_config(config, clock, estop), ANCHOR, factory, motion=motion,
                          motion_params={"max_speed_mps": 4.0} if motion == "fly" else {}, clock=clock)
    bridge.test_clock = clock
    return bridge


@pytest.fixture
def bridge(flight, client_name):
    made = make_bridge(flight, client_name)
    yield made
    made.close()


def inside(metres: float = 50.0, bearing: float = 45.0, **kw) -> Goal:
    lat, lon = destination(ANCHOR.lat, ANCHOR.lon, bearing, metres)
    return Goal(lat, lon, **kw)


def alive(bridge: AirSimBridge) -> None:
    bridge.heartbeat()


def test_nothing_moves_before_a_decision_and_a_new_bridge_hovers_once_first(bridge, flight):
    """A (re)started bridge holds first, whatever it finds: the one before it may have died mid-flight."""
    alive(bridge)
    bridge.step()
    status = bridge.status()
    # The first status read after connecting also says, once, that AirSim keeps no fence of its own
    # (the safety thread's own ticks in between do not use the note up).
    assert status == BridgeStatus(False, "no_decision", "no decision received yet; the airsim link keeps no "
                                  "geofence on the vehicle: only this bridge fences", False, True)
    assert status_level(status) == "warn"
    for _ in range(5):
        bridge.step()
    assert "moveToPosition" not in flight.methods() and flight.methods().count("hover") == 1


def test_goal_flies_once_at_the_clamped_speed(bridge, flight):
    alive(bridge)
    goal = inside(alt_m=5.0, heading_deg=90.0, speed_m_s=9.0)
    bridge.command(goal)
    status = bridge.step()
    assert status.moving and status.code == "speed_clamped" and status_level(status) == "ok"
    assert wait_for(lambda: flight.params("rotateToYaw"))
    x, y, z, speed = flight.params("moveToPosition")[0][:4]
    np.testing.assert_allclose([x, y, z], ANCHOR.geo_to_airsim(goal.lat, goal.lon, ANCHOR.alt + 5.0), atol=1e-6)
    assert speed == pytest.approx(4.0)
    for _ in range(5):  # the same allowed command is not sent again
        bridge.command(goal)
        bridge.step()
    time.sleep(0.1)
    assert len(flight.params("moveToPosition")) == 1


def test_decisions_stop_then_one_hover_and_resume_sends_again(bridge, flight):
    clock = bridge.test_clock
    alive(bridge)
    goal = inside(heading_deg=0.0)
    bridge.command(goal)
    bridge.step()
    assert wait_for(lambda: flight.params("rotateToYaw"))  # arrived: a hold now cancels nothing in flight
    assert wait_for(lambda: bridge.bridge.door.in_flight == 0)
    hovers = len(flight.params("hover"))  # the one a new bridge sends first
    clock.t += 0.6
    alive(bridge)
    status = bridge.step()
    assert not status.moving and status.code == "no_decision" and "0.6 s > 0.5 s" in status.reason
    for _ in range(10):
        clock.t += 0.05
        alive(bridge)
        bridge.step()
    assert len(flight.params("hover")) == hovers + 1  # once per transition, not every tick
    bridge.command(goal)
    assert bridge.step().moving
    assert wait_for(lambda: len(flight.params("moveToPosition")) == 2)


def test_heartbeat_loss_holds(bridge, flight):
    clock = bridge.test_clock
    alive(bridge)
    bridge.command(inside(heading_deg=0.0))
    bridge.step()
    clock.t += 0.3
    bridge.command(inside(heading_deg=0.0))  # decisions keep coming, the supervisor went silent
    clock.t += 0.3
    status = bridge.step()
    assert status.code == "heartbeat_lost" and not status.moving
    assert flight.params("hover"), "the hold hovered before step() returned"
    assert [m for m in flight.methods() if m in MOTION or m == "hover"][-1] == "hover"


def test_goal_outside_the_fence_is_refused_without_any_call(bridge, flight):
    alive(bridge)
    bridge.command(inside(metres=500.0))
    status = bridge.step()
    assert status.code == "outside_geofence" and not status.moving and "300.0 m outside" in status.reason
    time.sleep(0.1)
    assert "moveToPosition" not in flight.methods() and flight.methods().count("hover") == 1  # the first hold


def test_estop_latches_until_reset(bridge, flight):
    alive(bridge)
    goal = inside(heading_deg=0.0)
    bridge.command(goal)
    bridge.step()
    bridge.trip_estop("/estop", "operator")
    status = bridge.step()
    assert status.estop and status.code == "estop" and status_level(status) == "error"
    bridge.command(goal)
    assert bridge.step().code == "estop"
    assert bridge.reset_estop().ok
    assert bridge.step().code == "hold_requested"  # the command sent while latched does not resume
    bridge.command(goal)
    assert bridge.step().moving


def test_a_restarted_bridge_keeps_the_latch_and_hovers_until_reset(flight, client_name, tmp_path):
    """The e-stop file of a bridge that died latched: the next one hovers once connected and flies
    no goal (however often repeated) until the reset."""
    EStop(LatchFile(tmp_path / "estop.json")).trigger("/estop", "before the restart")
    bridge = make_bridge(flight, client_name, estop=EStop(LatchFile(tmp_path / "estop.json")))
    try:
        goal = inside(heading_deg=0.0)
        for _ in range(5):
            alive(bridge)
            bridge.command(goal)
            status = bridge.step()
            assert status.estop and not status.moving and "before the restart" in status.reason
        assert flight.methods().count("hover") == 1 and not {"moveToPosition", "armDisarm"} & set(flight.methods())
        assert bridge.reset_estop().ok and not (tmp_path / "estop.json").exists()
        bridge.command(goal)
        assert bridge.step().moving
        assert wait_for(lambda: flight.params("moveToPosition"))
    finally:
        bridge.close()


def test_a_held_estop_refuses_the_reset(bridge):
    bridge.trip_estop("/estop", "button", held=True)
    check = bridge.reset_estop()
    assert not check.ok and "still asserted by /estop" in check.reason
    bridge.release_estop("/estop")
    assert bridge.step().estop  # released, still latched
    assert bridge.reset_estop().ok and not bridge.step().estop


def test_teleport_sets_the_pose_and_holds_without_hover(flight, client_name):
    bridge = make_bridge(flight, client_name, motion="teleport")
    try:
        alive(bridge)
        goal = inside(alt_m=2.5, heading_deg=90.0)
        bridge.command(goal)
        assert bridge.step().moving
        assert wait_for(lambda: flight.params("simSetVehiclePose"))
        pose = flight.params("simSetVehiclePose")[0][0]
        xyz = [pose["position"][k] for k in ("x_val", "y_val", "z_val")]
        np.testing.assert_allclose(xyz, ANCHOR.geo_to_airsim(goal.lat, goal.lon, ANCHOR.alt + 2.5), atol=1e-6)
        bridge.test_clock.t += 1.0
        alive(bridge)
        assert bridge.step().code == "no_decision"
        assert "hover" not in flight.methods()
        bridge.command(Velocity(1.0, 0.0))
        status = bridge.step()
        assert status.code == UNSUPPORTED and not status.moving
    finally:
        bridge.close()


def test_velocity_in_airsim_frame_and_repeated_until_hold(bridge, flight):
    alive(bridge)
    bridge.command(Velocity(east_m_s=1.0, north_m_s=0.0, up_m_s=0.5, yaw_rate_deg_s=10.0))
    assert bridge.step().moving
    assert wait_for(lambda: len(flight.params("moveByVelocity")) >= 2, 5.0)  # 0.5 s slices, re-sent
    vx, vy, vz, duration, _, yaw_mode = flight.params("moveByVelocity")[0][:6]
    # east in a map turned 30 degrees clockwise from north: x = sin(30), y = cos(30); up is -z
    np.testing.assert_allclose([vx, vy, vz], [math.sin(math.radians(30)), math.cos(math.radians(30)), -0.5],
                               atol=1e-9)
    assert duration == pytest.approx(0.5) and yaw_mode["is_rate"] and yaw_mode["yaw_or_rate"] == -10.0
    bridge.command(HOLD)
    status = bridge.step()
    assert status.code == "hold_requested"
    assert wait_for(lambda: flight.params("hover"))
    count = len(flight.params("moveByVelocity"))
    time.sleep(0.7)
    assert len(flight.params("moveByVelocity")) <= count + 1  # at most the slice already in flight


def test_enu_velocity_round_trips_through_the_anchor():
    v = Velocity(east_m_s=0.3, north_m_s=-1.2, up_m_s=0.7)
    ned, _ = enu_velocity_to_airsim(ANCHOR, v)
    np.testing.assert_allclose(ANCHOR.airsim_to_enu(ned), [0.3, -1.2, 0.7], atol=1e-12)


def test_unreachable_airsim_reports_link_error_and_reconnects(client_name):
    with socket.socket() as probe:  # a free port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clock = Clock()
    config = SafetyConfig.from_dict({"geofence": FENCE, "heartbeat_timeout_s": None})
    made = []

    def factory(role: str) -> BridgeLink:
        made.append(role)
        return BridgeLink("127.0.0.1", port, client=client_name, timeout_s=2.0, connect_timeout_s=0.5).connect()

    bridge = AirSimBridge(SafetyGate.from_config(config, clock), ANCHOR, factory, clock=clock,
                          reconnect_period_s=2.0)
    status = bridge.step()
    assert status.code == LINK_ERROR and not status.connected and "cannot reach AirSim" in status.reason
    assert status_level(status) == "error"
    bridge.step()
    assert made == ["control"]  # no retry before reconnect_period_s
    clock.t += 2.5
    assert wait_for(lambda: made == ["control", "control"], 3.0)
    time.sleep(0.1)
    assert made == ["control", "control"]
    assert bridge.kinematics() is None and bridge.grab("front") is None


def test_motion_failure_drops_the_link_and_holds(bridge, flight):
    alive(bridge)
    flight.fail.add("moveToPosition")
    bridge.command(inside(heading_deg=0.0))
    bridge.step()
    assert wait_for(lambda: bridge.step().code == LINK_ERROR)
    status = bridge.step()
    assert status.code == LINK_ERROR and "moveToPosition" in status.reason
    flight.fail.clear()
    bridge.test_clock.t += 3.0
    alive(bridge)
    assert wait_for(lambda: bridge.step().code != LINK_ERROR)  # reconnected
    assert not bridge.step().moving  # the goal flown when the link failed is forgotten
    bridge.command(inside(heading_deg=0.0))
    assert bridge.step().moving  # the fresh command flies again
    assert wait_for(lambda: len(flight.params("moveToPosition")) == 2)


def test_kinematics_updates_altitude_for_the_ceiling(bridge, flight):
    flight.position = {"x_val": 0.0, "y_val": 0.0, "z_val": -12.0}
    alive(bridge)
    state = bridge.kinematics()
    assert state.alt == pytest.approx(52.0)
    assert wait_for(lambda: bridge.altitude_m == pytest.approx(12.0))  # the bridge's next telemetry read
    frame = bridge.grab("front", depth=True)
    assert frame.rgb.shape == (6, 8, 3) and frame.depth_m.shape == (6, 8)


# -- no motion after a hold: random instants against AirSim's task semantics ----------------------

TRIALS = 200
TASK_S, LATENCY_S = 0.03, 0.010  # each motion task runs 30 ms unless cancelled; requests wait 0-10 ms


def trip(bridge: AirSimBridge, kind: str) -> None:
    if kind == "estop":
        bridge.trip_estop("/estop", "trial")
    else:  # the decision watchdog fires (0.5 s without a decision); the heartbeat stays fresh
        bridge.test_clock.t += 0.6
        alive(bridge)


def sleep_until(t: float) -> None:
    while time.monotonic() < t:
        pass


@pytest.mark.parametrize("kind", ["estop", "watchdog"])
def test_no_motion_reaches_the_vehicle_after_a_hold(client_name, kind):
    """A goal, then a hold at a random instant: 0-6 ms after the goal was submitted (the move may
    still be on its way and overtake the first hover) or in the middle of the move with the turn
    still to come. When step() returns the hold, the vehicle runs no task, the last call it took
    was a hover, and it takes no motion call afterwards."""
    flight = FlightFake(task_s=TASK_S, latency_s=LATENCY_S, seed=7)
    bridge = make_bridge(flight, client_name)
    rng = random.Random(11)
    failures: list[str] = []
    after_hover = after_report = moving_at_report = mid_move = overtaken = 0
    hold_s: list[float] = []
    overtaker_s = [0.0]  # how long an in-flight call that landed after the first hover ran
    try:
        for trial in range(TRIALS):
            alive(bridge)
            start = time.monotonic()
            bridge.command(inside(metres=rng.uniform(20.0, 80.0), bearing=rng.uniform(0.0, 360.0),
                                  heading_deg=rng.uniform(0.0, 360.0)))
            assert bridge.step().moving
            if trial % 2 == 0:
                sleep_until(start + rng.uniform(0.0, 0.006))
            else:  # mid-move: the turn is still pending
                assert wait_for(lambda since=start: flight.timed("moveToPosition", after=since))
                sleep_until(time.monotonic() + rng.uniform(0.0, 0.8 * TASK_S))
                mid_move += 1
            held = time.monotonic()  # before the trip: the safety thread may hover before trip() returns
            trip(bridge, kind)
            status = bridge.step()
            reported = time.monotonic()
            hold_s.append(reported - held)
            assert not status.moving and status.code == ("estop" if kind == "estop" else "no_decision")
            assert wait_for(lambda: bridge.bridge.door.in_flight == 0, 5.0)  # nothing more is out
            calls = [(t, name) for t, name, _ in flight.timed(after=start) if name in MOTION or name == "hover"]
            last_hover = max(i for i, (_, name) in enumerate(calls) if name == "hover")
            first_hover = min(t for t, name in calls if name == "hover" and t > held)
            late = [name for _, name in calls[last_hover + 1:]]
            after_hover += len(late)
            after_report += sum(1 for t, _ in calls if t > reported)
            running = [task.method for task in flight.tasks if task.method != "hover"
                       and task.start < reported and (task.end is None or task.end > reported)]
            moving_at_report += len(running)
            overtakers = [task for task in flight.tasks if task.start > first_hover and task.method in MOTION]
            overtaken += bool(overtakers)
            overtaker_s += [task.end - task.start for task in overtakers]
            if late or running:
                failures.append(f"trial {trial}: after the last hover {late}, running when held {running}")
            if kind == "estop":
                assert bridge.reset_estop().ok
    finally:
        bridge.close()
        flight.close()
    print(f"\n{kind}: {TRIALS} trials ({mid_move} mid-move), motion calls after the last hover: {after_hover}, "
          f"after the hold was reported: {after_report}, tasks running when reported: {moving_at_report}; "
          f"first hover overtaken by a call sent before the hold in {overtaken} trials (it ran "
          f"{1000 * max(overtaker_s):.1f} ms at most, until a re-hover or its end); "
          f"hold took p50 {1000 * sorted(hold_s)[len(hold_s) // 2]:.1f} ms, max {1000 * max(hold_s):.1f} ms")
    assert (after_hover, after_report, moving_at_report) == (0, 0, 0), failures[:10]
    # The dangerous interleaving really happened: holds came mid-move. Overtaking by random latency
    # is rare once the link sends nothing after a hover (before issue 30's fix the turn sent after
    # the hover counted here too): test_estop_race.py forces a move to overtake the hover.
    assert mid_move == TRIALS // 2
