"""Issue 23's acceptance at the core level: the generic `VehicleBridge` driving the MAVLink link
against the shipped simulator over real MAVLink 2 on loopback UDP, for PX4 and ArduPilot. No ROS.

Every claim is a count at the simulator (what it received, and when) taken after an event the test
waited for, never a sleep followed by "nothing happened". "Motion" is what can move the vehicle:
setpoints, arming, takeoff, land, return, speed changes and mode changes into anything but a stop
mode; a hold is a stop, so a mode change into the hold mode is not motion.
"""
from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.streets.geodesy import destination, geodesic_m
from cityseeker_ros.core.vehicles.bridge import CIRCLE_VERTICES, LINK_ERROR, PILOT_OVERRIDE, VehicleBridge
from cityseeker_ros.core.vehicles.link import LinkError
from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
from cityseeker_ros.core.vehicles.mavlink.simulator import MOTION_COMMANDS, SETPOINTS, MavlinkSimulator
from cityseeker_ros.core.vehicles.safety import EStop, Goal, SafetyConfig, SafetyGate
from cityseeker_ros.core.vehicles.sim import SimulatedWalker, WalkerLink
from tests.core.vehicles.mavlink.conftest import FAST, HOME, free_udp_port

FLAVOURS = ["px4", "ardupilot"]
REPO = Path(__file__).resolve().parents[3]
# A polygon about 220 m north-south and 200 m east-west around home, and a 40 m ceiling.
POLYGON = [[HOME[0] - 0.001, HOME[1] - 0.0013], [HOME[0] - 0.001, HOME[1] + 0.0013],
           [HOME[0] + 0.001, HOME[1] + 0.0013], [HOME[0] + 0.001, HOME[1] - 0.0013]]
SAFETY = {"geofence": {"polygon": POLYGON}, "heartbeat_timeout_s": None, "decision_timeout_s": 60.0,
          "max_altitude_m": 40.0, "max_speed_m_s": 8.0}
RACE_TRIALS = 200  # per flavour, the hold tripped 0-10 ms after a goal
MID_MOVE_TRIALS = 10  # per flavour, the hold tripped while the vehicle flies at speed
DO_SET_MODE = mavlink.MAV_CMD_DO_SET_MODE


class RecordingSimulator(MavlinkSimulator):
    """The shipped simulator, also noting which mode each MAV_CMD_DO_SET_MODE asked for and when, so
    that a hold can be told from a take-over of control."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mode_requests: list[tuple[float, str]] = []

    def _mode_command(self, msg: Any) -> int:
        custom = int(msg.param2) << 16 | int(msg.param3) << 24 if self.flavour.name == "px4" else int(msg.param2)
        self.mode_requests.append((time.monotonic(), self.flavour.mode_name(custom)))
        return super()._mode_command(msg)

    @property
    def stop_modes(self) -> frozenset[str]:
        f = self.flavour
        return frozenset({f.hold_mode, f.land_mode, f.rtl_mode})

    def requests_after(self, since: float, stop: Optional[bool] = None) -> list[tuple[float, str]]:
        """Mode requests after `since`: all, only stops (True) or only the others (False)."""
        with self._lock:
            requests = list(self.mode_requests)
        return [(t, m) for t, m in requests if t > since and (stop is None or (m in self.stop_modes) == stop)]

    def motion_after(self, since: float) -> int:
        return self.count(SETPOINTS, since, MOTION_COMMANDS - {DO_SET_MODE}) + len(self.requests_after(since, False))

    @property
    def speed(self) -> float:
        with self._lock:
            return (self.vel[0] ** 2 + self.vel[1] ** 2) ** 0.5


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Seconds until `condition` held; fails naming `what`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"{what}: not within {timeout_s} s")
        time.sleep(0.002)
    return time.monotonic() - started


def sent_more(sim: MavlinkSimulator, n: int) -> Callable[[], bool]:
    """True once the simulator sent `n` more datagrams (its 10 Hz telemetry: n/20 s or so)."""
    start = sim.sent
    return lambda: sim.sent >= start + n


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def same_polygon(polygon: Any, expected: list[list[float]]) -> bool:
    """Equal at MAVLink's 1e-7 degree resolution."""
    return len(polygon) == len(expected) and all(abs(a - b) < 1.5e-7 for v, w in zip(polygon, expected)
                                                 for a, b in zip(v, w))


