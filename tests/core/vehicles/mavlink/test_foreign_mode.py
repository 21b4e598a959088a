"""`VehicleState.foreign_mode` on the MAVLink link: a mode the stack did not ask for, noticed in every
state (holding, after a link loss, at connect), not only while commanding; sticky, and while it
lasts no motion call leaves the link, so a late call from an old job never switches the vehicle back.
Only an explicit stop from the owner (hold, land, return: the operator's way back) ends it;
take_control() is refused in it."""
import threading
import time

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.link import LinkError, PilotOverride
from tests.core.vehicles.mavlink.conftest import HOME, airborne, north_of, wait_until

PILOT = {"px4": "POSCTL", "ardupilot": "LOITER"}
HOLD = {"px4": "AUTO.LOITER", "ardupilot": "BRAKE"}
FLAVOURS = ["px4", "ardupilot"]


class ForeignWatch:
    """Samples `link.state().foreign_mode` every 20 ms on a thread: what it ever said."""

    def __init__(self, link) -> None:
        self.link, self.seen = link, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            state = self.link.state()
            if state.foreign_mode is not None:
                self.seen.append((state.mode, state.foreign_mode))

    def stop(self) -> list:
        self._stop.set()
        self._thread.join()
        return self.seen


def motion_calls(link):
    return {"go_to": lambda: link.go_to(HOME[0], HOME[1], 5.0, speed_m_s=3.0),
            "velocity": lambda: link.velocity(1.0, 0.0), "takeoff": lambda: link.takeoff(5.0), "arm": link.arm}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_pilot_switch_while_holding_is_foreign_and_no_motion_call_leaves(vehicle, flavour):
    """The issue's first fault at the link: the stack holds (not commanding), a pilot switches mode;
    the next goal must not switch the vehicle back."""
    sim, link = vehicle(flavour)
    airborne(link)
    link.operator_takes_control()
    link.hold()
    assert link.state().foreign_mode is None
    switched = time.monotonic()
    sim.mode_switch(PILOT[flavour])
    wait_until(lambda: link.state().foreign_mode == PILOT[flavour], 1.5, what="the pilot's mode seen as foreign")
    for call in motion_calls(link).values():
        with pytest.raises(PilotOverride, match=f"in {PILOT[flavour]}, a mode the stack did not ask for"):
            call()
    heartbeats = link._conn.target_heartbeats
    wait_until(lambda: link._conn.target_heartbeats >= heartbeats + 2, 3.0, what="two more heartbeats")
    assert sim.count_motion(since=switched) == 0 and sim.mode == PILOT[flavour]
    # sticky: the pilot flipping to the hold mode does not give the stack the vehicle back
    sim.mode_switch(link.flavour.hold_mode)
    wait_until(lambda: link.state().mode == link.flavour.hold_mode, 1.5, what="the hold mode shown")
    assert link.state().foreign_mode == link.flavour.hold_mode
    with pytest.raises(PilotOverride):
        link.velocity(1.0, 0.0)
    with pytest.raises(PilotOverride):
        link.take_control()  # a late call from an old job never switches the vehicle back
    link.operator_takes_control()
    link.hold()  # the operator's way back: the bridge holds first, then takes control for a new decision
    link.take_control()
    assert link.state().foreign_mode is None and link.state().in_control
    link.velocity(1.0, 0.0)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_stop_from_the_owner_ends_a_foreign_mode(vehicle, flavour):
    sim, link = vehicle(flavour)
    airborne(link)
    sim.mode_switch(PILOT[flavour])
    wait_until(lambda: link.state().foreign_mode is not None, 1.5, what="foreign")
    link.operator_takes_control()
    link.hold()
    assert sim.mode == link.flavour.hold_mode and link.state().foreign_mode is None


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_the_stacks_own_modes_are_never_foreign_over_a_whole_flight(vehicle, flavour):
    """Arm, takeoff (PX4: AUTO.TAKEOFF then AUTO.LOITER by itself), control, a goal, a hold, control
    again, a return that ends in a landing (the autopilot's own next step), with every answer 0.3 s
    late so each request's heartbeat shows the old mode for a while."""
    sim, link = vehicle(flavour, sim={"ack_delay_s": 0.3, "params": {"RTL_RETURN_ALT": 5.0} if flavour == "px4"
                                      else {"RTL_ALT": 500}})
    watch = ForeignWatch(link)
    try:
        airborne(link)
        link.go_to(north_of(HOME[0], 8.0), HOME[1], 5.0, speed_m_s=6.0)
        wait_until(lambda: link.state().velocity_enu[1] > 1.0, 3.0, link, "flying north")
        link.hold()
        link.take_control()
        link.return_to_launch()
        sim.mode_switch(link.flavour.land_mode)  # RTL hands over to a landing by itself
        wait_until(lambda: not link.state().armed, 15.0, what="landed")
    finally:
        seen = watch.stop()
    assert seen == []
    asked = [mode for _, mode, why in sim.modes if why != "RC mode switch"]
    assert asked[0] == ("AUTO.TAKEOFF" if flavour == "px4" else "GUIDED") and link.flavour.rtl_mode in asked


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_connecting_to_a_vehicle_a_pilot_flies_shows_it_foreign_and_a_parked_one_not(vehicle, flavour):
    sim, link = vehicle(flavour, connect=False)
    with sim._lock:  # a pilot flies it before the stack connects
        sim.armed, sim.pos, sim.hold_point, sim.mode = True, [0.0, 0.0, 8.0], [0.0, 0.0, 8.0], PILOT[flavour]
    link.connect(3.0)
    # at once, not at the next 1 Hz heartbeat: a bridge's first read decides whether it may hold (found by
    # the soak: a bridge restarted while a pilot flew held the vehicle, and its next goal took it back)
    assert link.state().foreign_mode == PILOT[flavour]
    with pytest.raises(PilotOverride):
        link.go_to(HOME[0], HOME[1], 8.0)

    sim, link = vehicle(flavour, connect=False)
    with sim._lock:  # armed in the hold mode: not a pilot's
        sim.armed, sim.pos, sim.hold_point, sim.mode = True, [0.0, 0.0, 8.0], [0.0, 0.0, 8.0], HOLD[flavour]
    link.connect(3.0)
    sim2, parked = vehicle(flavour)  # disarmed, in its start mode (ArduPilot STABILIZE): never foreign
    wait_until(lambda: link._conn.target_heartbeats >= 3 and parked._conn.target_heartbeats >= 3, 4.0,
               what="a few heartbeats")
    assert link.state().foreign_mode is None and parked.state().foreign_mode is None


