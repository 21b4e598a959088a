"""`cityseeker seek "I am thirsty" --vehicle mavlink:udp://127.0.0.1:PORT --safety-config config/safety.yaml`
end to end over real DDS on loopback, against the shipped MAVLink simulator (PX4 and ArduPilot rules)
running in this pytest process: the vehicle waits on the ground at the street-graph node nearest the
centre of config/safety.yaml's fence, the bridge uploads the fence, arms, takes off, takes control
and flies each decision; the command prints what the bridge waits for. Then a pilot takes over
mid-Seek (the simulator's RC mode switch): the Seek ends `pilot_override` and the simulator gets no
setpoint or mode command after it; a link lost mid-Seek ends it `link_lost`, and nothing flies after
the link returns. Every claim is a count or a position the simulator recorded."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.streets.geodesy import geodesic_m
from cityseeker_ros.core.vehicles.mavlink.simulator import MOTION_COMMANDS, SETPOINTS, MavlinkSimulator
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.ros.seek_outcome import EXIT_LINK_LOST, EXIT_PILOT_OVERRIDE
from tests.ros.test_runner import REPO

SAFETY = REPO / "config" / "safety.yaml"
TINY_VIEWS = ["--source-param", "views=rendered", "--source-param", 'view_params={"width": 32, "height": 24}']
TAKEOVER_MODE = {"px4": "POSCTL", "ardupilot": "LOITER"}
NEAR_M = 4.0  # the flown track passes each node of the path within this
# The vehicle's own climbs and speeds within config/safety.yaml's limits (1 m/s vertical, 3 m/s): the
# flight-rules monitor beside the bridge judges them too, as it would a real autopilot's parameters.
WITHIN_LIMITS = {"max_climb_m_s": 1.0, "max_descent_m_s": 1.0, "cruise_m_s": 3.0, "max_speed_m_s": 3.0}
LAST_M = 15.0  # ... but the last, which the hold that ends the Seek may cut short


def free_udp_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Track:
    """The simulator's position every 50 ms, on a thread, until stopped."""

    def __init__(self, sim: MavlinkSimulator) -> None:
        self.sim, self.points = sim, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.points.append(self.sim.position)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(1.0)


def home_node(monaco_dir: Path):
    world = load_dataset(monaco_dir)[0]
    fence = load_safety_config(str(SAFETY)).geofence
    node_id, _ = world.graph.nearest_nodes(fence.lat, fence.lon, 1)[0]
    node = world.graph.nodes[node_id]
    assert geodesic_m(node.lat, node.lon, fence.lat, fence.lon) < fence.radius_m / 2
    return world, node_id, node