def one_line(text: str) -> bool:
    return "\n" not in text and len(text) < 400


@pytest.fixture
def stack():
    """make(flavour, sim={...}, link={...}, safety={...}, estop=..., **bridge) -> (simulator, bridge),
    the bridge connected (fence uploaded) and held first; all closed after the test."""
    made: list[tuple[MavlinkSimulator, VehicleBridge]] = []

    def make(flavour: str, sim: Optional[dict] = None, link: Optional[dict] = None, safety: Optional[dict] = None,
             estop: Optional[EStop] = None, wait: bool = True, **bridge_kw: Any):
        port = free_udp_port()
        simulator = RecordingSimulator(flavour, port, home=HOME, **{**FAST, **(sim or {})}).start()
        gate = SafetyGate.from_config(SafetyConfig.from_dict({**SAFETY, **(safety or {})}), estop=estop)
        bridge = VehicleBridge(MavlinkLink(f"udp://127.0.0.1:{port}", **(link or {})), gate, **bridge_kw)
        made.append((simulator, bridge))
        if wait:
            wait_for(lambda: bridge.connected and bridge.status().code != LINK_ERROR and bridge.stops
                     and bridge.state is not None and bridge.state.position_known, 20.0, "connected and held")
        return simulator, bridge

    yield make
    for simulator, bridge in made:
        bridge.close()
        simulator.close()


def airborne(bridge: VehicleBridge, alt_m: float = 5.0) -> None:
    """Armed and hovering (the bridge has no arm or takeoff: whoever owns the vehicle does that)."""
    bridge.link.arm()
    bridge.link.takeoff(alt_m, timeout_s=15.0)


def goal_at(bearing_deg: float, metres: float, alt_m: float = 5.0) -> Goal:
    return Goal(*destination(HOME[0], HOME[1], bearing_deg, metres), alt_m=alt_m)


# -- 1. the fence goes to the autopilot ------------------------------------------------------------------

@pytest.mark.parametrize("flavour", FLAVOURS)
def test_the_bridge_uploads_the_safety_fence_on_connect_and_after_a_reconnect(stack, flavour):
    sim, bridge = stack(flavour, link={"command_timeout_s": 0.2, "command_retries": 3}, reconnect_period_s=0.2,
                        fence_breach_action="rtl")
    held = bridge.link.read_fence()
    assert held == bridge.fence
    assert same_polygon(held.polygon, POLYGON) and held.max_alt_m == 40.0 and held.breach_action == "rtl"
    assert len(sim.fence) == 4
    # the link fails mid-move (a silent vehicle refuses the hold), so the bridge reconnects; meanwhile
    # the vehicle "reboots" without its fence: the reconnect puts it back
    airborne(bridge)
    bridge.command(goal_at(0.0, 60.0))
    wait_for(lambda: sim.speed > 2.0, 10.0, "flying north")
    sim.stop_answering()
    wait_for(lambda: "failed" in bridge.status().reason, 10.0, "the hold on a silent vehicle failed")
    sim.fence = []
    sim.resume_answering()
    wait_for(lambda: len(sim.fence) == 4 and bridge.connected and bridge.status().code != LINK_ERROR, 15.0,
             "reconnected with the fence uploaded again")
    assert bridge.link.read_fence() == held


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_circular_fence_goes_up_as_the_polygon_around_it(stack, flavour):
    radius = 150.0
    sim, bridge = stack(flavour, safety={"geofence": {"circle": {"center": list(HOME[:2]), "radius_m": radius}}})
    held = bridge.link.read_fence()
    assert len(held.polygon) == CIRCLE_VERTICES and held.breach_action == "hold"
    corners = [geodesic_m(HOME[0], HOME[1], lat, lon) for lat, lon in held.polygon]
    assert all(radius < d < radius * 1.03 for d in corners), corners  # the circle lies inside


