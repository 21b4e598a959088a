"""The Seek session a goal server drives (supervisor mode seek), without ROS: a goal waits for
the decision side and the first fix (not_ready), then starts from the latest fix, a stale fix
being none; the server hears every step with the budget left and the action taken, and where
the goal ended; only the active goal's own id cancels it; the e-stop mirrors an outside source,
ending the active goal held and refusing goals until the source releases and a reset clears it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cityseeker_ros.core.agents.policies.base import Policy
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.seek import SeekAnswer, SeekFeedback, SeekRequest, SeekResult
from cityseeker_ros.core.loop.seek_server import FIX_MAX_AGE_S, SeekServerSession
from cityseeker_ros.core.loop.served import NOT_READY, ForwardingOutputs
from cityseeker_ros.core.tasks.environment import Action, move
from cityseeker_ros.core.vehicles.safety.commands import Goal, Hold
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.core.vehicles.sim import PolicyDecider, SimulatedWalker
from tests.core.loop.rigs import FakeClock, LiveRig
from tests.core.loop.test_seek import SAFETY_FILE, near

TIMING = {"decision_timeout_s": 10.0, "stall_timeout_s": 30.0, "altitude_m": 0.0}


class FirstView(Policy):
    """Always the first view: never stops, so a goal ends at its budget."""

    uses_images = False

    def act(self, observation) -> Action:
        return move(0)


@dataclass
class Server:
    """What a goal server hears (ForwardingOutputs.listener), with what it reads from the session
    for each step's feedback, as nodes/supervisor_actions.py does."""

    session: Any = None
    steps: list[tuple[SeekFeedback, int, Action]] = field(default_factory=list)
    results: list[SeekResult] = field(default_factory=list)

    def feedback(self, feedback: SeekFeedback) -> None:
        self.steps.append((feedback, self.session.steps_left(feedback.step), self.session.last_action))

    def result(self, result: SeekResult) -> None:
        self.results.append(result)

    def outcome(self, record: dict[str, Any]) -> None:
        raise AssertionError("a seek writes no benchmark record")


def served(world, at: tuple[float, float]) -> tuple[SeekServerSession, LiveRig, Server]:
    clock = FakeClock()
    config = BenchmarkConfig(data="", policy="random", max_steps=35)
    server = Server()

    def make(outputs):
        forwarding = ForwardingOutputs(outputs)
        forwarding.listener = server
        return SeekServerSession(world, config, forwarding, clock=clock, **TIMING)

    rig = LiveRig(world, make, SimulatedWalker(*at, clock=clock), clock, 36, PolicyDecider(FirstView()))
    server.session = rig.loop
    return rig.loop, rig, server


def run_until_done(session: SeekServerSession, rig: LiveRig) -> None:
    end = rig.clock.t + 600.0
    while session.active is not None:
        rig.step()
        assert rig.clock.t < end, "the seek never ended"
    rig.deliver()


def test_a_goal_waits_for_the_decision_side_and_a_fix_then_starts_from_the_latest(tiny_world):
    session, rig, server = served(tiny_world, near(tiny_world, 1))
    request = SeekRequest("water", max_steps=3)
    assert session.submit_from_fix(request) == SeekAnswer(False, "not_ready", NOT_READY)
    session.start()  # the decision node is active: no goal yet
    assert session.submit_from_fix(request) == SeekAnswer(False, "not_ready", "no location from the localiser yet")
    rig.step()  # the first fix
    rig.clock.t += FIX_MAX_AGE_S + 0.1
    stale = session.submit_from_fix(request)
    assert (stale.accepted, stale.code) == (False, "no_fix") and session.fix_now() == (None, None)
    rig.step()
    answer = session.submit_from_fix(request)
    assert answer.accepted and "from node 00000001 within 3 steps" in answer.reason, answer
    run_until_done(session, rig)
    assert [(f.step, left, action) for f, left, action in server.steps] == [
        (0, 3, move(0)), (1, 2, move(0)), (2, 1, move(0))]
    [result] = server.results
    assert result.outcome == "budget" and result.steps == 3
    assert rig.recorder.of("feedback") == rig.recorder.of("result") == []  # the server's, not the node's
    assert session.where_ended(result) == session.fix_now() != (None, None)
    rig.clock.t += FIX_MAX_AGE_S + 0.1  # no fix since: where it ended, by the graph
    assert session.where_ended(result) == (result.lat, result.lon)


def test_only_the_active_goals_own_id_cancels_it_and_it_holds(tiny_world):
    session, rig, server = served(tiny_world, near(tiny_world, 1))
    session.start()
    rig.step()
    answer = session.submit_from_fix(SeekRequest("water"))
    rig.step()
    assert not session.cancel_goal("seek-9", "not this one") and session.active == answer.goal_id
    assert session.cancel_goal(answer.goal_id, "cancelled by the client")
    assert session.active is None and [r.outcome for r in server.results] == ["cancelled"]
    command, reason, _ = rig.recorder.of("command")[-1]
    assert isinstance(command, Hold) and reason == "cancelled by the client"
    assert not session.cancel_goal(answer.goal_id, "again")  # ended: it keeps its result
    assert len(server.results) == 1


def test_the_estop_source_ends_the_goal_held_and_refuses_goals_until_released_and_reset(tiny_world):
    session, rig, server = served(tiny_world, near(tiny_world, 1))
    session.start()
    rig.step()
    assert session.submit_from_fix(SeekRequest("water")).accepted
    rig.step()
    latched_at = len(rig.recorder.events)
    session.trigger_estop("/estop", "e-stop topic true")
    [result] = server.results
    assert result.outcome == "estop" and result.message == "e-stop from /estop: e-stop topic true"
    assert isinstance(rig.recorder.of("command")[-1][0], Hold)
    rig.step()
    refused = session.submit_from_fix(SeekRequest("coffee"))
    assert (refused.accepted, refused.code) == (False, "estop")
    assert session.reset_estop() == (False, "e-stop reset refused: still asserted by /estop")
    session.release_estop("/estop")
    assert session.reset_estop() == (True, "ok")
    assert [v for k, v in rig.recorder.events[latched_at:] if k == "command" and isinstance(v[0], Goal)] == []
    rig.step()
    assert session.submit_from_fix(SeekRequest("coffee")).accepted


def test_the_session_of_a_run_needs_one_world_and_takes_the_vehicles_geofence(tiny_world, tmp_path: Path):
    config = BenchmarkConfig(data="", policy="random")
    outputs = ForwardingOutputs(Server())
    with pytest.raises(ConfigError, match="mode seek: parameter data must hold one world .* got 2: tinytown, tinytown"):
        SeekServerSession.for_worlds([tiny_world, tiny_world], config, outputs, **TIMING)
    assert SeekServerSession.for_worlds([tiny_world], config, outputs, **TIMING).geofence is None
    session = SeekServerSession.for_worlds([tiny_world], config, outputs, safety_config=str(SAFETY_FILE), **TIMING)
    fence = load_safety_config(str(SAFETY_FILE)).geofence
    assert vars(session.geofence) == vars(fence) and session.geofence.kind == fence.kind == "circle"
    bad = tmp_path / "safety.yaml"
    bad.write_text("safety:\n  geofence:\n    circle:\n      center: [43.7, 7.4]\n      radius_m: -5\n")
    with pytest.raises(ConfigError, match=f"safety_config {bad}: safety.geofence.circle.radius_m must be a positive"):
        SeekServerSession.for_worlds([tiny_world], config, outputs, safety_config=str(bad), **TIMING)
