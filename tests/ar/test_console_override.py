"""A pilot's takeover on the MAVLink simulator (PX4 rules, loopback UDP) as the operator console
shows it, through the real node set of `cityseeker seek --vehicle mavlink:... --console` (the vehicle
bridge, the supervisor, the console's bridge and server over DDS; tests/ar/console_live.py) with the
console read and pressed over its WebSocket as the page does. The override shows within a second;
Hold, Return to launch and a new Seek leave it overridden, and the simulator gets no setpoint or
mode command from the stack; only Take control back clears it. Every claim is the console's own
state or a count the simulator recorded."""
from __future__ import annotations

import time

from cityseeker_ros.core.vehicles.mavlink.simulator import MOTION_COMMANDS, SETPOINTS, MavlinkSimulator
from tests.ar.console_live import live_console, start_seek
from tests.ros.conftest import require_ros, ros_domain  # noqa: F401  the leased domain's fixture
from tests.ros.test_seek_mavlink import SAFETY, TINY_VIEWS, WITHIN_LIMITS, free_udp_port, home_node

OVERRIDE = "pilot_override"


def _overridden(state: dict) -> bool:
    return bool(state["safety"]) and state["safety"]["code"] == OVERRIDE


def test_a_pilot_override_shows_in_the_console_within_a_second_and_only_take_control_back_clears_it(
        monaco_dir, ros_domain, tmp_path):  # noqa: F811  the fixture
    require_ros()
    _, _, node = home_node(monaco_dir)
    port = free_udp_port()
    vehicle = ("--vehicle", f"mavlink:udp://127.0.0.1:{port}", "--link-param", "takeoff_alt_m=5",
               "--safety-config", str(SAFETY), "--source", "replay", *TINY_VIEWS)
    with MavlinkSimulator("px4", port, home=(node.lat, node.lon, 10.0), **WITHIN_LIMITS) as sim, \
            live_console(monaco_dir, tmp_path / "run", ros_domain, vehicle) as (console, _):
        console.wait(lambda s: bool(s["safety"]) and s["safety"]["connected"], 60, "connected")
        started = start_seek(console)
        assert started["ok"], started
        deadline = time.monotonic() + 90
        while not (sim.mode == sim.flavour.control_mode and abs(sim.vel[0]) + abs(sim.vel[1]) > 0.5):
            assert time.monotonic() < deadline, console.state
            time.sleep(0.02)
        assert not _overridden(console.state), console.state["safety"]
        switched = time.monotonic()
        sim.rc_mode_switch("POSCTL")
        console.wait(_overridden, 1.0, "showing the pilot's override")
        shown_s = time.monotonic() - switched
        still = {}
        for press in ("hold", "return_to_launch", "seek"):
            if press == "seek":
                answer = start_seek(console, 0.0)  # a refusal, or the goal running
            else:
                before = console.state["answer_count"]
                console.send({"type": press})
                answer = console.answer(press, before)
            time.sleep(1.0)  # what the stack did after the press has had time to show
            still[press] = (answer, _overridden(console.state), sim.mode)
        sent = sim.count(SETPOINTS, switched + 0.3) + sim.count(frozenset(), switched + 0.3, MOTION_COMMANDS)
        before = console.state["answer_count"]
        console.send({"type": "take_control"})
        taken = console.answer("take_control", before)
        cleared = console.wait(lambda s: not _overridden(s), 5.0, "cleared after Take control back")
    print(f"\noverride shown in {shown_s:.2f} s; after each press (answer ok, overridden, mode): {still}; "
          f"take_control: {taken}; then {cleared['safety']}")
    assert all(overridden and mode == "POSCTL" for _, overridden, mode in still.values()), still
    assert sent == 0  # nothing the stack pressed reached the vehicle while the pilot had it
    assert taken["ok"], taken
    assert cleared["safety"]["code"] != OVERRIDE
