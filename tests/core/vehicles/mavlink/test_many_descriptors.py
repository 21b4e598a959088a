"""The simulator and the link in a process that already holds over 1024 file descriptors.

select.select() cannot watch a descriptor numbered 1024 or more (FD_SETSIZE): a simulator thread that
used it died on its first tick ("filedescriptor out of range in select()"), and a link's reader spun
without reading, so a vehicle made late in a long process was never heard. It happened in the soak:
each AirSim scenario leaves descriptors open (msgpackrpc gives every thread an event loop it never
closes), and after a few hundred of them the next MAVLink simulator's rig failed with "no MAVLink
heartbeat ... within 6 s".
"""
from __future__ import annotations

import contextlib
import resource
import socket
from collections.abc import Iterator

import pytest

from tests.core.vehicles.mavlink.conftest import wait_until

ABOVE = 1100  # descriptors held open, so the next sockets are numbered above FD_SETSIZE (1024)


@contextlib.contextmanager
def descriptors_above_1024() -> Iterator[list[socket.socket]]:
    """ABOVE sockets held open (the descriptor limit raised for them), so the next ones are numbered
    above FD_SETSIZE; skips where the hard limit forbids it (no descriptor above 1024 exists there)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = ABOVE + 200
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"RLIMIT_NOFILE hard limit {hard}: no descriptor above 1024 can exist here")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    held = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(ABOVE)]
    try:
        yield held
    finally:
        for sock in held:
            sock.close()
        if soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def many_descriptors() -> Iterator[list[socket.socket]]:
    with descriptors_above_1024() as held:
        yield held


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_simulator_and_a_link_made_above_descriptor_1024_hear_each_other(many_descriptors, vehicle, flavour):
    sim, link = vehicle(flavour)  # connects, and waits for a first position
    assert sim.sock.fileno() >= 1024 and link._conn._transport.sock.fileno() >= 1024
    heartbeats = sim.counts["HEARTBEAT"]
    wait_until(lambda: sim.counts["HEARTBEAT"] > heartbeats, 2.0, link, "the link's heartbeat at the simulator")
    assert sim._thread.is_alive()
