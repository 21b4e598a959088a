"""`cityseeker monitor` end to end: the shipped simulator over loopback UDP, a test driver speaking for the
stack from system 255, and a tap that copies both directions to the monitor as a router would. The monitor
is a separate process that only listens; what it prints, its exit status and its report are checked."""
from __future__ import annotations

import json
import os
import queue
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.cli import main
from cityseeker_ros.core.vehicles.mavlink.simulator import MavlinkSimulator
from cityseeker_ros.core.vehicles.monitor.mavlink_wire import MODES

REPO = Path(__file__).resolve().parents[4]
HOME = (47.397742, 8.545594, 488.0)
M_PER_DEG = 6378137.0 * 3.141592653589793 / 180.0
SAFETY = ("geofence: {circle: {center: [47.397742, 8.545594], radius_m: 100}}\n"
          "max_altitude_m: 30\nmax_speed_m_s: 3\nmax_vertical_speed_m_s: 3\n")
POSITION_ONLY = 8 | 16 | 32 | 64 | 128 | 256 | 1024 | 2048


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Monitor:
    """`cityseeker monitor` in its own process; its stdout lines in a queue."""

    def __init__(self, port: int, safety: Path, report: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cityseeker_ros", "monitor", "--connection", f"udp://127.0.0.1:{port}",
             "--safety", str(safety), "--report", str(report), *extra],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for("monitor: listening", 60.0)

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no {text!r} from the monitor; it printed {self.seen}")

    def stop(self, interrupt: bool = True) -> int:
        if interrupt:
            self.proc.send_signal(signal.SIGINT)
        rc = self.proc.wait(timeout=30)
        time.sleep(0.1)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return rc


class Stack:
    """The test driver: speaks as the stack (system 255) to the simulator and copies every datagram, both
    ways, to the monitor's port (a router's tap)."""

    def __init__(self, flavour: str, monitor_port: int) -> None:
        self.flavour = flavour
        self.gcs = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.gcs.bind(("127.0.0.1", 0))
        self.tap = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.tap.bind(("127.0.0.1", 0))
        self.tap.setblocking(False)
        self.monitor = ("127.0.0.1", monitor_port)
        self.sim = MavlinkSimulator(flavour, self.gcs.getsockname()[1], home=HOME, cruise_m_s=2.0).start()
        self.packer = mavlink.MAVLink(None, srcSystem=255, srcComponent=190)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._forward, daemon=True)
        self._thread.start()

    def _forward(self) -> None:
        poller = select.poll()  # late in a whole-suite run descriptors pass 1024, beyond select()
        poller.register(self.gcs.fileno(), select.POLLIN)
        while not self._stop.is_set():
            if poller.poll(50):
                data, _ = self.gcs.recvfrom(65535)
                self.tap.sendto(data, self.monitor)

    def send(self, msg) -> None:
        data = bytes(msg.pack(self.packer))
        self.gcs.sendto(data, self.sim.address)
        self.tap.sendto(data, self.monitor)

    def command(self, command: int, *params: float) -> None:
        p = list(params) + [0.0] * (7 - len(params))
        self.send(mavlink.MAVLink_command_long_message(1, 1, command, 0, *p))

    def set_mode(self, mode: str) -> None:
        value = MODES[self.flavour][mode]
        params = (value >> 16 & 0xFF, value >> 24 & 0xFF) if self.flavour == "px4" else (value, 0)
        self.command(mavlink.MAV_CMD_DO_SET_MODE, mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, *params)

    def goto(self, north_m: float, alt_m: float = 5.0) -> None:
        self.send(mavlink.MAVLink_set_position_target_global_int_message(
            0, 1, 1, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, POSITION_ONLY,
            round((HOME[0] + north_m / M_PER_DEG) * 1e7), round(HOME[1] * 1e7), alt_m, 0, 0, 0, 0, 0, 0, 0, 0))

    def stream(self, north_m: float, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.goto(north_m)
            time.sleep(0.1)

    def until(self, condition, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, f"{what} not reached; simulator in {self.sim.mode}"
            time.sleep(0.05)

    def take_off(self) -> None:
        """Arm, climb to 5 m with the speed asked down to 2 m/s, then fly in the control mode."""
        time.sleep(0.5)  # as a link connects first: the vehicle's heartbeat and position have been heard
        if self.flavour == "ardupilot":
            self.set_mode("GUIDED")
        self.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1.0)
        self.until(lambda: self.sim.armed, 3.0, "armed")
        self.command(mavlink.MAV_CMD_DO_CHANGE_SPEED, 1.0, 2.0, -1.0)
        self.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, 0, 0, 0, HOME[2] + 5.0 if self.flavour == "px4" else 5.0)
        self.until(lambda: self.sim.position[2] > 4.8 and self.sim.mode != "AUTO.TAKEOFF", 8.0, "5 m")
        if self.flavour == "px4":
            self.stream(2.0, 0.5)  # PX4 enters OFFBOARD only with setpoints streaming
            self.set_mode("OFFBOARD")
            self.until(lambda: self.sim.mode == "OFFBOARD", 2.0, "OFFBOARD")

    def close(self) -> bytes:
        """What the monitor sent back to the tap (it must be nothing)."""
        if self._stop.is_set():
            return b""
        self._stop.set()
        self._thread.join(timeout=2)
        self.sim.close()
        try:
            back = self.tap.recv(65535)
        except BlockingIOError:
            back = b""
        self.gcs.close()
        self.tap.close()
        return back


