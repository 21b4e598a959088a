"""The MAVLink link against the shipped simulator over real MAVLink 2 on loopback UDP: each test gets
fresh ports, a simulator on its own thread, and a link that listens where the simulator sends (as a
ground station listens for PX4 SITL on 14540)."""
from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest

from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
from cityseeker_ros.core.vehicles.mavlink.simulator import MavlinkSimulator

HOME = (47.397742, 8.545594, 488.0)
M_PER_DEG = 6378137.0 * 3.141592653589793 / 180.0
# A quick vehicle so each test takes seconds: climbs 5 m/s, cruises 10 m/s.
FAST = {"max_climb_m_s": 5.0, "max_descent_m_s": 4.0, "cruise_m_s": 10.0, "max_speed_m_s": 12.0}


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(condition: Callable[[], bool], timeout_s: float, link: MavlinkLink | None = None,
               what: str = "condition") -> float:
    """Seconds until `condition` held, feeding `link`'s keepalive meanwhile (the owner's loop is alive)."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            state = link.state() if link is not None else None
            raise AssertionError(f"{what} not reached within {timeout_s} s; state {state}")
        if link is not None:
            link.keepalive()
        time.sleep(0.02)
    return time.monotonic() - started


def north_of(lat: float, metres: float) -> float:
    return lat + metres / M_PER_DEG


@pytest.fixture
def vehicle():
    """make(flavour, sim={...}, link={...}, connect=True) -> (simulator, link); all closed after the test."""
    made: list[tuple[MavlinkSimulator, MavlinkLink]] = []

    def make(flavour: str = "px4", sim: dict | None = None, link: dict | None = None, connect: bool = True):
        port = free_udp_port()
        simulator = MavlinkSimulator(flavour, port, home=HOME, **{**FAST, **(sim or {})}).start()
        mav = MavlinkLink(f"udp://127.0.0.1:{port}", **(link or {}))
        made.append((simulator, mav))
        if connect:
            mav.connect(3.0)
            wait_until(lambda: mav.state().position_known, 2.0, what="first position")
        return simulator, mav

    yield make
    for simulator, mav in made:
        mav.close()
        simulator.close()


def airborne(link: MavlinkLink, alt_m: float = 5.0) -> None:
    """Armed, at `alt_m`, and under the link's control."""
    link.arm()
    link.takeoff(alt_m, timeout_s=8.0)
    link.take_control()
    assert link.state().in_control
