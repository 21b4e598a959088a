"""The simulator's switches and adversarial knobs, in-process and on the command line, and what the
stack does against each: a vehicle that does not echo PARAM_SET makes the stack refuse to fly in one
line; an ignored command with or without its ACK; late answers; a link that drops for a while."""
import subprocess
import sys
import time

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.bridge import LINK_ERROR, VehicleBridge
from cityseeker_ros.core.vehicles.link import LinkError
from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
from cityseeker_ros.core.vehicles.mavlink.simulator import ControlError, MavlinkSimulator, send_control
from cityseeker_ros.core.vehicles.safety import Goal, SafetyConfig, SafetyGate
from tests.core.vehicles.mavlink.conftest import FAST, HOME, airborne, free_udp_port, north_of, wait_until

SQUARE = [(HOME[0] - 0.001, HOME[1] - 0.001), (HOME[0] - 0.001, HOME[1] + 0.001),
          (HOME[0] + 0.001, HOME[1] + 0.001), (HOME[0] + 0.001, HOME[1] - 0.001)]
QUICK = {"command_timeout_s": 0.2, "command_retries": 2}


@pytest.mark.parametrize("flavour, first", [("px4", "GF_ACTION"), ("ardupilot", "FENCE_ACTION")])
def test_no_param_echo_fails_the_fence_upload_in_one_line(vehicle, flavour, first):
    sim, link = vehicle(flavour, sim={"param_echo": False}, link=QUICK)
    with pytest.raises(LinkError) as info:
        link.upload_fence(SQUARE, 40.0, "hold")
    message = str(info.value)
    assert message == (f"{flavour} did not answer PARAM_SET {first} = {link.flavour.fence_actions['hold']} with "
                       "PARAM_VALUE after 3 tries: the stack confirms every parameter it sets (does this firmware "
                       "have it?)")
    assert sim.counts["PARAM_SET"] == 3


def test_a_parameter_the_vehicle_keeps_is_named_with_the_value_it_kept(vehicle):
    sim, link = vehicle("px4", sim={"ignore": ["PARAM_SET"]}, link=QUICK)  # echoed unchanged
    with pytest.raises(LinkError, match=r"^px4 kept GF_ACTION = 2 after 3 tries of setting it to 3$"):
        link.upload_fence(SQUARE, 40.0, "rtl")


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_the_stack_refuses_to_fly_a_vehicle_that_does_not_echo_parameters(flavour):
    port = free_udp_port()
    safety = {"geofence": {"polygon": [list(v) for v in SQUARE]}, "heartbeat_timeout_s": None,
              "decision_timeout_s": 60.0, "max_altitude_m": 40.0}
    with MavlinkSimulator(flavour, port, home=HOME, param_echo=False, **FAST) as sim:
        bridge = VehicleBridge(MavlinkLink(f"udp://127.0.0.1:{port}", **QUICK),
                               SafetyGate.from_config(SafetyConfig.from_dict(safety)), reconnect_period_s=0.5)
        try:
            assert bridge.connect_tried.wait(10.0)
            bridge.command(Goal(north_of(HOME[0], 20.0), HOME[1], alt_m=5.0))
            wait_until(lambda: bridge._connect_attempts >= 2, 10.0, what="a second connect")
            status = bridge.status()
        finally:
            bridge.close()
        assert status.code == LINK_ERROR and not bridge.connected
        assert "\n" not in status.reason and "geofence upload to the vehicle failed" in status.reason
        assert "did not answer PARAM_SET" in status.reason and "PARAM_VALUE" in status.reason
        assert sim.count_motion() == 0 and not sim.armed


def test_an_ignored_command_acknowledged_or_not(vehicle):
    sim, link = vehicle("px4", link=QUICK)
    sim.ignore("MAV_CMD_COMPONENT_ARM_DISARM", ack=True)  # says yes, does nothing
    link.arm()
    assert not sim.armed
    sim.ignore(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, ack=False)  # says nothing
    with pytest.raises(LinkError, match="MAV_CMD_COMPONENT_ARM_DISARM: no COMMAND_ACK .* after 3 tries"):
        link.arm()
    sim.heed("COMPONENT_ARM_DISARM")
    link.arm()
    assert sim.armed
    assert sim.count((), commands=frozenset({mavlink.MAV_CMD_COMPONENT_ARM_DISARM})) == 1 + 3 + 1
    with pytest.raises(ControlError, match="neither a MAV_CMD nor a MAVLink message type"):
        sim.ignore("NOT_A_THING")


def test_an_ignored_message_type_is_never_acted_on(vehicle):
    sim, link = vehicle("px4")
    airborne(link)
    sim.ignore("SET_POSITION_TARGET_LOCAL_NED")
    link.velocity(3.0, 0.0)
    wait_until(lambda: sim.count(("SET_POSITION_TARGET_LOCAL_NED",)) >= 5, 2.0, link, "five velocity setpoints")
    assert abs(sim.vel[0]) < 0.1


