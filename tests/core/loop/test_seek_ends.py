"""How a Seek ends, counted on what leaves the loop: every end the stack owns (the policy's stop,
an answer, the budget, a cancel, a preempting goal, a failed decision, the e-stop, a stall) leaves
exactly one HOLD, and it leaves before the result; a pilot's takeover or a lost vehicle link ends
the goal with its own outcome and nothing at all leaves afterwards, a hold neither. After a link
loss the goal under way is forgotten: the supervisor's one-second goal repeat used to resume it
0.55 s after the link returned, with no new decision."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cityseeker_ros.core.agents.policies.base import Policy
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.loop.seek import SeekRequest, SeekResult, SeekSession
from cityseeker_ros.core.tasks.environment import Action, answer, move
from cityseeker_ros.core.vehicles.safety import EStop
from cityseeker_ros.core.vehicles.safety.commands import Goal, Hold
from cityseeker_ros.core.vehicles.sim import PolicyDecider, SimulatedWalker
from tests.core.loop.rigs import FakeClock, LiveRig
from tests.core.loop.test_seek import StopAfter, near, run_until_done, seek_rig

LOST = "no vehicle state for 0.6 s (link_timeout_s 0.5 s); holding"


class AnswerAt(Policy):
    """Moves along view 0, and answers at step `k`."""

    uses_images = False

    def __init__(self, k: int) -> None:
        self.k = k

    def act(self, observation) -> Action:
        return answer("the red door") if observation.step >= self.k else move(0)


def commands(rig: LiveRig, since: int = 0) -> list[Any]:
    return [v for k, v in rig.recorder.events[since:] if k == "command"]


def holds(rig: LiveRig, since: int = 0) -> list[Any]:
    return [v for v in commands(rig, since) if isinstance(v[0], Hold)]


def under_way(session: SeekSession, rig: LiveRig, goals: int = 2) -> None:
    """Step until `goals` motion goals have left (the start, then the first step's)."""
    while len([v for v in commands(rig) if isinstance(v[0], Goal)]) < goals:
        rig.step()
        assert rig.clock.t < 2000, "never under way"


def start(world, policy: Policy = StopAfter(100), **rig: Any) -> tuple[SeekSession, LiveRig]:
    session, live = seek_rig(world, policy, near(world, 1), speed_m_s=rig.pop("speed_m_s", 2.0), **rig)
    session.vehicle_status("ok", "holding")  # the bridge has its link
    assert session.submit(SeekRequest("I am thirsty"), *near(world, 1)).accepted
    return session, live


def end_stopped(world) -> tuple[SeekSession, LiveRig]:
    session, rig = start(world, StopAfter(2))
    run_until_done(session, rig)
    return session, rig


def end_answered(world) -> tuple[SeekSession, LiveRig]:
    session, rig = start(world, AnswerAt(1))
    run_until_done(session, rig)
    return session, rig


def end_budget(world) -> tuple[SeekSession, LiveRig]:
    session, rig = seek_rig(world, StopAfter(100), near(world, 1), speed_m_s=2.0)
    assert session.submit(SeekRequest("I am thirsty", max_steps=2), *near(world, 1)).accepted
    run_until_done(session, rig)
    return session, rig


def end_cancelled(world) -> tuple[SeekSession, LiveRig]:
    session, rig = start(world)
    under_way(session, rig)
    session.cancel("cancelled by the operator")
    return session, rig


def end_preempted(world) -> tuple[SeekSession, LiveRig]:
    session, rig = start(world)
    under_way(session, rig)
    assert session.submit(SeekRequest("coffee", preempt=True), *rig.walker.position).accepted
    session.cancel("the second goal's own end")  # only the first goal's end is counted (below)
    return session, rig


def end_error(world) -> tuple[SeekSession, LiveRig]:
    session, rig = start(world)
    rig.answer_decisions = False
    while not rig.recorder.of("ask"):
        rig.step()
        assert rig.clock.t < 2000
    view_set = rig.recorder.of("ask")[-1][0]
    session.decision(view_set.view_set_id, None, [], error="the decision node failed: CUDA out of memory")
    return session, rig


def end_estop(world) -> tuple[SeekSession, LiveRig]:
    estop = EStop()
    session, rig = start(world, estop=estop)
    under_way(session, rig)
    estop.trigger("operator", "red button")
    rig.step()
    return session, rig


def end_stalled(world) -> tuple[SeekSession, LiveRig]:
    clock = FakeClock()
    config = BenchmarkConfig(data="", policy="random", max_steps=35)
    walker = SimulatedWalker(*near(world, 1), speed_m_s=2.0, follow_goals=2, clock=clock)  # stops listening
    rig = LiveRig(world, lambda outputs: SeekSession(world, config, outputs, stall_timeout_s=5.0, clock=clock),
                  walker, clock, 36, PolicyDecider(StopAfter(100)))
    session = rig.loop
    assert session.submit(SeekRequest("I am thirsty"), *near(world, 1)).accepted
    run_until_done(session, rig)
    return session, rig


HELD_ENDS: dict[str, tuple[Callable, str]] = {
    "stopped": (end_stopped, "stopped"), "answered": (end_answered, "answered"), "budget": (end_budget, "budget"),
    "cancelled": (end_cancelled, "cancelled"), "preempted": (end_preempted, "cancelled"),
    "error": (end_error, "error"), "estop": (end_estop, "estop"), "stalled": (end_stalled, "stalled"),
}


@pytest.mark.parametrize("ending", list(HELD_ENDS))
def test_every_end_the_stack_owns_leaves_exactly_one_hold_before_the_result(tiny_world, ending):
    drive, outcome = HELD_ENDS[ending]
    session, rig = drive(tiny_world)
    rig.deliver()
    events = rig.recorder.events
    result_at, result = next((i, v) for i, (k, v) in enumerate(events) if k == "result")
    assert isinstance(result, SeekResult) and result.outcome == outcome, result
    # The goal's own commands: from its first to its result (a preempting goal's come after).
    own = [v for k, v in events[:result_at] if k == "command"]
    assert isinstance(own[-1][0], Hold), f"{ending}: the last command before the result is {own[-1]}"
    assert len([v for v in own if isinstance(v[0], Hold)]) == 1, f"{ending}: holds {own}"
    if ending != "preempted":
        assert commands(rig, result_at) == [], f"{ending}: commands after the result"


@pytest.mark.parametrize("code, outcome, words", [
    ("pilot_override", "pilot_override", "the autopilot left OFFBOARD for POSCTL"),
    ("link_error", "link_lost", LOST),
])
def test_a_pilot_or_a_lost_link_ends_the_seek_with_its_own_outcome_and_nothing_leaves(tiny_world, code, outcome,
                                                                                    words):
    session, rig = start(tiny_world)
    under_way(session, rig)
    session.vehicle_status(code, words)
    ended = len(rig.recorder.events)
    for _ in range(200):  # 10 s: the goal under way was repeated every second before
        rig.step()
        session.vehicle_status(code, words)  # the bridge republishes its status
    rig.deliver()
    [result] = rig.recorder.of("result")
    assert (result.outcome, result.message) == (outcome, f"{outcome}: {words}")
    assert commands(rig, ended) == []  # no goal, no hold
    refused = session.submit(SeekRequest("I am thirsty"), *rig.walker.position)
    assert (refused.accepted, refused.code) == (False, outcome)


def test_after_a_link_loss_the_pre_loss_goal_never_resumes(tiny_world):
    """The fault as found: the supervisor's one-second repeat sent the goal from before the loss
    again 0.55 s after the link came back. Now the Seek ended at the loss, and after the return
    nothing leaves until a new goal, whose start is its own decision."""
    session, rig = start(tiny_world, speed_m_s=0.5)  # 40 s a hop: the goal is still under way at the loss
    under_way(session, rig)
    before = [v for v in commands(rig) if isinstance(v[0], Goal)][-1]
    session.vehicle_status("link_error", LOST)
    lost = len(rig.recorder.events)
    for _ in range(60):  # 3 s without a link
        rig.step()
    session.vehicle_status("ok", "holding: nothing moves until a decision made after the reconnect")
    for _ in range(100):  # 5 s with the link back
        rig.step()
    assert commands(rig, lost) == []
    assert [r.outcome for r in rig.recorder.of("result")] == ["link_lost"]
    back = len(rig.recorder.events)
    assert session.submit(SeekRequest("coffee"), *rig.walker.position).accepted
    rig.step()
    new = commands(rig, back)
    assert new and new[0][1].startswith("to the start of episode seek-2") and before not in new


def test_a_link_still_connecting_is_no_loss(tiny_world):
    """Before the bridge first connects its status is link_error ("connecting to the vehicle"): a
    goal sent then is not ended, and it moves once the bridge connects."""
    session, rig = seek_rig(tiny_world, StopAfter(100), near(tiny_world, 1), speed_m_s=2.0)
    session.vehicle_status("link_error", "connecting to the vehicle")
    assert session.submit(SeekRequest("I am thirsty"), *near(tiny_world, 1)).accepted
    session.vehicle_status("link_error", "connecting to the vehicle")
    session.vehicle_status("ok", "holding")
    under_way(session, rig, goals=3)
    assert rig.recorder.of("result") == [] and session.active == "seek-1"