@pytest.fixture
def field(tmp_path):
    safety = tmp_path / "safety.yaml"
    safety.write_text(SAFETY)
    made: list[tuple[Monitor, Stack]] = []

    def make(flavour: str, *extra: str) -> tuple[Monitor, Stack, Path]:
        port = free_port()
        report = tmp_path / f"report-{flavour}.json"
        monitor = Monitor(port, safety, report, *extra)
        stack = Stack(flavour, port)
        made.append((monitor, stack))
        return monitor, stack, report

    yield make
    for monitor, stack in made:
        if monitor.proc.poll() is None:
            monitor.proc.kill()
            monitor.proc.wait()
        stack.close()


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_pilots_switch_then_the_control_mode_again_and_a_setpoint_outside(field, flavour):
    monitor, stack, report = field(flavour)
    stack.take_off()
    stack.stream(5.0, 1.0)
    stack.sim.rc_mode_switch("POSCTL" if flavour == "px4" else "LOITER")  # the pilot takes over
    time.sleep(0.5)
    stack.stream(5.0, 0.6)  # the stack ignores it: a stream, the control mode again
    stack.set_mode(stack.sim.flavour.control_mode)
    line = monitor.wait_for("VIOLATION", 10.0)
    assert "pilot_wins" in line, monitor.seen  # the stream, resumed after the pilot's switch
    control = stack.sim.flavour.control_mode
    assert "pilot_wins: mode change to " + control in monitor.wait_for(f"mode change to {control}", 10.0)
    stack.goto(150.0)  # 150 m north, the fence is 100 m
    assert "inside_fence" in monitor.wait_for("inside_fence", 10.0)
    assert stack.close() == b""  # the monitor never spoke on the link
    assert monitor.stop() == 1
    out = "\n".join(monitor.seen)
    assert "pilot_wins: checked" in out and "no_motion_after_hold: not checked" in out
    assert "verdict: " in out and "violation(s)" in out.split("verdict: ")[1]
    doc = json.loads(report.read_text())
    rules = {v["rule"] for v in doc["violations"]}
    assert {"pilot_wins", "inside_fence"} <= rules and doc["verdict"] == "violations"
    assert doc["flavour"] == flavour and doc["messages"]["stack COMMAND_LONG"] >= 3


