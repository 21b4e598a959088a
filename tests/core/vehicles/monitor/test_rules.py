"""Each rule of the flight-rules monitor against a stream that breaks it and a near miss that does not,
so every test can fail both ways."""
from __future__ import annotations

from dataclasses import replace

import pytest

from cityseeker_ros.core.vehicles.monitor import RULES, FlightMonitor, MonitorSettings, Sent, limits_from_dict
from cityseeker_ros.core.vehicles.monitor.observations import Reported
from tests.core.vehicles.monitor.streams import (
    SAFETY,
    decide,
    flying,
    goto,
    hold,
    marker,
    mode,
    monitor,
    offboard,
    report,
    rules_broken,
    vel,
)

HOLD_RULE, PILOT, FENCE, SPEED = "no_motion_after_hold", "pilot_wins", "inside_fence", "speed_limits"
LINK, END, REFUSE = "no_motion_after_link_return", "ends_in_hold", "refuses_bad_frames_and_stale_stamps"


def test_the_rules_are_the_named_seven():
    assert sorted(RULES) == sorted([HOLD_RULE, PILOT, FENCE, SPEED, LINK, END, REFUSE])
    assert all(r.statement and r.name == r.name.lower() for r in RULES.values())


# -- no_motion_after_hold -------------------------------------------------------------------------------
@pytest.mark.parametrize("tail, broken", [
    ([hold(1.0), goto(1.1, 10.0)], [HOLD_RULE]),  # the old target resent after the hold
    ([hold(1.0), decide(1.2, east_m=20.0), goto(1.3, 20.0)], []),  # a decision after the hold
    ([decide(0.9, east_m=20.0), hold(1.0), goto(1.1, 20.0)], [HOLD_RULE]),  # the decision came before it
    ([hold(1.0), offboard(1.5)], [HOLD_RULE]),  # entering the control mode moves
    ([hold(1.0), Sent(1.2, "arm")], [HOLD_RULE]),
    ([hold(1.0), Sent(1.2, "takeoff", alt_m=10.0)], [HOLD_RULE]),
    ([hold(1.0), Sent(1.2, "speed", speed_m_s=2.0), Sent(1.3, "disarm"), hold(1.4)], []),  # these do not move
    ([hold(1.0), decide(1.1, "hold"), goto(1.2, 10.0)], [HOLD_RULE]),  # a hold decision lets nothing move
    ([hold(1.0)] + [goto(1.1 + i / 10, 10.0) for i in range(10)], [HOLD_RULE]),  # a stream: said once
    ([mode(1.0, "AUTO.LAND"), vel(1.1, 0, 0, 0)], [HOLD_RULE]),  # a land is a stop too; a zero velocity a setpoint
])
def test_no_motion_after_hold(tail, broken):
    assert rules_broken(flying() + tail) == broken


@pytest.mark.parametrize("tail, broken", [
    ([marker(1.0, "estop_trip"), goto(1.05, 10.0)], []),  # the target streaming at the trip, in flight
    ([marker(1.0, "estop_trip"), goto(1.05, 30.0)], [HOLD_RULE]),  # a new target is not in flight
    ([marker(1.0, "estop_trip"), goto(1.5, 10.0)], [HOLD_RULE]),  # past the reaction time
    ([marker(1.0, "estop_trip"), decide(1.2, east_m=20.0), goto(1.3, 20.0)], [HOLD_RULE]),  # latched
    ([marker(1.0, "estop_trip"), decide(1.2), marker(2.0, "estop_reset"), goto(2.1, 10.0)], [HOLD_RULE]),
    ([marker(1.0, "estop_trip"), marker(2.0, "estop_reset"), decide(2.1, east_m=20.0), goto(2.2, 20.0)], []),
])
def test_an_estop_trip_stops_motion_until_reset_and_a_new_decision(tail, broken):
    assert rules_broken(flying() + tail) == broken


@pytest.mark.parametrize("transport_s, seen_after_s, broken", [
    (0.0, 0.006, [HOLD_RULE]),  # a wire tap: a new target after the trip left after it
    (0.02, 0.006, []),  # stamped on arrival: sent before the trip, delivered 6 ms after it
    (0.02, 0.03, [HOLD_RULE]),  # later than the delivery time: sent after the trip
])
def test_a_new_target_seen_within_the_delivery_time_of_a_trip_was_sent_before_it(transport_s, seen_after_s, broken):
    m = FlightMonitor(limits_from_dict(SAFETY), MonitorSettings(transport_s=transport_s))
    found = m.feed_all(flying() + [marker(1.0, "estop_trip"), goto(1.0 + seen_after_s, 30.0)])
    assert [v.rule for v in found] == broken


