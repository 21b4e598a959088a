"""The console's answers to Hold, Cancel and E-stop (core/console/answers.py) in each state the
vehicle bridge reports: never "the vehicle holds" where nothing reaches it."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.console.answers import Situation, estop_answer, hold_answer, situation
from cityseeker_ros.core.console.events import SafetyReport

REPORTS = {  # what the bridge publishes in each situation (core/vehicles/bridge.py, _state_status)
    Situation.UNKNOWN: None,
    Situation.STACK: SafetyReport(True, "ok", "moving to the next node", False, True),
    Situation.PILOT: SafetyReport(False, "pilot_override", "the vehicle is in POSCTL: the stack sends nothing "
                                                           "until take_control()", False, True),
    Situation.LINK_DOWN: SafetyReport(False, "link_error", "no heartbeat for 2.0 s; holding", False, False),
    Situation.ESTOPPED: SafetyReport(False, "estop", "e-stop latched by /estop", True, True),
    Situation.TERMINATED: SafetyReport(False, "terminated", "motors cut on a confirmed request", False, True),
}
SAYS_IT_HOLDS = ("holds the vehicle", "the vehicle holds", "in every case")


@pytest.mark.parametrize("now", list(Situation))
def test_each_status_is_read_as_its_situation(now):
    assert situation(REPORTS[now]) is now


def test_a_latched_estop_under_a_pilot_is_the_pilots():
    """The latch is set while a pilot flies (the e-stop flag), but the pilot keeps the sticks."""
    report = SafetyReport(False, "pilot_override", "the vehicle is in POSCTL", True, True)
    assert situation(report) is Situation.PILOT


@pytest.mark.parametrize("cancelled", ["the Seek is cancelled", "2 Seek goals cancelled", ""])
def test_no_answer_says_the_vehicle_holds_while_a_pilot_has_it(cancelled):
    for answer in (hold_answer("hold", cancelled, REPORTS[Situation.PILOT]), estop_answer(REPORTS[Situation.PILOT])):
        assert not any(claim in answer.message for claim in SAYS_IT_HOLDS), answer
        assert "pilot" in answer.message and "Take control back" in answer.message, answer


@pytest.mark.parametrize("now", list(Situation))
def test_hold_says_what_was_cancelled_and_is_no_only_when_nothing_was(now):
    done = hold_answer("cancel", "1 Seek goal cancelled", REPORTS[now])
    assert (done.command, done.ok) == ("cancel", True) and done.message.startswith("1 Seek goal cancelled")
    nothing = hold_answer("hold", "", REPORTS[now])
    assert not nothing.ok and nothing.message.startswith("no Seek is under way: nothing to cancel")
    assert estop_answer(REPORTS[now]).ok  # published: the bridges latch when they hear it


def test_the_supervisors_hold_is_claimed_only_when_the_stack_has_the_vehicle():
    holding = [now for now in Situation if "supervisor holds" in hold_answer("hold", "x", REPORTS[now]).message]
    assert holding == [Situation.STACK]
    assert "the link to the vehicle is down" in hold_answer("hold", "x", REPORTS[Situation.LINK_DOWN]).message
