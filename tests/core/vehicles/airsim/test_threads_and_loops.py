"""AirSim connections and threads over many bridges: the client library runs each connection on the
event loop of the thread that made it and tornado keeps every such loop, so a process that made
bridges and tripped e-stops (each on a thread of its own) gained about 21 descriptors a bridge and
ran past 1024 in the whole suite. A hold from any thread now goes out on the link's one hold thread,
and a loop is closed with its last connection. The AirSim RPC layer is the project's fake (AirSim
itself cannot run here)."""
from __future__ import annotations

import os
import threading
import time

from tests.core.vehicles.stateful.harness import Tap
from tests.core.vehicles.stateful.rig_airsim import AirSimRig


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def bridge_with_estops() -> None:
    rig = AirSimRig(Tap())
    try:
        for _ in range(5):
            rig.bridge.trip_estop("test")
            rig.bridge.reset_estop()
    finally:
        rig.close()
        rig.shutdown()


def test_bridges_and_estops_leave_no_descriptors_behind():
    for _ in range(3):  # the first bridges warm up what lives for the process (imports, the fake's loop)
        bridge_with_estops()
    before = open_descriptors()
    for _ in range(12):
        bridge_with_estops()
    assert open_descriptors() - before <= 12  # 21 a bridge before


def test_a_hold_from_a_fresh_thread_makes_no_connection_of_its_own():
    rig = AirSimRig(Tap())
    try:
        link = rig.bridge.link
        made = len(link._all)
        took: list[float] = []

        def hold() -> None:
            started = time.monotonic()
            link.hold()
            took.append(time.monotonic() - started)

        for _ in range(10):
            thread = threading.Thread(target=hold)
            thread.start()
            thread.join()
        assert len(took) == 10 and len(link._all) == made  # no connection per thread
    finally:
        rig.close()
        rig.shutdown()