def test_a_link_without_a_fence_says_so_once_in_the_status():
    """Once to the reader of the status, however many ticks the safety thread makes before it reads."""
    bridge = VehicleBridge(WalkerLink(SimulatedWalker(*HOME[:2])),
                           SafetyGate.from_config(SafetyConfig.from_dict(SAFETY)))
    try:
        wait_for(lambda: bridge.stops and bridge.connected, 5.0, "connected")
        for _ in range(20):
            bridge.tick()
        assert bridge.moving is False  # reading the motion does not use the note up
        first = bridge.status()
        assert "keeps no geofence on the vehicle" in first.reason and bridge.fence is None
        bridge.tick()
        assert "geofence" not in bridge.status().reason
    finally:
        bridge.close()


# -- 2. the e-stop race ------------------------------------------------------------------------------------

@dataclass
class Trial:
    delay_s: Optional[float]  # None: tripped mid-move
    submitted: bool  # the bridge had given the goal to its motion thread (so it sent a hold)
    in_flight: bool  # a motion call was out when the hold came
    hold_latency_s: Optional[float]  # the trip to the first hold the simulator received
    setpoints_after_hold: int
    motion_after_hold: int


def race_trial(sim: RecordingSimulator, bridge: VehicleBridge, goal: Goal, delay_s: Optional[float]) -> Trial:
    assert bridge.reset_estop().ok
    stops, interrupted = len(bridge.stops), bridge.door.interrupted
    t_goal = time.monotonic()
    bridge.command(goal)
    if delay_s is None:
        wait_for(lambda: sim.speed > 2.0, 10.0, "flying towards the goal")
    else:
        while time.monotonic() < t_goal + delay_s:
            pass  # a busy wait: a sleep this short is not kept
    t_trip = time.monotonic()
    bridge.trip_estop("race")
    try:
        wait_for(lambda: bridge.status().code == "estop" and bridge.door.in_flight == 0, 15.0, "held after the trip")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; {where_things_stand(sim, bridge, t_trip)}") from None
    submitted = len(bridge.stops) > stops
    if submitted:
        wait_for(lambda: sim.requests_after(t_trip, stop=True), 2.0, "the simulator received the hold")
    holds = sim.requests_after(t_trip, stop=True)
    wait_for(sent_more(sim, 4), 2.0, "four more datagrams from the vehicle")  # a 10 Hz stream had its chance
    since = holds[0][0] if holds else t_trip
    return Trial(delay_s, submitted, bridge.door.interrupted > interrupted,
                 holds[0][0] - t_trip if holds else None, sim.count(SETPOINTS, since), sim.motion_after(since))


