"""The control-authority machine (core/vehicles/authority.py) on its own: its table, its two rules,
and random event sequences (Hypothesis) against invariants stated here, not read from the table."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cityseeker_ros.core.vehicles.authority import (
    MAY_SEND,
    MOVING,
    RTL_REFUSALS,
    Authority,
    Event,
    Send,
    State,
    table_markdown,
)

DOCS = Path(__file__).resolve().parents[3] / "docs" / "vehicles.md"
NOT_BY_PILOT = {State.PILOT, State.TERMINATED}


def machine_in(state: State, **kw) -> Authority:
    """A machine driven to `state` through events (never by assignment)."""
    a = Authority(**kw)
    paths = {
        State.DISCONNECTED: [],
        State.HOLDING: [Event.CONNECT],
        State.COMMANDING: [Event.CONNECT, "decide"],
        State.STARTING: [Event.CONNECT, "start"],
        State.PILOT: [Event.CONNECT, Event.FOREIGN_MODE],
        State.ESTOPPED: [Event.CONNECT, Event.ESTOP],
        State.RETURNING: [Event.CONNECT, Event.RTL],
        State.LOW_BATTERY: [Event.CONNECT, Event.LOW_BATTERY],
        State.LANDING: [Event.CONNECT],
        State.TERMINATED: [Event.CONNECT, Event.TERMINATE],
    }
    if state is State.LANDING:
        a = Authority(end_action="land", **kw)
        paths[State.LANDING] = [Event.CONNECT, "decide", Event.SEEK_END]
    for step in paths[state]:
        if step == "decide":
            a.handle(Event.DECISION, a.hear())
        elif step == "start":
            a.handle(Event.START, a.hear())
        else:
            a.handle(step)
    assert a.state is state
    return a


def test_the_docs_print_the_table_of_the_code():
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(r"<!-- authority-table -->\n(.*?)<!-- /authority-table -->", text, re.S)
    assert match, "docs/vehicles.md has no <!-- authority-table --> block"
    assert match.group(1) == table_markdown(), "docs/vehicles.md's table differs: paste table_markdown()"


def test_only_the_moving_states_send_anything_that_moves():
    for state, sends in MAY_SEND.items():
        moving = sends & MOVING
        if state in (State.COMMANDING, State.STARTING):
            assert moving, state
        else:
            assert not moving, (state, moving)
    assert MAY_SEND[State.PILOT] == frozenset()


@pytest.mark.parametrize("state", [s for s in State if s not in NOT_BY_PILOT])
def test_a_mode_change_by_anyone_else_hands_every_state_to_the_pilot(state):
    a = machine_in(state)
    step = a.handle(Event.FOREIGN_MODE)
    assert a.state is State.PILOT and step.send is None  # not even a hold: the pilot's switch wins


@pytest.mark.parametrize("event", [e for e in Event if e not in (Event.TAKE_CONTROL, Event.TERMINATE)])
def test_only_an_operators_take_control_leaves_pilot(event):
    a = machine_in(State.PILOT)
    a.handle(event, a.hear())
    assert a.state is State.PILOT


@pytest.mark.parametrize("stop", [Event.HOLD, Event.ESTOP, Event.LINK_LOST, Event.FOREIGN_MODE, Event.RTL,
                                  Event.SEEK_END, Event.LOW_BATTERY])
def test_after_any_stop_only_a_decision_made_after_it_moves(stop):
    a = machine_in(State.COMMANDING)
    old = a.heard
    a.handle(stop)
    back = {Event.ESTOP: Event.ESTOP_RESET, Event.LINK_LOST: Event.CONNECT, Event.FOREIGN_MODE: Event.TAKE_CONTROL}
    if stop in back:
        a.handle(back[stop])
    if stop is Event.LOW_BATTERY:  # no decision takes over a low-battery return
        assert a.handle(Event.DECISION, a.hear()).after is State.LOW_BATTERY
        return
    refused = a.handle(Event.DECISION, old)
    assert a.state is not State.COMMANDING and refused.refused
    assert a.handle(Event.DECISION, a.hear()).after is State.COMMANDING


@pytest.mark.parametrize("state", list(State))
def test_an_rtl_is_refused_with_a_reason_exactly_where_it_sends_nothing(state):
    """The bridge answers an operator's RTL from RTL_REFUSALS: a state that has a reason there must
    send no RTL for it, and every other state returns (RETURNING already does)."""
    a = machine_in(state)
    step = a.handle(Event.RTL, asked_at=a.heard)
    if state in RTL_REFUSALS:
        assert step.send is not Send.RTL and a.state is not State.RETURNING, state
    else:
        assert a.state is State.RETURNING, state
    assert "take control" in RTL_REFUSALS[State.PILOT]


def test_a_decision_sent_right_after_an_operators_request_counts_as_after_it():
    a = machine_in(State.PILOT)
    asked = a.heard  # the operator pressed take-control; a decision came before the machine saw it
    new = a.hear()
    a.handle(Event.TAKE_CONTROL, asked_at=asked)
    assert a.handle(Event.DECISION, new).after is State.COMMANDING


def test_a_seek_end_sends_the_end_action_even_when_already_held():
    a = machine_in(State.HOLDING)
    assert a.handle(Event.SEEK_END).send is Send.HOLD
    land = machine_in(State.COMMANDING, end_action="land")
    assert land.handle(Event.SHUTDOWN).send is Send.LAND and land.state is State.LANDING


def test_an_estop_lands_when_told_to():
    a = machine_in(State.COMMANDING, estop_action="land")
    assert a.handle(Event.ESTOP).send is Send.LAND


def test_bad_actions_are_refused():
    with pytest.raises(ValueError, match="estop_action"):
        Authority(estop_action="terminate")
    with pytest.raises(ValueError, match="end_action"):
        Authority(end_action="crash")


EVENTS = st.sampled_from([e for e in Event if e not in (Event.DECISION, Event.START)])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(EVENTS, st.tuples(st.sampled_from([Event.DECISION, Event.START]), st.booleans())),
                max_size=40))
def test_random_event_sequences_keep_the_rules(events):
    """Rules checked from the outside on every step: nothing moving is allowed after a foreign mode
    until a take-control; a stale decision never moves the vehicle; nothing leaves TERMINATED."""
    a = Authority()
    pilot_since_take = False
    moved_by: list[int] = []
    for item in events:
        if isinstance(item, tuple):
            event, fresh = item
            seq = a.hear() if fresh else a.stop_seq
            before_stop = seq <= a.stop_seq
            step = a.handle(event, seq)
            if before_stop:
                assert step.after is step.before, "a decision made before the last stop moved the vehicle"
            elif step.after in (State.COMMANDING, State.STARTING) and step.changed:
                moved_by.append(seq)
        else:
            was = a.state
            step = a.handle(item)
            if item is Event.FOREIGN_MODE and was not in (State.TERMINATED,) and was is not State.PILOT:
                pilot_since_take = step.after is State.PILOT
            if item is Event.TAKE_CONTROL:
                pilot_since_take = False
            if was is State.TERMINATED:
                assert a.state is State.TERMINATED
        if pilot_since_take and a.state is not State.TERMINATED:
            assert a.state is State.PILOT
            assert not any(a.may_send(s) for s in Send)