# -- pilot_wins -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("tail, broken", [
    ([report(1.0, "POSCTL"), decide(1.5, east_m=20.0), offboard(1.6)], [PILOT]),
    ([report(1.0, "POSCTL"), decide(1.5, east_m=20.0), marker(1.55, "operator_take_control"), offboard(1.6)], []),
    # while holding: the stack's own hold, then the pilot's switch, then a new goal
    ([hold(1.0), report(1.1, "AUTO.LOITER"), report(2.0, "POSCTL"), decide(2.5, east_m=20.0), goto(2.6, 20.0),
      offboard(2.7)], [PILOT, PILOT]),
    ([report(1.0, "POSCTL"), goto(1.1, 10.0)], []),  # the stream's setpoint already in flight
    ([report(1.0, "POSCTL"), goto(1.1, 20.0)], [PILOT]),  # a new target is not
    ([report(1.0, "POSCTL"), goto(1.5, 10.0)], [PILOT]),  # nor the old one past the reaction time
    ([report(2.0, "AUTO.LOITER"), Sent(2.5, "takeoff", alt_m=10.0)], [PILOT]),  # its failsafe counts too
    ([report(1.0, "POSCTL"), hold(1.5), report(1.6, "AUTO.LOITER"), decide(2, east_m=5), goto(2.1, 5.0)], [PILOT]),
])
def test_pilot_wins(tail, broken):
    assert rules_broken(flying() + tail) == broken


def carrot(t: float, north_m: float, ahead_m_s: float = 3.0) -> Sent:
    """A point of a goal flown at 3 m/s due north: its position target with the speed as feed-forward."""
    return replace(goto(t, 10.0, north_m), velocity_enu=(0.0, ahead_m_s, 0.0))


@pytest.mark.parametrize("event, tail, broken", [
    # the carrot's next point, in flight when the pilot's mode showed (found by the PX4 soak, 0.2 ms after)
    ("pilot", [carrot(1.0, 0.0), carrot(1.1, 0.3), report(1.15, "POSCTL"), carrot(1.2, 0.6)], []),
    ("pilot", [carrot(1.0, 0.0), carrot(1.1, 0.3), report(1.15, "POSCTL"), carrot(1.6, 1.8)], [PILOT]),  # late
    ("pilot", [carrot(1.0, 0.0), carrot(1.1, 0.3), report(1.15, "POSCTL"), carrot(1.2, 30.0)], [PILOT]),  # a jump
    ("pilot", [carrot(1.0, 0.0), carrot(1.1, 0.3), report(1.15, "POSCTL"), carrot(1.2, 0.6, 2.0)], [PILOT]),
    # the same at a session's end (found by the ArduPilot soak, 1 ms after a bridge restart)
    ("end", [carrot(1.0, 0.0), carrot(1.1, 0.3), marker(1.15, "session_end"), carrot(1.16, 0.5), hold(1.17)], []),
    ("end", [carrot(1.0, 0.0), carrot(1.1, 0.3), marker(1.15, "session_end"), carrot(1.16, 9.0), hold(1.17)],
     [END]),
])
def test_the_next_point_of_a_carrot_streaming_at_an_event_is_in_flight(event, tail, broken):
    assert rules_broken(flying() + [decide(0.6, east_m=10.0, north_m=30.0)] + tail) == broken


@pytest.mark.parametrize("decided, broken", [(1.0, []), (0.65, [PILOT, PILOT])])
def test_a_mode_change_crossing_a_pilots_switch_carries_out_a_decision_made_before_it(decided, broken):
    """A goal decided 3 ms before the pilot's switch: its OFFBOARD/GUIDED request left before the
    stack could have heard of the switch (found by the ArduPilot soak, 0.5 ms apart); a decision
    older than the reaction time was the stack's to stop."""
    tail = [hold(0.6), report(0.62, "AUTO.LOITER"), decide(decided, east_m=20.0), report(1.003, "POSCTL"),
            goto(1.004, 20.0), offboard(1.005)]
    assert rules_broken(flying() + tail) == broken


