"""Seek without ROS: a need given at run time, sought from where the simulated walker stands,
through the same live loop (walker, localiser, camera view sets, a decision side). Bad goals are
rejected with their reason and nothing moves; a need the agent cannot satisfy ends at the budget
saying so; a policy stop ends it with success unknown; the vehicle's safety file (the bridge's)
bounds where a goal may start. Adversarial: cancels at random instants
from another thread never let a motion command out after the cancel's hold, two goals racing
never both run, and an e-stop latched between accept and the first step ends the goal held."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.policies.base import Policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.loop.seek import (
    MAX_NEED_CHARS,
    SeekAnswer,
    SeekRequest,
    SeekSession,
    check_request,
)
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.tasks.environment import STOP, Action, move
from cityseeker_ros.core.vehicles.safety import CircleFence, EStop
from cityseeker_ros.core.vehicles.safety.commands import Goal, Hold
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.core.vehicles.sim import PolicyDecider, SimulatedWalker
from tests.core.loop.rigs import FakeClock, LiveRig, Recorder

SAFETY_FILE = Path(__file__).resolve().parents[3] / "config" / "safety.yaml"  # 300 m around central Monaco


class StopAfter(Policy):
    """Moves along view 0, and stops at step `k`."""

    uses_images = False

    def __init__(self, k: int) -> None:
        self.k = k

    def act(self, observation) -> Action:
        return STOP if observation.step >= self.k else move(0)


def seek_rig(world, policy: Policy, at: tuple[float, float], estop: Optional[EStop] = None, geofence=None,
             speed_m_s=None, noise_m=0.0, max_steps: int = 35) -> tuple[SeekSession, LiveRig]:
    clock = FakeClock()
    config = BenchmarkConfig(data="", policy="random", max_steps=max_steps)
    walker = SimulatedWalker(*at, speed_m_s=speed_m_s, noise_m=noise_m, clock=clock)
    rig = LiveRig(world, lambda outputs: SeekSession(world, config, outputs, stall_timeout_s=30.0, estop=estop,
                                                     geofence=geofence, clock=clock),
                  walker, clock, max_steps + 1, PolicyDecider(policy))
    return rig.loop, rig


def near(world, letter_index: int, metres: float = 2.0) -> tuple[float, float]:
    node = world.graph.nodes[f"0000000{letter_index}"]
    return destination(node.lat, node.lon, 45.0, metres)


def run_until_done(session: SeekSession, rig: LiveRig, limit_s: float = 600.0) -> None:
    end = rig.clock.t + limit_s
    while session.active is not None:
        rig.step()
        assert rig.clock.t < end, "the seek never ended"
    rig.deliver()


def motions(recorder: Recorder, since: int = 0) -> list:
    return [v for k, v in recorder.events[since:] if k == "command" and isinstance(v[0], Goal)]


def test_bad_goals_are_rejected_with_their_reason_and_nothing_moves(tiny_world):
    estop = EStop()
    fence = CircleFence(0.0, 0.0, 30.0, 100.0)  # covers A and B, not C or D
    session, rig = seek_rig(tiny_world, make_policy("random"), near(tiny_world, 1), estop, fence)
    b = near(tiny_world, 1)
    cases = [
        (SeekRequest(""), b, "bad_need", "the need is empty"),
        (SeekRequest("   "), b, "bad_need", "the need is empty"),
        (SeekRequest("x" * (MAX_NEED_CHARS + 1)), b, "bad_need", f"the limit is {MAX_NEED_CHARS}"),
        (SeekRequest("water", max_steps=-1), b, "bad_budget", "max_steps must be an integer from 1 to 1000"),
        (SeekRequest("water", max_steps=True), b, "bad_budget", "max_steps"),
        (SeekRequest("water"), (None, None), "no_fix", "no position fix"),
        (SeekRequest("water"), (float("nan"), 0.0), "no_fix", "no position fix"),
        (SeekRequest("water"), destination(0.0, 0.0, 180.0, 500.0), "off_graph", "off the street graph"),
        (SeekRequest("water"), near(tiny_world, 3), "outside_geofence", "outside the circle geofence"),
    ]
    for request, (lat, lon), code, reason in cases:
        answer = session.submit(request, lat, lon)
        assert not answer.accepted and answer.code == code and reason in answer.reason, (request, answer)
    estop.trigger("operator", "button")
    answer = session.submit(SeekRequest("water"), *b)
    assert answer.code == "estop" and "e-stop from operator: button" in answer.reason
    assert estop.reset().ok
    assert session.submit(SeekRequest("water"), *b).accepted
    busy = session.submit(SeekRequest("coffee"), *b)
    assert busy.code == "busy" and "seek-1 is active" in busy.reason and "preempt" in busy.reason
    commands = rig.recorder.of("command")
    assert len(commands) == 1 and commands[0][1].startswith("to the start of episode seek-1")


def test_the_goals_own_checks_are_one_function_the_server_and_the_command_share(tiny_world):
    """`cityseeker seek` refuses a bad need or budget before it starts anything, with the server's
    code and words: both call check_request, so they cannot drift apart."""
    session, _ = seek_rig(tiny_world, make_policy("random"), near(tiny_world, 1))
    b = near(tiny_world, 1)
    for request in (SeekRequest(""), SeekRequest(" \t "), SeekRequest("x" * 300), SeekRequest("water", max_steps=1001),
                    SeekRequest("water", max_steps=-1), SeekRequest("water", max_steps=True)):
        alone = check_request(request, session.config.max_steps)
        assert alone is not None and not alone.accepted
        assert session.submit(request, *b) == alone
    assert check_request(SeekRequest("water", max_steps=1001), 35).reason == (
        "max_steps must be an integer from 1 to 1000 (0 or none: the run's 35), got 1001")
    assert check_request(SeekRequest("water", max_steps=0), 35) is None  # 0: the run's budget
    assert check_request(SeekRequest("water", max_steps=1000), 35) is None
    assert check_request(SeekRequest("x" * MAX_NEED_CHARS), 35) is None


@pytest.mark.parametrize("family, budget", [("needs", 35), ("questions", 50)])
def test_a_goal_without_a_budget_gets_its_familys_as_the_command_gives_it(tiny_world, family, budget):
    """A raw Seek action with max_steps 0 got the run's 35 steps for a question, while `cityseeker
    seek` gave it CityEQA's 50 (the launcher asked the family; the session did not)."""
    session, _ = seek_rig(tiny_world, make_policy("random"), near(tiny_world, 1))
    answer = session.submit(SeekRequest("water", max_steps=0, family=family), *near(tiny_world, 1))
    assert answer.accepted and f"within {budget} steps" in answer.reason


def test_a_need_it_cannot_satisfy_ends_at_the_budget_saying_so(tiny_world):
    session, rig = seek_rig(tiny_world, make_policy("random"), near(tiny_world, 1), speed_m_s=1.5, noise_m=0.5)
    answer = session.submit(SeekRequest("I am thirsty", max_steps=4), *near(tiny_world, 1))
    assert answer.accepted and answer.goal_id == "seek-1" and "within 4 steps" in answer.reason
    run_until_done(session, rig)
    [result] = rig.recorder.of("result")
    assert result.outcome == "budget" and result.satisfied is False and result.steps == 4
    # The result's fields say where and after how many steps; the message says only why, so a line
    # that prints both ("budget spent after 4 steps at N: ...") repeats nothing.
    assert result.message == "the need 'I am thirsty' was not satisfied within the budget of 4 steps"
    assert result.path[0] == "00000001" and len(result.path) == 5 and result.node == result.path[-1]
    assert result.distance_m == pytest.approx(80.0, abs=0.5)  # four 20 m hops
    feedback = rig.recorder.of("feedback")
    assert [f.step for f in feedback] == [0, 1, 2, 3] and all(f.goal_id == "seek-1" for f in feedback)
    assert all(f.action == "move" and f.next_node and f.guidance for f in feedback)
    assert [f.distance_m for f in feedback] == pytest.approx([0.0, 20.0, 40.0, 60.0], abs=0.5)
    assert isinstance(rig.recorder.of("command")[-1][0], Hold)  # a spent budget holds too (test_seek_ends.py)
    assert session.status().state == "finished" and session.active is None


def test_a_policy_stop_ends_it_where_it_stopped_with_success_unknown(tiny_world):
    session, rig = seek_rig(tiny_world, StopAfter(2), near(tiny_world, 0))
    assert session.submit(SeekRequest("a pharmacy"), *near(tiny_world, 0)).accepted
    run_until_done(session, rig)
    [result] = rig.recorder.of("result")
    assert result.outcome == "stopped" and result.satisfied is None and result.steps == 2
    assert result.message == "the policy believes 'a pharmacy' is met here (unverified live)"
    assert result.path == ("00000000", "00000001", "00000000")
    assert isinstance(rig.recorder.of("command")[-1][0], Hold)
    assert [f.action for f in rig.recorder.of("feedback")] == ["move", "move", "stop"]


def drive(rig: LiveRig, stop: threading.Event) -> None:
    """The other nodes, feeding the session until told to stop."""
    while not stop.is_set():
        rig.step()


def send(session: SeekSession, barrier: threading.Barrier, answers: dict, name: str, request: SeekRequest,
         at: tuple[float, float]) -> None:
    barrier.wait()
    answers[name] = session.submit(request, *at)


def test_cancels_at_random_instants_never_let_a_motion_out_after_the_hold(tiny_world):
    rng = np.random.default_rng(0)
    trials, late_motions, no_result, moving_after = 200, 0, 0, 0
    for trial in range(trials):
        session, rig = seek_rig(tiny_world, make_policy("random"), near(tiny_world, 1), max_steps=1000)
        assert session.submit(SeekRequest("water"), *near(tiny_world, 1)).accepted
        stop = threading.Event()
        driver = threading.Thread(target=drive, args=(rig, stop))
        driver.start()
        time.sleep(float(rng.uniform(0.0, 0.004)))
        reason = f"cancel {trial}"
        result = session.cancel(reason)
        time.sleep(0.002)  # the driver goes on feeding fixes, view sets and decisions
        stop.set()
        driver.join()
        rig.deliver()
        events = rig.recorder.events
        hold = next(i for i, (k, v) in enumerate(events) if k == "command" and v[1] == reason)
        assert isinstance(events[hold][1][0], Hold)
        late_motions += len(motions(rig.recorder, hold))
        no_result += result is None or result.outcome != "cancelled" or result.message != reason
        moving_after += rig.walker.moving
    assert (late_motions, no_result, moving_after) == (0, 0, 0)


def test_a_second_goal_racing_the_first_never_runs_beside_it(tiny_world):
    b = near(tiny_world, 1)
    rng = np.random.default_rng(1)
    both, preempted, trials = 0, 0, 200
    for trial in range(trials):
        preempt = trial % 2 == 1
        session, rig = seek_rig(tiny_world, make_policy("random"), b)
        barrier = threading.Barrier(2)
        answers: dict[str, SeekAnswer] = {}
        threads = [threading.Thread(target=send, args=(session, barrier, answers, "first", SeekRequest("water"), b)),
                   threading.Thread(target=send, args=(session, barrier, answers, "second",
                                                       SeekRequest("coffee", preempt=preempt), b))]
        for i in rng.permutation(2):  # the thread that reaches the barrier last usually runs first
            threads[i].start()
        for t in threads:
            t.join()
        accepted = [a for a in answers.values() if a.accepted]
        if not preempt or len(accepted) == 1:  # no preempt, or the preempting goal came first
            assert len(accepted) == 1 and [a.code for a in answers.values() if not a.accepted] == ["busy"]
            continue
        both += 1
        [result] = rig.recorder.of("result")  # the first goal ended, cancelled, and said why
        assert result.goal_id == "seek-1" and result.outcome == "cancelled" and "preempted" in result.message
        assert session.active == "seek-2"
        events = rig.recorder.events
        hold = next(i for i, (k, v) in enumerate(events) if k == "command" and "preempted" in v[1])
        assert [v[1] for v in motions(rig.recorder, hold)] == ["to the start of episode seek-2"]
        preempted += 1
    assert both == preempted and both > 0  # the preempting goal came second in some trials


def test_an_estop_latched_between_accept_and_the_first_step_ends_the_goal_held(tiny_world):
    estop = EStop()
    session, rig = seek_rig(tiny_world, make_policy("random"), near(tiny_world, 1), estop=estop)
    assert session.submit(SeekRequest("water"), *near(tiny_world, 1)).accepted
    estop.trigger("operator", "red button")
    latched_at = len(rig.recorder.events)
    run_until_done(session, rig, limit_s=5.0)
    [result] = rig.recorder.of("result")
    assert result.outcome == "estop" and "e-stop from operator: red button" in result.message
    assert result.steps == 0 and motions(rig.recorder, latched_at) == []
    assert isinstance(rig.recorder.of("command")[-1][0], Hold) and not rig.walker.moving
    assert rig.recorder.of("feedback") == [] and rig.recorder.of("ask") == []


def test_the_vehicles_safety_file_bounds_where_a_seek_may_start(monaco_dir):
    """The supervisor's geofence is the safety file's (config/safety.yaml, as the bridge reads
    it): from 60 random street-graph nodes, a goal is accepted exactly where the fence holds the
    node, otherwise rejected outside_geofence with the distance, and a rejected goal moves nothing."""
    world = load_dataset(monaco_dir)[0]
    fence = load_safety_config(str(SAFETY_FILE)).geofence
    rng = np.random.default_rng(3)
    ids = sorted(world.graph.nodes)
    picked = [world.graph.nodes[ids[i]] for i in rng.choice(len(ids), size=60, replace=False)]
    session, rig = seek_rig(world, make_policy("random"), (picked[0].lat, picked[0].lon), geofence=fence)
    wrong, moved_for_rejected, inside = 0, 0, 0
    for node in picked:
        before = len(rig.recorder.events)
        answer = session.submit(SeekRequest("I am thirsty"), node.lat, node.lon)
        if fence.contains(node.lat, node.lon):
            inside += 1
            wrong += not answer.accepted
            session.cancel("next trial")
            continue
        wrong += answer.code != "outside_geofence" or (
            f"{fence.outside_by_m(node.lat, node.lon):.1f} m outside the circle geofence" not in answer.reason)
        moved_for_rejected += len(motions(rig.recorder, before))
    assert (wrong, moved_for_rejected) == (0, 0)
    print(f"\n{inside} of {len(picked)} starts inside the fence")
    assert 0 < inside < len(picked)  # both kinds of start were tried


def test_a_seek_on_monaco_walked_with_gnss_noise(monaco_dir):
    world = load_dataset(monaco_dir)[0]
    node = world.graph.nodes[world.episodes[0].start]
    at = destination(node.lat, node.lon, 90.0, 3.0)
    session, rig = seek_rig(world, make_policy("random"), at, speed_m_s=1.4, noise_m=1.0)
    answer = session.submit(SeekRequest("I am thirsty", max_steps=5), *at)
    assert answer.accepted, answer.reason
    run_until_done(session, rig, limit_s=3600.0)
    [result] = rig.recorder.of("result")
    feedback = rig.recorder.of("feedback")
    assert result.outcome == "budget" and result.steps == 5 and len(feedback) == 5
    assert result.distance_m > 0 and all(f.node in world.graph.nodes for f in feedback)



def test_a_pilot_who_takes_over_mid_seek_ends_it_pilot_override_and_nothing_follows(tiny_world):
    """The stack stops commanding when the autopilot leaves its mode (an RC switch), says so in
    the result, refuses new goals while the pilot has the vehicle, and never takes it back."""
    session, rig = seek_rig(tiny_world, StopAfter(10), near(tiny_world, 0), speed_m_s=1.0)
    assert session.submit(SeekRequest("I am thirsty"), *near(tiny_world, 0)).accepted
    while len(motions(rig.recorder)) < 2:  # under way
        rig.step()
    session.vehicle_status("pilot_override", "the autopilot left OFFBOARD for POSCTL")
    took_over = len(rig.recorder.events)
    for _ in range(400):  # 20 s with the pilot in control
        rig.step()
    rig.deliver()
    result = rig.recorder.of("result")[-1]
    assert result.outcome == "pilot_override" and "POSCTL" in result.message
    assert [v for k, v in rig.recorder.events[took_over:] if k == "command"] == []  # not even a hold
    refused = session.submit(SeekRequest("I am thirsty"), *near(tiny_world, 0))
    assert (refused.accepted, refused.code) == (False, "pilot_override")
    session.vehicle_status("ok", "")  # the operator gave control back (the bridge's ~/take_control)
    assert session.submit(SeekRequest("I am thirsty"), *near(tiny_world, 0)).accepted
