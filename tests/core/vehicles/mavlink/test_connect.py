"""connect(): what was heard, per flavour and endpoint form, and one-line errors in bounded time."""
import os
import subprocess
import sys
import threading
import time

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.link import LinkError
from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
from cityseeker_ros.core.vehicles.mavlink.simulator import MavlinkSimulator
from tests.core.vehicles.mavlink.conftest import HOME, free_udp_port, wait_until


@pytest.mark.parametrize("flavour, autopilot, mode", [("px4", "px4", "AUTO.LOITER"), ("ardupilot", "ardupilot",
                                                                                      "STABILIZE")])
def test_connect_reports_what_was_heard(vehicle, flavour, autopilot, mode):
    sim, link = vehicle(flavour, sim={"system_id": 7}, connect=False)
    report = link.connect(3.0)
    assert (report.autopilot, report.system_id, report.component_id) == (autopilot, 7, 1)
    assert report.vehicle_type == "quadrotor" and report.protocol == 2 and report.heartbeats >= 1
    assert [(h.system_id, h.component_id, h.autopilot) for h in report.heard] == [(7, 1, autopilot)]
    assert report.elapsed_s < 2.0 and f"{autopilot} quadrotor system 7 component 1" in report.summary()
    wait_until(lambda: link.state().position_known, 2.0)
    state = link.state()
    assert state.mode == mode and not state.armed and not state.in_control and not state.link_lost
    assert abs(state.lat - HOME[0]) < 1e-6 and abs(state.lon - HOME[1]) < 1e-6 and state.alt_m == 0.0
    wait_until(lambda: link.state().battery_fraction is not None, 2.0, what="SYS_STATUS")
    assert link.state().battery_fraction == 1.0
    # the link asked for its telemetry rates and announced itself as a ground station
    wait_until(lambda: sim.counts["HEARTBEAT"] >= 1, 1.5, what="a ground-station heartbeat")  # 1 Hz
    assert sim.count((), commands=frozenset({mavlink.MAV_CMD_SET_MESSAGE_INTERVAL})) == 3
    with pytest.raises(LinkError, match="already connected"):
        link.connect(1.0)


def test_udpout_sends_first_to_a_listening_vehicle():
    with MavlinkSimulator("ardupilot", free_udp_port()) as sim:
        link = MavlinkLink(f"udpout://127.0.0.1:{sim.address[1]}")
        try:
            report = link.connect(3.0)
        finally:
            link.close()
    assert report.autopilot == "ardupilot" and report.endpoint.endswith("(sending first)")


def test_unreachable_udp_fails_in_one_line_within_five_seconds():
    link = MavlinkLink(f"udp://127.0.0.1:{free_udp_port()}")
    started = time.monotonic()
    with pytest.raises(LinkError) as info:
        link.connect(2.0)
    elapsed = time.monotonic() - started
    assert 1.9 <= elapsed < 5.0
    message = str(info.value)
    assert "\n" not in message and "no MAVLink heartbeat on udp://127.0.0.1:" in message and "within 2 s" in message
    assert "sending to this port" in message


def test_unreachable_tcp_fails_at_once():
    link = MavlinkLink(f"tcp://127.0.0.1:{free_udp_port()}")
    started = time.monotonic()
    with pytest.raises(LinkError, match=r"cannot reach tcp://127\.0\.0\.1:\d+: Connection refused"):
        link.connect(3.0)
    assert time.monotonic() - started < 5.0


def test_missing_serial_device_fails_naming_it():
    with pytest.raises(LinkError, match="cannot open serial:///dev/ttyNOPE0:57600"):
        MavlinkLink("serial:///dev/ttyNOPE0").connect(1.0)


def test_wrong_system_id_names_the_ids_heard(vehicle):
    sim, link = vehicle("px4", sim={"system_id": 3}, link={"system_id": 5}, connect=False)
    started = time.monotonic()
    with pytest.raises(LinkError) as info:
        link.connect(1.5)
    assert time.monotonic() - started < 5.0
    message = str(info.value)
    assert "\n" not in message
    assert "no heartbeat from system 5 on udp://127.0.0.1:" in message
    assert "heard system 3 component 1 (px4 quadrotor" in message and "set system_id" in message


def test_a_ground_station_alone_is_not_a_vehicle():
    port = free_udp_port()
    stop = threading.Event()

    def ground_station():  # another GCS's heartbeats on the same port
        import socket
        mav = mavlink.MAVLink(None, srcSystem=250, srcComponent=190)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            while not stop.wait(0.05):
                msg = mavlink.MAVLink_heartbeat_message(mavlink.MAV_TYPE_GCS, mavlink.MAV_AUTOPILOT_INVALID, 0, 0, 4, 3)
                sock.sendto(bytes(msg.pack(mav)), ("127.0.0.1", port))

    thread = threading.Thread(target=ground_station, daemon=True)
    thread.start()
    try:
        with pytest.raises(LinkError, match=r"no heartbeat from an autopilot .* heard system 250 component 190 "
                                            r"\(none gcs"):
            MavlinkLink(f"udp://127.0.0.1:{port}").connect(1.0)
    finally:
        stop.set()
        thread.join()


def test_serial_endpoint_over_a_pseudo_terminal():
    """A serial line without hardware: the test writes a PX4 heartbeat stream into a pty's master side."""
    pytest.importorskip("serial")
    master, slave = os.openpty()
    path = os.ttyname(slave)
    stop = threading.Event()
    mav = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)

    def autopilot():
        import select
        poller = select.poll()  # not select(): late in a whole-suite run the pty's number is past 1024
        poller.register(master, select.POLLIN)
        while not stop.is_set():
            heartbeat = mavlink.MAVLink_heartbeat_message(mavlink.MAV_TYPE_QUADROTOR, mavlink.MAV_AUTOPILOT_PX4,
                                                          mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, 4 << 16 | 3 << 24,
                                                          3, 3)
            os.write(master, bytes(heartbeat.pack(mav)))
            if poller.poll(50):
                os.read(master, 4096)  # the link's own heartbeats

    thread = threading.Thread(target=autopilot, daemon=True)
    thread.start()
    link = MavlinkLink(f"serial://{path}:115200")
    try:
        report = link.connect(3.0)
        assert (report.autopilot, report.system_id) == ("px4", 1)
        assert report.endpoint == f"serial://{path}:115200" and link.state().mode == "AUTO.LOITER"
    finally:
        link.close()
        stop.set()
        thread.join()
        os.close(master)
        os.close(slave)


def test_simulator_command_line():
    port = free_udp_port()
    proc = subprocess.Popen([sys.executable, "-m", "cityseeker_ros.core.vehicles.mavlink.simulator", "--flavour",
                             "ardupilot", "--port", str(port), "--home", "43.7384,7.4246", "--duration", "6"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    link = MavlinkLink(f"udp://127.0.0.1:{port}")
    try:
        report = link.connect(4.0)
        wait_until(lambda: link.state().position_known, 2.0)
        state = link.state()
    finally:
        link.close()
        proc.terminate()
        output = proc.communicate(timeout=5)[0]
    assert report.autopilot == "ardupilot" and abs(state.lat - 43.7384) < 1e-6 and abs(state.lon - 7.4246) < 1e-6
    assert f"ardupilot simulator, system 1: MAVLink 2 to udp 127.0.0.1:{port}" in output
    bad = subprocess.run([sys.executable, "-m", "cityseeker_ros.core.vehicles.mavlink.simulator", "--home", "nowhere"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "--home wants LAT,LON" in bad.stderr