CONTROL = {"px4": "OFFBOARD", "ardupilot": "GUIDED"}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_vehicle_left_in_the_control_mode_by_an_earlier_stack_is_not_foreign_and_a_hold_takes_it(
        vehicle, flavour):
    """A bridge restarted while its vehicle flew in GUIDED took GUIDED for a pilot's mode, sent
    nothing, and the Seek ended with the vehicle left in GUIDED (found by the ArduPilot soak)."""
    sim, link = vehicle(flavour, connect=False)
    with sim._lock:
        sim.armed, sim.pos, sim.hold_point, sim.mode = True, [0.0, 0.0, 8.0], [0.0, 0.0, 8.0], CONTROL[flavour]
    link.connect(3.0)
    assert link.state().foreign_mode is None
    link.hold()
    wait_until(lambda: sim.mode == HOLD[flavour], 3.0, what="the hold")
    assert link.state().foreign_mode is None


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_pilot_switch_during_a_link_loss_shows_when_the_link_returns(vehicle, flavour):
    sim, link = vehicle(flavour)
    airborne(link)
    link.operator_takes_control()
    link.hold()
    sim.drop_link(2.0)
    wait_until(lambda: link.link_lost, 2.0, what="the link lost")
    sim.mode_switch(PILOT[flavour])
    wait_until(lambda: not link.link_lost, 4.0, what="the link back")
    wait_until(lambda: link.state().foreign_mode == PILOT[flavour], 1.5, what="the switch seen after the loss")
    with pytest.raises(PilotOverride):
        link.go_to(HOME[0], HOME[1], 5.0)


def test_the_autopilots_battery_failsafe_is_foreign(vehicle):
    sim, link = vehicle("px4")
    airborne(link)
    sim.low_battery(0.1, "AUTO.LAND")
    wait_until(lambda: link.state().foreign_mode == "AUTO.LAND", 1.5, what="the failsafe's landing seen")
    # SYS_STATUS streams on its own rate: the heartbeat with the failsafe's mode may come first
    wait_until(lambda: link.state().battery_fraction == pytest.approx(0.1, abs=0.011), 1.5, what="the low battery")
    with pytest.raises(PilotOverride, match="left OFFBOARD for AUTO.LAND by itself"):
        link.velocity(0.0, 1.0)