def test_a_clean_flight_has_no_violation(field):
    monitor, stack, report = field("px4", "--duration", "60")
    stack.take_off()
    stack.stream(5.0, 1.5)
    stack.set_mode("AUTO.LOITER")  # the stack's own hold
    stack.until(lambda: stack.sim.mode == "AUTO.LOITER", 2.0, "hold")
    time.sleep(0.5)
    assert stack.close() == b""
    assert monitor.stop() == 0, monitor.seen
    out = "\n".join(monitor.seen)
    assert "VIOLATION" not in out and "verdict: no violation" in out
    doc = json.loads(report.read_text())
    assert doc["violations"] == [] and doc["verdict"] == "clean"
    judged = {r["name"]: r["judged"] for r in doc["rules"]}
    assert judged["inside_fence"] > 10 and judged["speed_limits"] > 10 and judged["pilot_wins"] > 10


def test_it_never_sends_and_stops_after_its_duration(tmp_path, monkeypatch, capsys):
    """In process: every socket send is recorded; the monitor makes none, and --duration ends it."""
    sent = []
    for name in ("send", "sendto", "sendall"):
        monkeypatch.setattr(socket.socket, name, lambda self, *a, _n=name: sent.append(_n), raising=True)
    safety = tmp_path / "safety.yaml"
    safety.write_text(SAFETY)
    port = free_port()
    vehicle = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    heartbeat = bytes(mavlink.MAVLink_heartbeat_message(mavlink.MAV_TYPE_QUADROTOR, mavlink.MAV_AUTOPILOT_PX4, 0,
                                                        MODES["px4"]["AUTO.LOITER"], 3, 3).pack(vehicle))

    stop = threading.Event()

    def talk():  # the patched sends only record, so the talker writes to its connected socket's descriptor
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("127.0.0.1", port))
            while not stop.wait(0.1):
                try:
                    os.write(s.fileno(), heartbeat)
                except ConnectionRefusedError:  # not listening yet
                    pass

    talker = threading.Thread(target=talk)
    talker.start()
    started = time.monotonic()
    try:
        rc = main(["monitor", "--connection", f"udp://127.0.0.1:{port}", "--safety", str(safety),
                   "--duration", "1.5"])
    finally:
        stop.set()
        talker.join()
    out = capsys.readouterr().out
    assert rc == 0 and 1.4 < time.monotonic() - started < 10
    heard = re.search(r"(\d+) from the vehicle", out)
    assert heard and int(heard[1]) >= 3, out
    assert sent == [] and "nothing from the stack's system was seen" in out


@pytest.mark.parametrize("args, message", [
    (["--connection", "tcp://127.0.0.1:5760"], "--connection 'tcp://127.0.0.1:5760': expected udp://HOST:PORT"),
    (["--connection", "udp://127.0.0.1"], "expected udp://HOST:PORT"),
    (["--safety", "MISSING"], "cannot read"),
    (["--safety", "BINARY"], "binary data"),
    (["--safety", "NOFENCE"], "geofence is required"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    files = {"MISSING": tmp_path / "missing.yaml", "BINARY": tmp_path / "b.yaml", "NOFENCE": tmp_path / "n.yaml"}
    files["BINARY"].write_bytes(b"\x00\x00\x00")
    files["NOFENCE"].write_text("max_speed_m_s: 3\n")
    good = tmp_path / "safety.yaml"
    good.write_text(SAFETY)
    options = {"--connection": "udp://127.0.0.1:9", "--safety": str(good)}
    for key, value in zip(args[::2], args[1::2]):
        options[key] = str(files.get(value, value))
    rc = main(["monitor", *[w for kv in options.items() for w in kv]])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message in err[0], err
    if "--safety" in args:
        assert str(options["--safety"]) in err[0]


def test_hearing_nothing_is_not_a_clean_flight(tmp_path, capsys):
    safety = tmp_path / "safety.yaml"
    safety.write_text(SAFETY)
    report = tmp_path / "r.json"
    rc = main(["monitor", "--connection", f"udp://127.0.0.1:{free_port()}", "--safety", str(safety),
               "--duration", "0.3", "--report", str(report)])
    assert rc == 3 and "verdict: nothing heard from a vehicle" in capsys.readouterr().out
    assert json.loads(report.read_text())["verdict"] == "nothing_heard"
