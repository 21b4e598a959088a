"""MAVLink rigs made late in a long process, one flavour after the other, as the soak makes them.

A soak that ran AirSim scenarios, then PX4, then ArduPilot in one process found the ArduPilot rig's
simulator never heard ("no MAVLink heartbeat ... within 6 s"): the AirSim scenarios had left over a
thousand descriptors open, the new simulator's socket was numbered above 1024, and select() (in the
simulator and in the link's transport) cannot watch such a descriptor. Both now poll()."""
from __future__ import annotations

from tests.core.vehicles.mavlink.test_many_descriptors import descriptors_above_1024
from tests.core.vehicles.stateful.harness import Tap, judge
from tests.core.vehicles.stateful.rig_mavlink import TAKEOFF_M, MavlinkRig


def test_px4_then_ardupilot_rigs_in_one_process_past_descriptor_1024():
    with descriptors_above_1024():
        for flavour in ("px4", "ardupilot"):
            rig_type = type(f"Late{flavour}Rig", (MavlinkRig,), {"flavour": flavour, "simulator_tag": "late"})
            tap = Tap()
            rig = rig_type(tap)  # its own simulator, made now: connects and flies up through the bridge
            try:
                assert rig.sim.sock.fileno() >= 1024
                assert rig.bridge.connected and rig.sim.position[2] > TAKEOFF_M - 0.5, rig.bridge.status()
            finally:
                tap.mark("session_end")
                rig.close()
                rig.shutdown()
                tap.remove_folder()
            assert not judge(tap, rig.safety)
