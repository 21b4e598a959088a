"""The motion gate: a call is refused or counted before a hold, and a hold's last hover comes
after every counted call has returned. Threads and events only, no AirSim; the last test puts
the gate on a real link to the protocol fake (tests/core/vehicles/airsim/fake_flight.py)."""
from __future__ import annotations

import inspect
import threading

import pytest

from cityseeker_ros.core.vehicles.airsim.errors import AirSimError
from cityseeker_ros.core.vehicles.airsim.link import BridgeLink
from cityseeker_ros.core.vehicles.airsim.motion_gate import MotionCancelled, MotionGate
from tests.core.vehicles.airsim.fake_flight import MOTION, FlightFake


def test_a_job_runs_until_a_hold_or_a_newer_job():
    gate = MotionGate()
    gate.begin(gate.open())
    assert gate.send(lambda: "sent") == "sent"
    newer = gate.open()
    with pytest.raises(MotionCancelled):
        gate.send(lambda: pytest.fail("a stale job's call was sent"))
    gate.begin(newer)
    assert gate.send(lambda: 1) == 1
    assert gate.hold(None) == 0
    with pytest.raises(MotionCancelled):
        gate.send(lambda: pytest.fail("a call was sent after the hold"))


def test_the_last_hover_comes_after_the_call_in_flight_returned():
    """A move the first hovers did not cancel (it overtook them): the hold re-hovers until the
    move returns, then hovers once more, and the worker's next call is refused."""
    gate = MotionGate(rehover_s=0.01)
    events: list[str] = []
    in_move, hovers_seen = threading.Event(), threading.Semaphore(0)

    def move() -> None:
        events.append("move")
        in_move.set()
        for _ in range(3):  # only the third hover cancels it
            hovers_seen.acquire()
        events.append("move returned")

    def worker() -> None:
        gate.begin(token)
        gate.send(move)
        try:
            gate.send(lambda: events.append("turn"))
        except MotionCancelled:
            events.append("turn refused")

    def hover() -> None:
        events.append("hover")
        hovers_seen.release()

    token = gate.open()
    thread = threading.Thread(target=worker)
    thread.start()
    assert in_move.wait(5.0)
    assert gate.hold(hover) == 4
    thread.join(5.0)
    assert "turn refused" in events and "turn" not in events
    assert [e for e in events if e != "turn refused"] == ["move", "hover", "hover", "hover", "move returned", "hover"]
    assert gate.in_flight == 0


def test_a_call_that_never_returns_fails_the_hold():
    gate = MotionGate(rehover_s=0.01, hold_timeout_s=0.1)
    release = threading.Event()
    gate.begin(gate.open())
    thread = threading.Thread(target=gate.send, args=(lambda: release.wait(5.0),))
    thread.start()
    while gate.in_flight == 0:
        pass
    hovers: list[int] = []
    with pytest.raises(AirSimError, match="did not return within 0.1 s"):
        gate.hold(lambda: hovers.append(1))
    assert len(hovers) >= 5
    release.set()
    thread.join(5.0)


def test_a_closed_gate_refuses_everything():
    gate = MotionGate()
    gate.begin(gate.open())
    gate.close()
    with pytest.raises(MotionCancelled):
        gate.send(lambda: None)


# Public BridgeLink methods that do not move the vehicle; every other one must pass the gate.
NOT_MOTION = {"connect", "close", "ping", "grab", "pose_ned", "kinematics", "hover", "address"}
ARGS = {"set_pose": ([1.0, 2.0, -3.0], 0.5), "take_control": (), "move_to": ([1.0, 2.0, -3.0], 2.0, 10.0),
        "rotate_at_rate": (10.0, 1.0), "rotate_to": (0.5, 10.0, 2.0), "move_by_velocity": ([1.0, 0.0, 0.0], 0.5)}


def test_every_motion_call_of_the_link_passes_the_gate(client_name):
    """Correct by construction: a link method that moves the vehicle cannot skip the gate. A new
    method fails here until it is listed as motion (and refused) or as not motion."""
    public = {name for name, _ in inspect.getmembers(BridgeLink) if not name.startswith("_")}
    assert public - NOT_MOTION == set(ARGS), "classify the new BridgeLink method as motion or not"
    flight = FlightFake()
    try:
        link = BridgeLink("127.0.0.1", flight.port, client=client_name).connect()
        link.gate = gate = MotionGate()
        gate.begin(gate.open())
        gate.hold(None)
        for name, args in ARGS.items():
            with pytest.raises(MotionCancelled):
                getattr(link, name)(*args)
        link.hover()  # the hold's own tool is never gated
        link.close()
        assert [m for m in flight.methods() if m in MOTION or m in ("enableApiControl", "armDisarm")] == []
        assert flight.methods()[-1] == "hover"
    finally:
        flight.close()
