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


@pytest.mark.parametrize("machine", [Px4Safety, ArduPilotSafety], ids=["px4", "ardupilot"])
def test_a_bridge_restarted_while_a_pilot_flies_leaves_the_vehicle_to_the_pilot(machine):
    """The pilot switches modes, the bridge restarts: the new link judged none of the heartbeats it
    heard while connecting, the bridge's first read showed no foreign mode, it held the vehicle, and
    its next goal switched it back to OFFBOARD/GUIDED (found by the soak). The link now judges the
    last heartbeat before connect() returns."""
    state = machine()
    state.pilot_switch(pause=0.2)
    state.pilot_switch(pause=0.01)
    state.stale_goal(age=5.0, bearing=10.0, pause=0.2)
    state.velocity_in_a_wrong_frame(frame="ned", east=2.3, pause=0.0)
    state.restart_bridge(pause=0.6)
    state.velocity_in_a_wrong_frame(frame="ned", east=1.6, pause=0.2)
    state.velocity(east=-2.1, north=-3.9, up=0.0, pause=0.05)
    state.teardown()


@pytest.mark.parametrize("machine", [Px4Safety, ArduPilotSafety], ids=["px4", "ardupilot"])
def test_a_stall_that_outlives_the_links_keepalive_still_ends_in_a_hold(machine):
    """Goals, then safety-thread stalls longer than the link's 0.5 s keepalive, then the session
    ends: the stream stopped, the bridge took the failed goal for a lost link and was reconnecting
    when closed, so no hold went out and the vehicle sat in OFFBOARD/GUIDED with no setpoints (found
    by the soak). The link now says StreamStopped and the bridge holds instead."""
    s = machine()
    s.goal(bearing=49, metres=40, alt=10, kind="inside", pause=0.0)
    s.goal(bearing=60, metres=37, alt=10, kind="inside", pause=0.4)
    s.stall_safety_thread(seconds=0.9, pause=0.01)
    s.stall_safety_thread(seconds=0.3, pause=0.1)
    s.stall_safety_thread(seconds=0.3, pause=0.4)
    s.goal(bearing=277, metres=18, alt=10, kind="inside", pause=0.4)
    s.goal(bearing=0, metres=49, alt=10, kind="inside", pause=0.0)
    s.stall_safety_thread(seconds=0.6, pause=0.1)
    s.goal(bearing=271, metres=43, alt=10, kind="inside", pause=0.05)
    s.goal(bearing=343, metres=58, alt=10, kind="inside", pause=0.0)
    s.teardown()


@pytest.mark.parametrize("machine", [Px4Safety, ArduPilotSafety], ids=["px4", "ardupilot"])
def test_a_bridge_restarted_during_an_outage_holds_the_vehicle_its_predecessor_left_in_control(machine):
    """The radio drops during the climb, the bridge restarts meanwhile, the radio returns: the new
    link took the control mode its predecessor had entered for a pilot's, the bridge sent nothing
    and the session ended with the vehicle in GUIDED (found by the ArduPilot soak, 2 runs in 4). The
    control mode is now the stack's own at connect: the new bridge's first act is a hold."""
    s = machine()
    s.drop_link(pause=0.0)
    s.stale_goal(age=5.0, bearing=10, pause=0.1)
    s.low_battery(pause=0.4)
    s.velocity_in_a_wrong_frame(frame="ned", east=1.0, pause=0.4)
    s.restart_bridge(pause=0.0)
    s.low_battery(pause=0.01)
    s.stall_safety_thread(seconds=0.9, pause=0.05)
    s.link_back(pause=0.85)
    s.drop_link(pause=0.0)
    s.stale_goal(age=5.0, bearing=10, pause=0.0)
    s.teardown()