def test_late_answers_and_a_scheduled_pilot_switch(vehicle):
    sim, link = vehicle("px4", sim={"ack_delay_s": 0.3})
    started = time.monotonic()
    link.arm()
    assert time.monotonic() - started >= 0.3 and sim.armed
    sim.mode_switch("ALTCTL", after_s=0.5)
    assert sim.mode == "AUTO.LOITER"
    wait_until(lambda: sim.mode == "ALTCTL", 1.0, what="the scheduled switch")
    assert sim.modes[-1][2] == "RC mode switch"
    with pytest.raises(ControlError, match="px4 has no mode 'WARP'"):
        sim.mode_switch("WARP")


def test_drop_link_silences_both_ways_for_a_while(vehicle):
    sim, link = vehicle("px4")
    received = sim.counts["HEARTBEAT"]
    dropped = time.monotonic()
    sim.drop_link(1.5)
    wait_until(lambda: link.link_lost, 1.5, what="the loss")
    back = wait_until(lambda: not link.link_lost, 3.0, what="the link back")
    assert time.monotonic() - dropped >= 1.5 > back
    assert sim.counts["HEARTBEAT"] <= received + 1  # nothing heard meanwhile (one may precede the drop)
    wait_until(lambda: sim.counts["HEARTBEAT"] > received + 1, 2.0, what="the link's heartbeat heard again")


def test_low_battery_reads_in_the_link(vehicle):
    sim, link = vehicle("ardupilot")
    sim.low_battery(0.25)
    wait_until(lambda: (link.state().battery_fraction or 1.0) <= 0.25, 2.0, what="25% reported")
    assert sim.mode == "STABILIZE" and not sim.failsafes
    with pytest.raises(ControlError, match="within 0..1"):
        sim.low_battery(1.5)


def test_control_lines(vehicle):
    sim, _ = vehicle("px4", connect=False)
    assert sim.control("cruise_speed 4.5") == "ok cruise_speed 4.5" and sim.cruise == 4.5
    assert sim.control("ignore_speed_change on").startswith("ok") and sim.ignore_speed_change
    assert sim.control("ignore_speed_change off").startswith("ok") and not sim.ignore_speed_change
    assert sim.control("param_echo off").startswith("ok") and not sim.param_echo
    assert sim.control("ignore MAV_CMD_NAV_TAKEOFF noack").startswith("ok")
    assert sim._ignored_commands[mavlink.MAV_CMD_NAV_TAKEOFF] is False
    assert sim.control("ack_delay 0.2").startswith("ok") and sim.ack_delay_s == 0.2
    assert sim.control("mode_switch POSCTL").startswith("ok") and sim.mode == "POSCTL"
    assert sim.control("low_battery 0.4 AUTO.RTL").startswith("ok") and sim.mode == "AUTO.RTL"
    assert sim.control("state").startswith("ok mode AUTO.RTL armed 0 ")
    assert sim.control("teleport 1 2").startswith("error: unknown request 'teleport'")
    assert sim.control("drop_link") == "error: drop_link takes 1 argument(s); got 0"
    assert sim.control("drop_link soon") == "error: could not convert string to float: 'soon'"
    assert sim.control("ignore X maybe") == "error: want ack or noack; got 'maybe'"


def test_command_line_switches_and_the_control_port():
    port, control = free_udp_port(), free_udp_port()
    proc = subprocess.Popen([sys.executable, "-m", "cityseeker_ros.core.vehicles.mavlink.simulator", "--port",
                             str(port), "--ignore-speed-change", "--cruise-speed", "5", "--no-param-echo",
                             "--ignore", "MAV_CMD_NAV_LAND:noack", "--ack-delay", "0.1", "--control-port",
                             str(control), "--duration", "20"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    link = MavlinkLink(f"udp://127.0.0.1:{port}", **QUICK)
    try:
        link.connect(8.0)
        assert send_control(control, "state", timeout_s=5.0).startswith("ok mode AUTO.LOITER armed 0 ")
        assert send_control(control, "mode_switch POSCTL") == "ok mode_switch POSCTL"
        wait_until(lambda: link.state().mode == "POSCTL", 2.0, what="the switch over the control port")
        assert send_control(control, "bogus").startswith("error: unknown request")
        with pytest.raises(LinkError, match="did not answer PARAM_SET"):
            link.upload_fence(SQUARE, 40.0)
    finally:
        link.close()
        proc.terminate()
        output = proc.communicate(timeout=5)[0]
    assert f"control lines on udp 127.0.0.1:{control}" in output
    help_text = subprocess.run([sys.executable, "-m", "cityseeker_ros.core.vehicles.mavlink.simulator", "--help"],
                               capture_output=True, text=True, timeout=30).stdout
    for switch in ("--ignore-speed-change", "--cruise-speed", "--no-param-echo", "--ignore", "--ack-delay",
                   "--control-port", "--control-stdin"):
        assert switch in help_text
    bad = subprocess.run([sys.executable, "-m", "cityseeker_ros.core.vehicles.mavlink.simulator", "--ignore",
                          "NOPE"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "--ignore wants a MAV_CMD or message type" in bad.stderr


def test_control_lines_on_stdin():
    port = free_udp_port()
    proc = subprocess.Popen([sys.executable, "-m", "cityseeker_ros.core.vehicles.mavlink.simulator", "--port",
                             str(port), "--control-stdin", "--duration", "2"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output = proc.communicate("low_battery 0.3\nstate\n", timeout=20)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "ok low_battery 0.3" in output and "battery 0.300" in output

