"""PX4's setpoint-stream rule and the link's leash on its own stream: OFFBOARD needs a stream first, the
stream dies with the owner's keepalive, and PX4's offboard-loss failsafe then takes the vehicle."""
import time

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.link import LinkError, PilotOverride, StreamStopped
from cityseeker_ros.core.vehicles.mavlink.command import run_command
from cityseeker_ros.core.vehicles.mavlink.flavours import PX4
from cityseeker_ros.core.vehicles.mavlink.simulator import SETPOINTS
from tests.core.vehicles.mavlink.conftest import HOME, airborne, north_of, wait_until


def test_offboard_is_refused_without_a_setpoint_stream(vehicle):
    sim, link = vehicle("px4")
    conn = link._conn
    outcome = run_command(conn, conn.send, mavlink.MAV_CMD_DO_SET_MODE, PX4.set_mode_params("OFFBOARD"), 0.5, 3)
    assert outcome.result == mavlink.MAV_RESULT_TEMPORARILY_REJECTED
    assert "Offboard is currently not available" in outcome.texts[0]
    assert sim.mode == "AUTO.LOITER" and sim.count(SETPOINTS) == 0


def test_offboard_is_refused_with_a_stream_under_two_hertz_and_accepted_with_one(vehicle):
    sim, slow = vehicle("px4", link={"setpoint_hz": 1.0})
    with pytest.raises(LinkError) as info:
        slow.take_control()
    assert str(info.value).startswith("px4 mode OFFBOARD refused (MAV_RESULT_TEMPORARILY_REJECTED): Switching to "
                                      "Offboard is currently not available")
    assert not slow.streaming and not slow.state().in_control and sim.mode == "AUTO.LOITER"
    slow.close()
    sim.close()

    sim, link = vehicle("px4")  # the default 10 Hz, started half a second before the switch
    link.take_control()
    assert sim.mode == "OFFBOARD" and link.state().in_control
    switched = next(t for t, mode, _ in sim.modes if mode == "OFFBOARD")
    assert sim.count(SETPOINTS, since=switched - 1.0) - sim.count(SETPOINTS, since=switched) >= 4


def test_the_stream_stops_when_the_owner_stops_and_px4_fails_safe(vehicle):
    sim, link = vehicle("px4", sim={"params": {"COM_OF_LOSS_T": 0.5}}, link={"keepalive_s": 0.5})
    airborne(link)
    link.go_to(north_of(HOME[0], 10.0), HOME[1], 5.0)
    fed = time.monotonic()
    wait_until(lambda: time.monotonic() - fed > 0.5, 1.0, link)  # the owner's loop runs half a second
    assert sim.count(SETPOINTS, since=fed) >= 4
    last_keepalive = time.monotonic()
    link.keepalive()  # ... and then stalls: no keepalive, no command
    stopped_after = wait_until(lambda: not link.streaming, 2.0, what="the stream stopping")
    assert stopped_after < 0.5 + 0.2  # the 0.5 s limit and one 10 Hz period
    grace = last_keepalive + 0.5 + 0.1 + 0.05
    wait_until(lambda: sim.mode == "AUTO.LOITER", 2.0, what="PX4's offboard-loss failsafe")
    assert sim.failsafes and sim.failsafes[-1][1] == "offboard lost -> AUTO.LOITER"
    assert "Failsafe activated: no offboard setpoints" in sim.texts
    wait_until(lambda: not link.state().in_control, 2.0, what="the link seeing the failsafe")
    assert sim.count(SETPOINTS, since=grace) == 0
    # never restarts by itself: the owner coming back is told it was late (its bridge holds, unless, as
    # here, the autopilot's failsafe already took the vehicle), and nothing changes until it stops it itself
    heartbeats, told = link._conn.target_heartbeats, 0
    while link._conn.target_heartbeats < heartbeats + 2:  # the owner's loop beats for two more heartbeats
        with pytest.raises(StreamStopped, match="keepalive"):
            link.keepalive()
        told += 1
        time.sleep(0.02)
    assert told > 10
    assert sim.count(SETPOINTS, since=grace) == 0 and sim.mode == "AUTO.LOITER"
    with pytest.raises(PilotOverride, match="left OFFBOARD for AUTO.LOITER by itself"):
        link.go_to(HOME[0], HOME[1], 5.0)
    with pytest.raises(PilotOverride):
        link.take_control()  # the failsafe's mode is not the stack's: no way back by a late call
    link.operator_takes_control()
    link.hold()  # a stop from the owner (the bridge's hold after an operator's take-control) ends it
    link.take_control()
    assert sim.mode == "OFFBOARD" and sim.count(SETPOINTS, since=grace) > 0


def test_a_stalled_owner_stops_the_stream_even_before_px4_notices(vehicle):
    """With a long COM_OF_LOSS_T the vehicle is still in OFFBOARD when the stream stops: motion fails
    loudly rather than restarting the stream."""
    sim, link = vehicle("px4", sim={"params": {"COM_OF_LOSS_T": 30.0}}, link={"keepalive_s": 0.3})
    airborne(link)
    wait_until(lambda: not link.streaming, 1.0, what="the stream stopping")  # nobody feeds it here
    assert link.state().in_control and sim.mode == "OFFBOARD"
    with pytest.raises(LinkError, match=r"setpoint stream stopped \(the owner's keepalive is .* over the 0.3 s "
                                        r"limit\); call take_control\(\)"):
        link.velocity(1.0, 0.0)