def where_things_stand(sim: RecordingSimulator, bridge: VehicleBridge, since: float) -> str:
    """What a failed wait needs to be explained: the bridge's view, the vehicle's and the wire's."""
    status = bridge.status()
    try:
        state = bridge.link.state()
        link = f"link mode {state.mode}, foreign {state.foreign_mode}"
    except LinkError as exc:
        link = f"link state: {exc}"
    events = [(round(t - since, 3), line) for t, line in bridge.events if t > since - 1.0]
    steps = [f"{s.before.value} -{s.event.value}-> {s.after.value}" + (f" sends {s.send.value}" if s.send else "")
             for s in bridge.authority.history[-6:]]
    return (f"status {status.code} ({status.reason}); authority {bridge.authority.state.value}; door in flight "
            f"{bridge.door.in_flight}, epoch {bridge.door.epoch}; {link}; simulator mode {sim.mode}, modes asked "
            f"since the trip {[(round(t - since, 3), m) for t, m in sim.requests_after(since)]}; "
            f"connect attempts {bridge._connect_attempts}; last authority steps {steps}; bridge events {events}; "
            f"threads in this process {threading.active_count()}")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_estop_race_no_motion_reaches_the_vehicle_after_its_hold(stack, flavour):
    sim, bridge = stack(flavour)
    airborne(bridge)
    connects = bridge._connect_attempts
    rng = random.Random(23)
    started = time.monotonic()
    trials = [race_trial(sim, bridge, goal_at(rng.uniform(0, 360), rng.uniform(10, 30)), rng.uniform(0.0, 0.010))
              for _ in range(RACE_TRIALS)]
    trials += [race_trial(sim, bridge, goal_at(rng.uniform(0, 360), 60.0), None) for _ in range(MID_MOVE_TRIALS)]
    elapsed = time.monotonic() - started
    latencies = [t.hold_latency_s for t in trials if t.hold_latency_s is not None]
    in_flight = sum(t.in_flight for t in trials[:RACE_TRIALS])
    setpoints = sum(t.setpoints_after_hold for t in trials)
    motion = sum(t.motion_after_hold for t in trials)
    print(f"\n{flavour} e-stop race: {RACE_TRIALS} trials 0-10 ms after a goal + {MID_MOVE_TRIALS} mid-move in "
          f"{elapsed:.1f} s; goals handed to the motion thread {sum(t.submitted for t in trials)}, motion call in "
          f"flight at the hold {in_flight} (+{sum(t.in_flight for t in trials[RACE_TRIALS:])} mid-move); "
          f"setpoints after the hold {setpoints}, motion after the hold {motion}; hold latency p50 "
          f"{statistics.median(latencies) * 1e3:.1f} ms p95 {percentile(latencies, 0.95) * 1e3:.1f} ms max "
          f"{max(latencies) * 1e3:.1f} ms over {len(latencies)} holds")
    assert in_flight > 0  # the dangerous interleaving happened
    assert setpoints == 0 and motion == 0, [t for t in trials if t.setpoints_after_hold or t.motion_after_hold]
    assert all(t.hold_latency_s is not None for t in trials if t.submitted)
    assert percentile(latencies, 0.95) < 0.1 and max(latencies) < 0.5
    assert bridge._connect_attempts == connects  # no trial made the bridge think the link failed
    assert sim.speed < 0.5


# -- 2. link loss under packet loss --------------------------------------------------------------------------

LOSSY_LINK = {"command_timeout_s": 0.2, "command_retries": 20}  # link_loss_s: the default


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_link_loss_at_30_percent_drop_is_reported_within_a_second_and_nothing_moves_after(stack, flavour):
    sim, bridge = stack(flavour, sim={"drop": 0.3, "seed": 11}, link=LOSSY_LINK, connect_timeout_s=5.0)
    airborne(bridge)
    bridge.command(goal_at(0.0, 60.0))
    wait_for(lambda: sim.speed > 2.0, 15.0, "flying north")
    silenced = time.monotonic()
    sim.stop_answering()
    detected = wait_for(lambda: bridge.status().code == LINK_ERROR, 3.0, "link loss reported")
    print(f"\n{flavour}: link loss reported {detected:.3f} s after the vehicle fell silent (30% drop before)")
    assert detected < 1.0
    assert bridge.status().moving  # not "holding": no hold reached the vehicle yet
    back = time.monotonic()
    sim.resume_answering()
    wait_for(lambda: bridge.status().code != LINK_ERROR and not bridge.status().moving, 10.0, "back and holding")
    wait_for(sent_more(sim, 30), 5.0, "thirty more datagrams from the vehicle")  # ~2 s of telemetry
    assert sim.motion_after(back) == 0, sim.requests_after(back)
    assert sim.requests_after(back, stop=True)  # it held
    new_goal = time.monotonic()
    bridge.command(goal_at(180.0, 20.0))
    wait_for(lambda: sim.motion_after(new_goal) > 0, 10.0, "the new goal flown")
    assert silenced < back < new_goal