def test_a_pilot_switch_during_a_pending_take_control_is_foreign(vehicle):
    """Within the settle window the previous mode is the request's; any third mode is a pilot's."""
    sim, link = vehicle("px4", sim={"ack_delay_s": 1.0})
    link.arm()
    link.takeoff(4.0, timeout_s=8.0)
    sim.mode_switch("ALTCTL", after_s=0.3)  # while take_control() waits for its late ACK
    with pytest.raises(PilotOverride):
        link.take_control()
    assert link.state().foreign_mode == "ALTCTL" and not link.streaming and sim.mode == "ALTCTL"
    assert link.settle_s == pytest.approx(0.5 * 6 + 1.0)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_pilot_who_switches_back_right_after_an_accepted_hold_is_foreign_at_once(vehicle, flavour):
    """The mode shown before a request is acceptable only until the autopilot accepts it: a pilot who
    switches back to it right after (here within a millisecond of the hold's ACK) is foreign at the
    next heartbeat, not only once the 4 s settle window ends."""
    sim, link = vehicle(flavour)
    airborne(link)
    sim.mode_switch(PILOT[flavour])
    wait_until(lambda: link.state().foreign_mode is not None, 1.5, what="foreign")
    link.operator_takes_control()
    link.hold()  # the owner's stop: the mode shown when asked was the pilot's
    sim.mode_switch(PILOT[flavour])  # and the pilot takes it again at once
    took = wait_until(lambda: link.state().foreign_mode == PILOT[flavour], 3.0, what="foreign again")
    assert took < link.settle_s - 1.0, took


def test_a_mode_asked_for_just_before_the_pending_one_may_still_show():
    """RTL asked, then OFFBOARD 0.3 s later (a goal decided while returning): a heartbeat between
    shows AUTO.RTL, which the link took for a pilot's mode while OFFBOARD was pending; the bridge
    stopped commanding and the vehicle sat in OFFBOARD with no setpoints (found by the PX4 soak). A
    mode it did not ask for is still foreign then, and so is the earlier one once OFFBOARD showed."""
    from cityseeker_ros.core.vehicles.mavlink.flavours import flavour_named
    from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink

    def link_after_rtl_then_offboard() -> MavlinkLink:
        link = MavlinkLink("udp://127.0.0.1:1", flavour="px4")
        link._flavour = flavour_named("px4")
        with link._motion_lock:
            for mode, clears in (("AUTO.RTL", True), ("OFFBOARD", False)):
                link._note_request(mode, "AUTO.LOITER", clears=clears)
                link._asked.sent = True  # the request left (a heartbeat before that is no answer to it)
        return link

    now = time.monotonic()
    link = link_after_rtl_then_offboard()
    with link._motion_lock:
        assert not link._judge_mode("AUTO.RTL", True, now) and not link._judge_mode("AUTO.LAND", True, now)
        assert not link._judge_mode("OFFBOARD", True, now)
        assert link._judge_mode("AUTO.RTL", True, now)  # OFFBOARD shown: the earlier mode is foreign now
    link = link_after_rtl_then_offboard()
    with link._motion_lock:
        assert link._judge_mode("POSCTL", True, now)  # never asked for: a pilot's


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_stop_the_vehicle_never_took_leaves_the_pilots_mode_foreign(vehicle, flavour):
    """An operator's take-control whose hold is lost (the radio dropped first): the request cleared
    the foreign mode before it left and nothing put it back, so for the moment between the radio's
    return and the next heartbeat the link let motion through on a vehicle still in the pilot's
    mode. A stop that fails restores the foreign mode, and the operator must ask again."""
    sim, link = vehicle(flavour, link={"command_timeout_s": 0.1, "command_retries": 1})
    airborne(link)
    sim.mode_switch(PILOT[flavour])
    wait_until(lambda: link.state().foreign_mode == PILOT[flavour], 1.5, what="the pilot's mode seen as foreign")
    link.operator_takes_control()
    sim.stop_answering()
    with pytest.raises(LinkError):
        link.hold()
    assert link.foreign_mode == PILOT[flavour]
    sim.resume_answering()
    for call in motion_calls(link).values():
        with pytest.raises(PilotOverride):
            call()
    with pytest.raises(PilotOverride):
        link.take_control()
    with pytest.raises(PilotOverride):
        link.hold()  # the release was spent on the lost stop: the operator asks again
    assert sim.mode == PILOT[flavour]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_failsafe_into_the_hold_mode_just_before_the_stacks_hold_leaves_is_foreign(vehicle, flavour):
    """Found by the PX4 soak: the autopilot's own failsafe put the vehicle in the hold mode a few
    milliseconds before the bridge's hold (noted, not yet sent) asked for the same mode; the link
    took the failsafe's heartbeat for its own request and the next decision flew the vehicle. A
    heartbeat showing the asked mode before the request's first message left is now foreign."""
    sim, link = vehicle(flavour, link={"command_timeout_s": 0.2, "command_retries": 1})
    airborne(link)
    time.sleep(link.settle_s)  # PX4's takeoff, just before, may still end in its hold mode by itself
    hold_mode, set_mode = link.flavour.hold_mode, link._set_mode

    def failsafe_first(mode: str) -> None:
        sim.mode_switch(hold_mode)  # the vehicle switches by itself while the request is still here
        wait_until(lambda: link.state().mode == hold_mode, 2.0, what="the failsafe's heartbeat judged")
        set_mode(mode)

    link._set_mode = failsafe_first
    started = time.monotonic()
    with pytest.raises(PilotOverride):
        link.hold()
    assert link.foreign_mode == hold_mode
    assert sim.count((), since=started, commands=frozenset({mavlink.MAV_CMD_DO_SET_MODE})) == 0  # never left
    with pytest.raises(PilotOverride):
        link.take_control()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_hold_mode_the_vehicle_never_left_is_not_foreign_after_a_take_control_and_a_hold_both_lost(
        vehicle, flavour):
    """Found by the PX4 soak: the vehicle holding, a goal's take-control under way when the radio
    dropped, then the loss's hold. The take-control failed first, then the hold; the hold's failure
    put back the request before it, the failed take-control, so at the radio's return the hold mode
    the vehicle never left read as a mode the stack had not asked for: the bridge left it to a
    pilot and sent no end hold. A failed request now gives way to the last one that did not fail."""
    sim, link = vehicle(flavour, link={"command_timeout_s": 0.3, "command_retries": 1})
    airborne(link)
    link.hold()
    wait_until(lambda: link.state().mode == HOLD[flavour], 2.0, what="the hold shown")
    sim.drop_link(3600.0)
    failed = []

    def attempt(call) -> None:
        try:
            call()
        except LinkError as exc:
            failed.append((call.__name__, exc))

    control = threading.Thread(target=attempt, args=(link.take_control,))
    control.start()
    wait_until(lambda: link._asked.mode != HOLD[flavour], 1.0, what="the take-control asked for")
    time.sleep(link.prestream_s if link.flavour.needs_stream else 0.0)
    time.sleep(0.1)  # its mode change has left: it fails before the hold asked now
    hold = threading.Thread(target=attempt, args=(link.hold,))
    hold.start()
    control.join(5.0)
    hold.join(5.0)
    assert [name for name, _ in failed] == ["take_control", "hold"], failed
    sim.drop_link(0.0)
    wait_until(lambda: not link.link_lost, 4.0, what="the link back")
    time.sleep(link.settle_s + 1.1)  # past the settle window, and a heartbeat after it
    assert link.state().mode == HOLD[flavour] and link.state().foreign_mode is None


