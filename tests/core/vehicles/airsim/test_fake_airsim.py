"""The protocol fake's own promises (fake_airsim.py), checked with raw msgpack-rpc sockets so no
client library's behaviour hides a fault of the fake: AirSim's task rule, and the order it takes
requests in, which the e-stop tests read as "what the vehicle saw"."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import msgpack

from tests.core.vehicles.airsim.fake_airsim import FakeAirSim, starts_motion

MOVE = ["moveToPosition", [10.0, 0.0, -5.0, 2.0, 60.0, 0, {"is_rate": False, "yaw_or_rate": 0.0}, -1.0, 1.0, ""]]


class Wire:
    """One raw client connection: numbered requests, answers read back by number."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5.0)
        self.unpacker = msgpack.Unpacker(raw=False)
        self.next_id = 0
        self.answers: dict[int, tuple] = {}

    def send(self, method: str, params: list) -> int:
        self.next_id += 1
        self.sock.sendall(msgpack.packb([0, self.next_id, method, params], use_bin_type=True))
        return self.next_id

    def answer(self, msgid: int) -> tuple:
        """(error, result) of request `msgid`, waiting for it."""
        while msgid not in self.answers:
            self.unpacker.feed(self.sock.recv(65536))
            for _, got, error, result in self.unpacker:
                self.answers[got] = (error, result)
        return self.answers.pop(msgid)


@contextmanager
def fake(**kwargs) -> Iterator[FakeAirSim]:
    server = FakeAirSim(**kwargs)
    try:
        yield server
    finally:
        server.close()


def test_a_task_call_cancels_the_running_task_which_answers_at_once_with_false():
    with fake(task_s=2.0) as server:
        mover, holder = Wire(server.port), Wire(server.port)
        started = time.monotonic()
        move = mover.send(*MOVE)
        time.sleep(0.05)
        assert holder.answer(holder.send("hover", [""])) == (None, True)
        assert mover.answer(move) == (None, False)  # cancelled: no error, did not get there
        assert time.monotonic() - started < 1.0
        assert [(t.method, t.cancelled) for t in server.tasks] == [("moveToPosition", True), ("hover", False)]
        assert server.position["x_val"] == 0.0


def test_cancel_last_task_and_every_move_cancel_too_and_reads_do_not():
    with fake(task_s=2.0) as server:
        a, b = Wire(server.port), Wire(server.port)
        first = a.send(*MOVE)
        time.sleep(0.02)
        assert b.answer(b.send("getMultirotorState", [""]))[0] is None  # a read: the move runs on
        assert server.tasks[0].end is None
        second = b.send("rotateToYaw", [90.0, 10.0, 2.0, ""])
        assert a.answer(first) == (None, False)
        assert b.answer(b.send("cancelLastTask", [""])) == (None, None)
        assert b.answer(second) == (None, False)
        assert [t.cancelled for t in server.tasks] == [True, True]


def test_an_uncancelled_task_runs_task_s_then_the_vehicle_is_there():
    with fake(task_s=0.05) as server:
        wire = Wire(server.port)
        started = time.monotonic()
        assert wire.answer(wire.send(*MOVE)) == (None, True)
        assert time.monotonic() - started >= 0.05 and server.position["x_val"] == 10.0


def test_requests_on_two_connections_are_taken_in_the_order_they_were_written():
    """The order the e-stop tests rely on: with no latency, what one client wrote before another
    (on any connection) is taken first, every time."""
    with fake() as server:
        a, b = Wire(server.port), Wire(server.port)
        for _ in range(300):
            first, second = a.send("simGetVehiclePose", [""]), b.send("ping", [])
            a.answer(first)
            b.answer(second)
        names = [call.name for call in server.seen()]
        assert names == ["simGetVehiclePose", "ping"] * 300
        times = [call.t for call in server.seen()]
        assert times == sorted(times)


def test_latency_lets_requests_on_two_connections_overtake_each_other():
    with fake(latency_s=0.005, seed=3) as server:
        a, b = Wire(server.port), Wire(server.port)
        for _ in range(30):
            first, second = a.send("simGetVehiclePose", [""]), b.send("ping", [])
            a.answer(first)
            b.answer(second)
        names = [call.name for call in server.seen()]
        pairs = [tuple(names[i:i + 2]) for i in range(0, len(names), 2)]
        assert ("ping", "simGetVehiclePose") in pairs and ("simGetVehiclePose", "ping") in pairs


def test_what_starts_motion():
    assert all(starts_motion(m) for m in ("moveToPosition", "moveByVelocity", "rotateToYaw", "rotateByYawRate",
                                          "takeoff", "goHome", "simSetVehiclePose", "enableApiControl", "armDisarm"))
    assert not any(starts_motion(m) for m in ("hover", "land", "cancelLastTask", "ping", "simGetVehiclePose"))


def test_the_fly_mode_vehicle_reports_what_it_saw(airsim_fly):
    """The helper for randomized tests (vehicle_on_fake.py): a connected fly-mode link, and every
    RPC the vehicle took as Call(t, name, args), wire names, vehicle_name last."""
    before = time.monotonic()
    airsim_fly.link.velocity(1.0, 0.0, 0.5)
    airsim_fly.link.hold()
    seen = [c for c in airsim_fly.seen(after=before) if c.name != "ping"]  # a new thread's connection pings
    assert [c.name for c in seen] == ["moveByVelocity", "hover"]
    t, name, args = seen[0]
    assert before < t <= seen[1].t and args[3] == airsim_fly.link.velocity_period_s and args[-1] == ""
    assert [c.name for c in airsim_fly.motion_seen()] == ["moveByVelocity"]
    assert [c.name for c in airsim_fly.seen()][:1] == ["ping"]  # the connect