def test_an_operator_take_control_keeps_the_mode_the_stack_asked_for():
    """The stack asked for OFFBOARD, the operator's take-control came before the heartbeat showed it:
    the monitor had reset what it expected to the mode then shown, and read OFFBOARD as a pilot's
    (found by the ArduPilot soak)."""
    tail = [hold(1.0), report(1.1, "AUTO.LOITER"), decide(3.0, east_m=20.0), goto(3.1, 20.0), offboard(3.11),
            marker(3.12, "operator_take_control"), report(3.2, "OFFBOARD"), goto(3.8, 20.0)]
    assert rules_broken(flying() + tail) == []


@pytest.mark.parametrize("after", [
    [goto(3.5, 20.0)],  # the stack flew on past its reaction time: the vehicle is the pilot's again
    [marker(3.3, "session_end")],  # the bridge, seeing the pilot, rightly sent no end hold
])
def test_a_mode_left_for_the_stacks_request_is_foreign_when_it_shows_again(after):
    """A pilot's switch, an operator's take-control (the pilot's POSCTL accepted), the stack's hold
    and OFFBOARD each shown; then the pilot switches back to POSCTL within the settle time of the
    OFFBOARD request. The monitor kept POSCTL among the modes the hold request's predecessors could
    still show, read the switch as expected, and wanted an end hold the bridge rightly did not send
    (found by the PX4 soak on 109f4f7). Once the vehicle shows a mode the stack asked for, what it
    showed before cannot come back without someone else."""
    tail = [hold(1.0), report(1.05, "AUTO.LOITER"), report(1.5, "POSCTL"), marker(2.0, "operator_take_control"),
            hold(2.01), report(2.02, "AUTO.LOITER"), decide(2.1, east_m=20.0), goto(2.2, 20.0), offboard(2.5),
            report(2.51, "OFFBOARD"), goto(2.6, 20.0), report(3.0, "POSCTL")]
    assert rules_broken(flying() + tail + after, end=5.0) == ([PILOT] if after[0].kind == "position" else [])


@pytest.mark.parametrize("late, broken", [(1.2, []), (3.0, [PILOT])])
def test_the_previous_mode_may_show_while_a_request_settles(late, broken):
    """After a takeoff the vehicle may still show AUTO.LOITER for a moment after OFFBOARD is asked for."""
    stream = [report(0.0, "AUTO.LOITER", armed=True, east_m=0.0, alt_m=0.0), decide(0.1),
              Sent(0.2, "takeoff", alt_m=10.0), report(0.3, "AUTO.TAKEOFF"), report(0.6, "AUTO.LOITER"),
              goto(0.9, 0.0), offboard(1.0), report(late, "OFFBOARD"), report(late + 0.1, "AUTO.LOITER"),
              goto(late + 1.0, 0.0)]
    if broken:  # OFFBOARD was shown; AUTO.LOITER after the settle time is the autopilot's or a pilot's
        assert rules_broken(stream) == broken
    else:  # within it: AUTO.LOITER was still the previous mode; then OFFBOARD shows again
        assert rules_broken(stream[:-3] + [report(late, "AUTO.LOITER"), report(late + 0.2, "OFFBOARD"),
                                           goto(late + 1.0, 0.0)]) == []


def test_successor_modes_and_ground_mode_changes_are_not_a_pilot():
    stream = flying() + [mode(1.0, "AUTO.RTL"), report(1.1, "AUTO.RTL"), report(5.0, "AUTO.LAND"),
                         report(9.0, "AUTO.LAND", armed=False), report(9.5, "POSCTL", armed=False),
                         decide(10.0, east_m=5.0), Sent(10.1, "arm"), Sent(10.2, "takeoff", alt_m=10.0)]
    assert rules_broken(stream) == []


def test_a_refused_mode_request_is_no_takeover():
    """PX4 refuses OFFBOARD without a stream: the vehicle stays where it was, which is not a pilot."""
    stream = [report(0.0, "AUTO.LOITER", east_m=0.0), decide(0.1), offboard(0.2), report(3.0, "AUTO.LOITER"),
              goto(3.1, 0.0), offboard(3.2), report(3.3, "OFFBOARD"), goto(3.4, 0.0)]
    assert rules_broken(stream) == []


# -- inside_fence ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sent, broken", [
    (goto(1.0, 150.0), [FENCE]), (goto(1.0, 99.0), []),
    (goto(1.0, 0.0, alt_m=31.0), [FENCE]), (goto(1.0, 0.0, alt_m=30.4), []),
    (goto(1.0, 0.0, alt_m=-6.0), [FENCE]), (goto(1.0, 0.0, alt_m=-5.0), []),
    (Sent(1.0, "takeoff", alt_m=45.0), [FENCE]), (Sent(1.0, "takeoff", alt_m=30.0), []),
])
def test_setpoints_and_takeoffs_inside_the_fence(sent, broken):
    assert rules_broken([report(0.0, "OFFBOARD", east_m=0.0), sent]) == broken