def seek(monaco_dir: Path, port: int, tmp_path: Path, domain: int, max_steps: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cityseeker_ros", "seek", "I am thirsty", "--vehicle", f"mavlink:udp://127.0.0.1:{port}",
         "--link-param", "takeoff_alt_m=5", "--safety-config", str(SAFETY), "--world", str(monaco_dir),
         "--policy", "random", "--max-steps", str(max_steps), "--source", "replay", *TINY_VIEWS,
         "--result", str(tmp_path / "result.json"), "--out", str(tmp_path / "run"), "--domain-id", str(domain),
         "--timeout", "150"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def logs(tmp_path: Path) -> str:
    folder = tmp_path / "run" / "ros"
    return "".join(f"\n--- {p.name} ---\n{p.read_text()[-2500:]}" for p in sorted(folder.glob("*.log")))


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_seek_flies_a_mavlink_vehicle_along_the_decided_path(monaco_dir, ros_domain, tmp_path, flavour):
    world, node_id, node = home_node(monaco_dir)
    port = free_udp_port()
    with MavlinkSimulator(flavour, port, home=(node.lat, node.lon, 10.0), **WITHIN_LIMITS) as sim:
        track = Track(sim)
        started = time.monotonic()
        process = seek(monaco_dir, port, tmp_path, ros_domain, 3)
        output, _ = process.communicate(timeout=200)
        took = time.monotonic() - started
        track.stop()
        assert process.returncode == 0, output + logs(tmp_path)
        result = json.loads((tmp_path / "result.json").read_text())
        fence = list(sim.fence)
        # the Seek ended in a hold the stack commanded, not in the autopilot's offboard-loss failsafe
        ended = (sim.mode, sim.armed, list(sim.failsafes))
    assert ended == (sim.flavour.hold_mode, True, []), ended
    print(f"\n{flavour}: {took:.0f} s\n{output}")
    assert result["status"] == "succeeded" and result["outcome"] in ("found", "budget"), result
    path = result["path"]
    assert path[0] == node_id and len(path) == result["steps"] + 1
    # what the bridge waited for, printed by the command
    said = [line for line in output.splitlines() if line.startswith("vehicle: ")]
    for words in ("waiting for the autopilot's heartbeat", "connected: ", "arming", "taking off to 5 m",
                  "took off in", "in control ("):
        assert any(words in line for line in said), (words, said)
    # the track passes near each node of the path, in order
    index, distances = 0, []
    for step in path:
        n = world.graph.nodes[step]
        d = [geodesic_m(lat, lon, n.lat, n.lon) for lat, lon, _ in track.points]
        best = min(range(index, len(d)), key=d.__getitem__)
        distances.append(round(d[best], 2))
        index = best
    print(f"{flavour}: path {path}; nearest approach to each node (m): {distances}")
    # the last goal may be cut short: the budget ends the Seek (and the vehicle holds) on its way there
    assert all(d < NEAR_M for d in distances[:-1]) and distances[-1] < LAST_M, distances
    # the geofence is on the simulated autopilot: the 16-gon around the circle
    assert len(fence) == 16


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_pilot_who_takes_over_mid_seek_ends_it_and_nothing_more_is_sent(monaco_dir, ros_domain, tmp_path, flavour):
    _, _, node = home_node(monaco_dir)
    port = free_udp_port()
    with MavlinkSimulator(flavour, port, home=(node.lat, node.lon, 10.0), **WITHIN_LIMITS) as sim:
        process = seek(monaco_dir, port, tmp_path, ros_domain, 30)
        deadline = time.monotonic() + 120
        while not (sim.mode == sim.flavour.control_mode and sim.count(SETPOINTS) > 0
                   and abs(sim.vel[0]) + abs(sim.vel[1]) > 0.5):
            assert process.poll() is None and time.monotonic() < deadline, logs(tmp_path)
            time.sleep(0.02)
        switched = time.monotonic()
        sim.rc_mode_switch(TAKEOVER_MODE[flavour])
        output, _ = process.communicate(timeout=120)
        ended = time.monotonic()
        late = sim.count(SETPOINTS, switched + 0.3) + sim.count(frozenset(), switched + 0.3, MOTION_COMMANDS)
        in_flight = sim.count(SETPOINTS, switched) - sim.count(SETPOINTS, switched + 0.3)
        mode = sim.mode
    result = json.loads((tmp_path / "result.json").read_text())
    print(f"\n{flavour}: takeover -> seek ended in {ended - switched:.1f} s; setpoints within 0.3 s of the "
          f"switch {in_flight}, setpoints or mode commands after {late}; result {result['outcome']} "
          f"({result['code']}): "
          f"{result['reason']}")
    # the Seek result's words: an end of its own, not a failure (ros/seek_outcome.py)
    assert (result["outcome"], result["code"]) == ("pilot_override", "pilot_override"), output + logs(tmp_path)
    assert process.returncode == EXIT_PILOT_OVERRIDE, output
    assert late == 0 and in_flight <= 3 and mode == TAKEOVER_MODE[flavour]


def test_a_link_lost_mid_seek_ends_it_and_nothing_flies_after_the_link_returns(monaco_dir, ros_domain, tmp_path):
    """The fault as found: after a link loss the supervisor's one-second goal repeat resumed the
    goal from before the loss 0.55 s after the link returned, with no new decision. Now the loss
    (the bridge's link_error) ends the Seek link_lost, and no setpoint follows the return."""
    _, _, node = home_node(monaco_dir)
    port = free_udp_port()
    with MavlinkSimulator("px4", port, home=(node.lat, node.lon, 10.0), **WITHIN_LIMITS) as sim:
        process = seek(monaco_dir, port, tmp_path, ros_domain, 30)
        deadline = time.monotonic() + 120
        while not (sim.mode == sim.flavour.control_mode and sim.count(SETPOINTS) > 0
                   and abs(sim.vel[0]) + abs(sim.vel[1]) > 0.5):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"never flying: {process.communicate()[0]}{logs(tmp_path)}")
            time.sleep(0.02)
        sim.stop_answering()  # the radio link goes: the bridge sees no state after link_timeout_s 0.5 s
        time.sleep(1.5)
        sim.resume_answering()
        back = time.monotonic()
        while process.poll() is None and time.monotonic() - back < 10.0:
            time.sleep(0.05)
        after = sim.count(SETPOINTS, back)
        output, _ = process.communicate(timeout=120)
    result = json.loads((tmp_path / "result.json").read_text())
    print(f"\nlink lost for 1.5 s; result {result['outcome']} ({result['code']}): {result['reason']}; "
          f"setpoints after the return {after}")
    assert (result["outcome"], result["code"]) == ("link_lost", "link_lost"), output + logs(tmp_path)
    assert process.returncode == EXIT_LINK_LOST, output
    assert after == 0, output + logs(tmp_path)
    said = [line for line in output.splitlines() if line.startswith("vehicle: status link_error")]
    assert said, output  # the bridge's log has the loss, and the command prints it