@pytest.mark.parametrize("machine", [Px4Safety, ArduPilotSafety], ids=["px4", "ardupilot"])
def test_a_take_control_the_vehicle_never_heard_leaves_the_vehicle_to_the_pilot(machine):
    """A goal, a pilot's switch, the radio drops, and the operator's take-control comes before the
    bridge can tell the link is lost: it was accepted, its hold never arrived, the bridge found the
    vehicle in the pilot's mode on the radio's return and rightly sent nothing, and the monitor,
    told the stack had control, wanted an end hold (found by the soak: PX4 once, ArduPilot twice).
    take_control() now says yes only once the vehicle confirmed the hold."""
    s = machine()
    s.goal(bearing=30, metres=20, alt=10, kind="inside", pause=0.3)
    s.pilot_switch(pause=1.2)
    s.drop_link(pause=0.0)
    s.take_control(pause=0.0)
    s.teardown()


@pytest.mark.parametrize("machine", [Px4Safety, ArduPilotSafety], ids=["px4", "ardupilot"])
def test_a_take_control_cut_off_by_a_link_loss_leaves_the_vehicle_to_the_stack_at_the_return(machine):
    """A goal decided just before the radio dropped: its take-control failed, then the loss's hold;
    the hold's failure put the failed take-control back as the stack's last request, so at the
    radio's return the hold mode the vehicle never left read as foreign, the bridge took it for a
    pilot's and the session ended with no hold (the PX4 soak's 72nd scenario; 4 runs in 4 before).
    A failed request now gives way to the last one that did not fail."""
    s = machine()
    s.far_goal(bearing=56, metres=86, alt=7, seconds=1.6)
    s.seek_end(pause=0.2)
    s.goal(bearing=28, metres=47, alt=2, kind="inside", pause=0.05)
    s.drop_link(pause=0.0)
    s.velocity(east=-0.0, north=2.1, up=-0.5, pause=0.4)
    s.goal(bearing=1, metres=47, alt=13, kind="outside", pause=0.2)
    s.far_goal(bearing=195, metres=78, alt=12, seconds=2.6)
    s.velocity_in_a_wrong_frame(frame="base_link", east=1.0, pause=0.0)
    s.velocity_in_a_wrong_frame(frame="ned", east=1.0, pause=0.4)
    s.low_battery(pause=0.4)
    s.link_back(pause=0.0)
    s.teardown()


@pytest.mark.parametrize("machine", [Px4Safety, ArduPilotSafety], ids=["px4", "ardupilot"])
def test_an_estop_during_a_take_control_stops_its_mode_change(machine):
    """A return to launch, then a velocity: the bridge takes control back (PX4 streams setpoints
    for half a second before it asks for OFFBOARD). An e-stop in that stream, its hold's thread
    waiting for a core: the take-control's mode change left 2 ms after the trip (found by the PX4
    soak under load). The link asked only the door's epoch, which the hold bumps when it runs; a door
    call now also asks whether a stop is decided, which holds from the trip on."""
    s = machine()
    s.goal(bearing=30, metres=20, alt=10, kind="inside", pause=4.0)  # armed, up and flying
    s.return_to_launch(pause=0.3)
    s.velocity(east=-0.4, north=2.4, up=-0.4, pause=0.3)  # its mode change is due 0.5 s after it
    s.estop_with_a_late_hold(seconds=0.4, pause=0.8)
    s.teardown()


@pytest.mark.parametrize("machine", [Px4Safety, ArduPilotSafety], ids=["px4", "ardupilot"])
def test_an_outage_the_stalled_safety_thread_never_saw_still_needs_a_new_decision(machine):
    """Two stalls queued on the safety thread: it ticks once between them, takes a goal 0.4 s into
    a radio outage (the link not yet lost), then sleeps through the rest of the outage. It never saw
    the link lost, so at the radio's return the goal decided before the outage flew on with no new
    decision (found by the ArduPilot soak on 25a386f). A loss the telemetry thread read now counts
    until the safety thread has handled it, as an e-stop's trip does: nothing moves meanwhile, and the
    return is a reconnect whose first act is a hold."""
    s = machine()
    s.stall_safety_thread(seconds=1.0, pause=0.1)
    s.stall_safety_thread(seconds=1.0, pause=0.0)  # runs when the first ends: one tick between them
    s.goal(bearing=319, metres=10, alt=10, kind="inside", pause=0.5)
    s.drop_link(pause=0.0)
    s.link_back(pause=0.6)
    s.teardown()