@pytest.mark.parametrize("east_m, alt_m, v, broken", [
    (99.5, 10.0, (2.0, 0.0, 0.0), [FENCE]),  # out through the edge
    (99.5, 10.0, (0.9, 0.0, 0.0), []),  # 0.4 m past it in a second: within the tolerance
    (99.5, 10.0, (-1.0, 0.0, 0.0), []),  # back in
    (105.0, 10.0, (-1.0, 0.0, 0.0), []),  # outside, heading back
    (105.0, 10.0, (0.0, 3.0, 0.0), [FENCE]),  # outside, along the edge (and so further out)
    (105.0, 10.0, (0.0, 0.0, 0.0), []),  # outside, stopping
    (105.0, 10.0, (1.0, 0.0, 0.0), [FENCE]),  # outside, further out
    (0.0, -5.2, (0.0, 0.0, -1.0), [FENCE]),  # the descent through the floor
    (0.0, -5.2, (0.0, 0.0, 1.0), []),
    (0.0, 29.8, (0.0, 0.0, 1.0), [FENCE]),
    (0.0, 29.0, (0.0, 0.0, 0.4), []),
])
def test_a_velocity_is_judged_where_it_leads_in_one_second(east_m, alt_m, v, broken):
    assert rules_broken([report(0.0, "OFFBOARD", east_m=east_m, alt_m=alt_m), vel(0.1, *v)]) == broken


def test_a_bad_target_streamed_is_one_violation_and_each_new_one_another():
    stream = [report(0.0, "OFFBOARD", east_m=0.0)] + [goto(0.1 * i, 150.0) for i in range(1, 6)]
    assert rules_broken(stream) == [FENCE]
    assert rules_broken(stream + [goto(1.0, 10.0), goto(1.1, 150.0), goto(1.2, 160.0)]) == [FENCE, FENCE, FENCE]


# -- speed_limits ---------------------------------------------------------------------------------------
def _speeds(speeds, dt=0.1, axis=0, armed=True, name="OFFBOARD"):
    out = [report(0.0, name, armed=armed)]
    for i, s in enumerate(speeds):
        v = [0.0, 0.0, 0.0]
        v[axis] = s
        out.append(report(0.05 + i * dt, east_m=0.0, v=tuple(v)))
    return out


@pytest.mark.parametrize("speeds, axis, broken", [
    ([5.0] * 12, 0, [SPEED]),  # 5 m/s for 1.1 s against 3 m/s (+20 % + 0.5 = 4.1)
    ([4.0] * 30, 0, []),  # inside the tolerance
    ([5.0] * 5 + [3.0] + [5.0] * 5, 0, []),  # never a whole second over
    ([3.0] * 5 + [10.0] + [3.0] * 5, 0, []),  # one noisy sample
    ([2.0] * 12, 2, [SPEED]),  # vertical: 2 m/s against 1 m/s (allowed 1.7)
    ([1.6] * 30, 2, []),
    ([5.0] * 40, 0, [SPEED]),  # one violation per excess, not per sample
])
def test_speed_limits(speeds, axis, broken):
    assert rules_broken(_speeds(speeds, axis=axis)) == broken


def test_speed_from_positions_when_no_velocity_is_reported():
    def track(step_m):
        return [report(0.0, "OFFBOARD")] + [report(0.1 * i, east_m=step_m * i) for i in range(1, 20)]
    assert rules_broken(track(0.5)) == [SPEED]  # 5 m/s
    assert rules_broken(track(0.3)) == []  # 3 m/s


def test_speed_is_not_the_stacks_while_a_pilot_flies_or_on_the_ground():
    assert rules_broken(_speeds([8.0] * 20, armed=False, name="AUTO.LOITER")) == []
    pilot = flying() + [report(1.0, "POSCTL")] + [report(1.1 + i / 10, east_m=0.0, v=(8.0, 0, 0)) for i in range(20)]
    assert rules_broken(pilot) == []


