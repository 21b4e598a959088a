"""What the randomized scenarios found, kept as plain sequences of the same machine (the monitor
still decides). Each failed on the code of its day; the fix is named in its docstring."""
from __future__ import annotations

import pytest

from tests.core.vehicles.stateful.test_mavlink import ArduPilotSafety, Px4Safety


@pytest.mark.parametrize("machine", [Px4Safety, ArduPilotSafety], ids=["px4", "ardupilot"])
def test_an_estop_during_a_stalled_safety_thread_stops_the_links_setpoint_stream(machine):
    """A goal streaming, the safety thread stalled 0.45 s, an e-stop tripped in the stall: the
    MAVLink link streamed the goal's setpoint for 0.33 s after the trip, until the stall ended
    (found by the CI-sized ArduPilot scenarios once far goals were drawn). trip_estop() now holds
    before it returns, as an operator's request does."""
    state = machine()
    state.far_goal(alt=2.0, bearing=0.0, metres=60.0, seconds=1.5)
    state.goal(alt=2.0, bearing=0.0, kind="inside", metres=5.0, pause=0.0)
    state.wait(seconds=0.17)
    state.stall_safety_thread(pause=0.0, seconds=0.45)
    state.estop(pause=0.4)
    state.teardown()  # the monitor's verdict: raises on a violation