def test_a_mode_asked_before_one_the_vehicle_already_showed_cannot_show_again():
    """The PX4 soak on 44a1858 (idle machine): a hold (AUTO.LOITER, shown), an RTL (AUTO.RTL, shown),
    then a goal's OFFBOARD noted and cut off by a link loss before it left. During the outage the
    autopilot's failsafe put the vehicle in AUTO.LOITER; the link excused it as the hold asked 0.7 s
    before, and the next goal flew: a failsafe's mode taken back without an operator. UDP keeps the
    autopilot's order, so once the vehicle showed RTL the hold asked before it cannot show again."""
    from cityseeker_ros.core.vehicles.mavlink.flavours import flavour_named
    from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink

    def link_after(shown_rtl: bool) -> MavlinkLink:
        link = MavlinkLink("udp://127.0.0.1:1", flavour="px4")
        link._flavour = flavour_named("px4")
        now = time.monotonic()
        with link._motion_lock:
            link._note_request("AUTO.LOITER", "OFFBOARD", clears=True)
            link._asked.sent = True
            assert not link._judge_mode("AUTO.LOITER", True, now)
            link._note_request("AUTO.RTL", "AUTO.LOITER", clears=True)
            link._asked.sent = True
            if shown_rtl:
                assert not link._judge_mode("AUTO.RTL", True, now)
            link._note_request("OFFBOARD", "AUTO.RTL" if shown_rtl else "AUTO.LOITER", clears=False)  # never sent
        return link

    now = time.monotonic()
    link = link_after(shown_rtl=True)
    with link._motion_lock:
        assert link._judge_mode("AUTO.LOITER", True, now)  # the failsafe's: foreign
    link = link_after(shown_rtl=False)
    with link._motion_lock:  # RTL never showed: the hold's heartbeat may still come
        assert not link._judge_mode("AUTO.LOITER", True, now)