# -- no_motion_after_link_return ------------------------------------------------------------------------
@pytest.mark.parametrize("tail, broken", [
    ([marker(1.0, "link_lost"), marker(2.0, "link_back"), goto(2.55, 10.0)], [LINK]),  # the goal repeat
    ([marker(1.0, "link_lost"), marker(2.0, "link_back"), decide(2.2, east_m=10.0), goto(2.55, 10.0)], []),
    ([marker(1.0, "link_lost"), decide(1.5, east_m=10.0), marker(2.0, "link_back"), goto(2.55, 10.0)], [LINK]),
    ([marker(1.0, "link_lost"), goto(1.1, 10.0)], []),  # in flight at the loss
    ([marker(1.0, "link_lost"), goto(1.1, 40.0)], [LINK]),  # a new target during the loss
])
def test_no_motion_after_link_return(tail, broken):
    assert rules_broken(flying() + tail) == broken


# -- ends_in_hold ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tail, end, broken", [
    ([marker(1.0, "session_end"), report(2.0, "OFFBOARD")], None, [END]),  # no hold at all
    ([marker(1.0, "session_end"), hold(1.3), report(2.0, "AUTO.LOITER")], None, []),
    ([marker(1.0, "session_end")], 1.6, [END]),  # the stream ends after the deadline
    ([marker(1.0, "session_end")], 1.4, []),  # before it: nothing to judge yet
    # a land, but the end action is hold
    ([marker(1.0, "session_end"), mode(1.2, "AUTO.LAND"), report(2.0, "AUTO.LAND")], None, [END]),
    ([hold(0.8), marker(1.0, "session_end"), report(3.0, "AUTO.LOITER")], None, []),  # already holding
    ([report(0.8, "POSCTL"), marker(1.0, "session_end"), report(3.0, "POSCTL")], None, []),  # the pilot has it
    ([marker(0.8, "link_lost"), marker(1.0, "session_end"), report(3.0, "OFFBOARD")], None, []),
    ([marker(1.0, "session_end"), goto(1.1, 10.0), hold(1.2)], None, []),  # the last setpoint in flight
    ([marker(1.0, "session_end"), goto(1.1, 40.0), hold(1.2)], None, [END]),  # a new target after the end
    ([marker(1.0, "session_end"), hold(1.2), decide(2.0, east_m=5), offboard(2.1)], None, []),  # a new session
    # PX4's offboard-loss failsafe after the deadline does not excuse the missing hold
    ([marker(1.0, "session_end"), report(2.05, "AUTO.LOITER")], None, [END]),
])
def test_ends_in_hold(tail, end, broken):
    assert rules_broken(flying() + tail, end=end) == broken


def test_the_end_action_of_the_safety_file_counts_as_the_hold():
    tail = [marker(1.0, "session_end"), mode(1.2, "AUTO.LAND"), report(2.0, "AUTO.LAND")]
    assert rules_broken(flying() + tail, end_action="land") == []


# -- refuses_bad_frames_and_stale_stamps ----------------------------------------------------------------
@pytest.mark.parametrize("tail, broken", [
    ([decide(1.0, "velocity", frame="ned", velocity=(1.0, 0.0, 0.0)), vel(1.1, 1.0, 0.0)], [REFUSE]),
    ([decide(1.0, "velocity", frame="base_link", velocity=(6.0, 0.0, 0.0)), vel(1.1, 3.0, 0.0)], [REFUSE]),
    ([decide(1.0, "velocity", frame="ned", velocity=(1.0, 0.0, 0.0)), hold(1.1)], []),  # refused: a hold
    ([decide(1.0, "velocity", frame="ned", velocity=(1.0, 0.0, 0.0)),
      decide(1.5, "velocity", frame="enu", velocity=(1.0, 0.0, 0.0)), vel(1.6, 1.0, 0.0)], []),  # then a valid one
    ([decide(1.0, "velocity", frame="", velocity=(1.0, 0.0, 0.0)), vel(1.1, 1.0, 0.0)], []),
    ([decide(1.0, east_m=30.0, stamp=-4.0), goto(1.1, 30.0)], [REFUSE]),  # stamped 5 s before
    ([decide(1.0, east_m=30.0, stamp=0.5), goto(1.1, 30.0)], []),  # 0.5 s: fresh enough
    ([decide(1.0, east_m=30.0, stamp=3.0), goto(1.1, 30.0)], [REFUSE]),  # from the future
    ([decide(1.0, east_m=30.0, stamp=-1e9), goto(1.1, 10.0)], []),  # refused; the old target streams on
    # a velocity in force parallel to a refused one (found by the soak): its repeats are its own; the
    # refused one's speed is not
    ([decide(0.9, "velocity", velocity=(1.93, 0.0, 0.0)), vel(0.95, 1.93, 0.0),
      decide(1.0, "velocity", frame="ned", velocity=(2.94, 0.0, 0.0)), vel(1.1, 1.93, 0.0)], []),
    ([decide(0.9, "velocity", velocity=(1.93, 0.0, 0.0)), vel(0.95, 1.93, 0.0),
      decide(1.0, "velocity", frame="ned", velocity=(2.94, 0.0, 0.0)), vel(1.1, 2.94, 0.0)], [REFUSE]),
])
def test_refuses_bad_frames_and_stale_stamps(tail, broken):
    assert rules_broken(flying() + tail) == broken