# -- 2. pilot takeover ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("flavour, pilot_mode", [("px4", "POSCTL"), ("ardupilot", "LOITER")])
def test_pilot_takeover_mid_move_stops_the_stack(stack, flavour, pilot_mode):
    sim, bridge = stack(flavour)
    airborne(bridge)
    bridge.command(goal_at(0.0, 60.0))
    wait_for(lambda: sim.speed > 2.0, 10.0, "flying north")
    switched = time.monotonic()
    sim.rc_mode_switch(pilot_mode)
    took = wait_for(lambda: bridge.status().code == PILOT_OVERRIDE, 2.0, "pilot_override reported")
    seen = time.monotonic()
    assert pilot_mode in bridge.status().reason and not bridge.status().moving
    for bearing in (90.0, 180.0, 270.0):  # the stack keeps deciding
        bridge.command(goal_at(bearing, 20.0))
        wait_for(sent_more(sim, 10), 3.0, "ten more datagrams from the vehicle")
    from_stack = sim.count(SETPOINTS, seen, frozenset({DO_SET_MODE}) | MOTION_COMMANDS)
    print(f"\n{flavour}: pilot_override reported {took:.3f} s after the RC switch; setpoints and commands "
          f"after it {from_stack}, after the switch itself {sim.count(SETPOINTS, switched, MOTION_COMMANDS)}")
    assert from_stack == 0 and sim.mode == pilot_mode


# -- 2. errors a user can act on -----------------------------------------------------------------------------

@pytest.mark.parametrize("flavour, reason", [("px4", "Preflight Fail: Compass not calibrated"),
                                             ("ardupilot", "PreArm: Compass not calibrated")])
def test_arming_denied_names_the_autopilots_reason_in_one_line(stack, flavour, reason):
    sim, bridge = stack(flavour, sim={"prearm_failure": "Compass not calibrated"})
    with pytest.raises(LinkError) as refused:
        bridge.link.arm()
    print(f"\n{flavour}: {refused.value}")
    assert reason in str(refused.value) and "arming refused" in str(refused.value) and one_line(str(refused.value))
    assert not sim.armed


def test_an_unreachable_endpoint_is_one_line_within_five_seconds():
    port = free_udp_port()
    gate = SafetyGate.from_config(SafetyConfig.from_dict(SAFETY))
    started = time.monotonic()
    bridge = VehicleBridge(MavlinkLink(f"udp://127.0.0.1:{port}"), gate)
    try:
        elapsed = wait_for(lambda: "no MAVLink heartbeat" in bridge.status().reason, 5.0, "the error in the status")
        elapsed = time.monotonic() - started
        status = bridge.status()
        print(f"\nunreachable: {elapsed:.2f} s: {status.reason}")
        assert elapsed < 5.0 and status.code == LINK_ERROR and not status.connected and one_line(status.reason)
        assert f"no MAVLink heartbeat on udp://127.0.0.1:{port}" in status.reason
    finally:
        bridge.close()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_wrong_system_id_names_the_ids_heard(stack, flavour):
    sim, bridge = stack(flavour, link={"system_id": 7}, wait=False)
    wait_for(lambda: "no heartbeat from" in bridge.status().reason, 6.0, "the error in the status")
    status = bridge.status()
    print(f"\n{flavour}: {status.reason}")
    assert status.code == LINK_ERROR and one_line(status.reason)
    assert "no heartbeat from system 7" in status.reason
    assert f"heard system 1 component 1 ({flavour} quadrotor" in status.reason
    assert sim.motion_after(0.0) == 0


# -- 2. the fence, on both sides ---------------------------------------------------------------------------