def test_a_refused_decision_releases_no_hold():
    tail = [hold(1.0), decide(1.2, east_m=30.0, stamp=-100.0), goto(1.3, 30.0)]
    assert rules_broken(flying() + tail) == [HOLD_RULE, REFUSE]


# -- the monitor itself ---------------------------------------------------------------------------------
def test_passive_rules_needing_markers_are_not_checked_and_markers_are_refused():
    m = monitor(passive=True)
    m.feed_all(flying()[:1] + [goto(0.2, 10.0), offboard(0.3), report(0.4, "OFFBOARD"), report(1.0, "POSCTL"),
                               offboard(1.5)])
    status = {s.name: s for s in m.status()}
    assert [v.rule for v in m.violations] == [PILOT] and "passive" in m.violations[0].detail
    assert {n for n, s in status.items() if not s.checked} == {HOLD_RULE, LINK, END, REFUSE}
    assert all("passive" in status[n].why for n in (HOLD_RULE, LINK, END, REFUSE))
    assert status[PILOT].checked and "take-control is not visible" in status[PILOT].why
    with pytest.raises(ValueError, match="passive"):
        m.feed(decide(2.0))


def test_nothing_from_the_stack_is_said_not_passed():
    m = monitor(passive=True)
    m.feed_all([report(0.0, "OFFBOARD", east_m=0.0), report(0.1, east_m=1.0)])
    assert "no message from the stack" in {s.name: s for s in m.status()}[FENCE].why


def test_time_goes_forward_and_replays_give_the_same_verdicts():
    stream = flying() + [hold(1.0), goto(1.1, 10.0), report(1.2, "POSCTL"), offboard(2.0)]
    first, second = monitor(), monitor()
    assert first.feed_all(stream) == second.feed_all(stream) and len(first.violations) == 2
    with pytest.raises(ValueError, match="time order"):
        first.feed(goto(0.5))


# -- a decision taken up just before an e-stop or a session end ----------------------------------------
@pytest.mark.parametrize("event, decided, tail, broken", [
    # decided 0.05 s before the trip, sent right after it, before the stack's hold: on its way
    ("estop_trip", 0.95, [goto(1.02, 20.0), hold(1.03)], []),
    # ... but nothing after the stack's own hold
    ("estop_trip", 0.95, [hold(1.03), goto(1.05, 20.0)], [HOLD_RULE]),
    # decided 0.5 s before: not on its way any more
    ("estop_trip", 0.5, [goto(1.02, 20.0), hold(1.03)], [HOLD_RULE]),
    ("session_end", 0.95, [goto(1.02, 20.0), hold(1.03)], []),
    ("session_end", 0.95, [hold(1.03), goto(1.05, 20.0)], [HOLD_RULE, END]),
])
def test_motion_decided_just_before_an_estop_or_an_end_may_still_leave_until_the_stacks_stop(event, decided, tail,
                                                                                             broken):
    stream = [*flying(), decide(decided, east_m=20.0), marker(1.0, event), *tail]
    assert rules_broken(stream, end=3.0) == broken


def test_on_a_low_battery_the_return_for_it_ends_the_session():
    """Found by the ArduPilot soak: the battery fell while a goal flew, the bridge restarted 250 ms
    later in its low-battery return, and that return (7 ms after the session's end) was no hold:
    the monitor called it a missing end hold. On a battery reported at or below the safety file's
    rtl_battery_fraction the return ends the session; above it, or with no fraction set, it does
    not (the end action is hold)."""
    low = [Reported(0.9, battery=0.1), marker(1.0, "session_end"), mode(1.2, "AUTO.RTL"), report(2.0, "AUTO.RTL")]
    assert rules_broken(flying() + low, rtl_battery_fraction=0.2) == []
    assert rules_broken(flying() + low, rtl_battery_fraction=0.05) == [END]
    assert rules_broken(flying() + low) == [END]