@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_goal_outside_the_fence_is_refused_before_anything_is_sent(stack, flavour):
    sim, bridge = stack(flavour)
    airborne(bridge)
    fence = bridge.link.read_fence()
    assert same_polygon(fence.polygon, POLYGON) and fence.max_alt_m == 40.0
    sent = time.monotonic()
    verdict = bridge.command(goal_at(0.0, 300.0))  # 190 m beyond the northern edge
    assert verdict.code.value == "outside_geofence" and not verdict.moving
    wait_for(lambda: bridge.status().code == "outside_geofence", 2.0, "the refusal in the status")
    wait_for(sent_more(sim, 20), 3.0, "twenty more datagrams from the vehicle")
    assert sim.motion_after(sent) == 0 and not bridge.status().moving
    inside = time.monotonic()
    bridge.command(goal_at(0.0, 30.0))  # the same way, inside: flown
    wait_for(lambda: sim.motion_after(inside) > 0, 5.0, "a goal inside flown")


# -- 2. a latched e-stop outlives the process --------------------------------------------------------------

def start_bridge_process(tmp: Path, port: int, goal: Goal, takeoff: float = 0.0) -> subprocess.Popen:
    status = tmp / "status.json"
    status.unlink(missing_ok=True)
    command = [sys.executable, "-m", "tests.core.vehicles.bridge_process", "--endpoint", f"udp://127.0.0.1:{port}",
               "--latch", str(tmp / "estop.json"), "--trip", str(tmp / "trip"), "--reset", str(tmp / "reset"),
               "--status", str(status), "--goal", f"{goal.lat},{goal.lon},{goal.alt_m}", "--safety",
               json.dumps(SAFETY), "--takeoff", str(takeoff)]
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=open(tmp / "stderr.txt", "ab"))


def child_status(tmp: Path) -> dict:
    try:
        return json.loads((tmp / "status.json").read_text())
    except (OSError, ValueError):
        return {}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_latched_estop_survives_sigkill_and_restart(tmp_path, flavour):
    port = free_udp_port()
    goal = goal_at(0.0, 60.0)
    children: list[subprocess.Popen] = []
    with RecordingSimulator(flavour, port, home=HOME, **FAST) as sim:
        try:
            children.append(start_bridge_process(tmp_path, port, goal, takeoff=5.0))
            wait_for(lambda: sim.speed > 2.0 and child_status(tmp_path).get("moving"), 40.0, "the first bridge flies")
            (tmp_path / "trip").touch()
            wait_for(lambda: child_status(tmp_path).get("code") == "estop", 5.0, "the first bridge holds")
            assert (tmp_path / "estop.json").exists()
            children[0].send_signal(signal.SIGKILL)
            assert children[0].wait(5.0) == -signal.SIGKILL
            (tmp_path / "trip").unlink()
            restarted = time.monotonic()
            children.append(start_bridge_process(tmp_path, port, goal))
            wait_for(lambda: child_status(tmp_path).get("decisions", 0) >= 20, 40.0,
                     "the new bridge repeated the goal 20 times")
            status = child_status(tmp_path)
            assert status["pid"] == children[1].pid and status["estop"] and status["code"] == "estop"
            assert "trip file" in status["reason"] and not status["moving"]
            assert sim.requests_after(restarted, stop=True)  # it started by holding
            motion = sim.motion_after(restarted)
            print(f"\n{flavour}: motion at the vehicle after the restart, before the reset: {motion}")
            assert motion == 0
            reset = time.monotonic()
            (tmp_path / "reset").touch()
            wait_for(lambda: sim.motion_after(reset) > 0 and child_status(tmp_path).get("moving"), 15.0,
                     "moving again after the reset")
            assert not (tmp_path / "estop.json").exists()
        finally:
            for child in children:
                if child.poll() is None:
                    os.kill(child.pid, signal.SIGKILL)
                    child.wait(5.0)
