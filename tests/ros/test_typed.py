"""Records <-> cityseeker_interfaces messages without a running graph: every record that crosses
a topic comes back equal after CDR serialisation with the bag tools' typestore (the bytes DDS
and bags carry, decoded as a bag reader decodes them), optional fields included, and a
malformed message gives one line naming what is wrong. rclpy is not imported (tests/ros/conftest.py)."""
from __future__ import annotations

import array
import math
from dataclasses import replace

import numpy as np
import pytest

from cityseeker_interfaces import msg as ci
from cityseeker_interfaces.action import Decide
from cityseeker_ros.core.agents.policies.base import Decision, PromptContext
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.state_machine import SupervisorStatus
from cityseeker_ros.core.loop.view_set import Answer, EpisodeBrief, PanoramaEntry
from cityseeker_ros.core.sensing.localisation import Localisation, LocalisationStatus, WalkableHeading
from cityseeker_ros.core.streets.directions import RelativeDirection
from cityseeker_ros.core.tasks.environment import STOP, Environment, move, retrace
from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Goal, Velocity
from cityseeker_ros.ros import convert, typed
from cityseeker_ros.ros.bag_storage import typestore
from cityseeker_ros.ros.schema import (
    ActionMsg,
    CommandMsg,
    EpisodeMsg,
    MapOrigin,
    OutcomeMsg,
)

STAMP = Stamp(sec=12, nanosec=345)


STORE = typestore()


def msgtype(msg) -> str:
    package, kind = type(msg).__module__.split(".")[:2]
    return f"{package}/{kind}/{type(msg).__name__}"


def as_rosbags(value):
    """An rclpy message as the typestore's class of the same type (field by field)."""
    if isinstance(value, array.array):
        return np.frombuffer(value.tobytes(), dtype=np.dtype(value.typecode))
    if isinstance(value, list):
        return [as_rosbags(v) for v in value]
    if hasattr(value, "get_fields_and_field_types"):
        fields = {name: as_rosbags(getattr(value, name)) for name in value.get_fields_and_field_types()}
        return STORE.types[msgtype(value)](**fields)
    return value


def cdr(msg):
    """`msg` through CDR bytes, as a bag reader decodes it."""
    name = msgtype(msg)
    return STORE.deserialize_cdr(bytes(STORE.serialize_cdr(as_rosbags(msg), name)), name)


def wire(record):
    """The record as a subscriber or a bag reader gets it: to the message, CDR bytes, back."""
    back = typed.record_from(type(record), cdr(typed.to_ros(record)))
    assert back == typed.from_ros(typed.to_ros(record))  # the rclpy message decodes the same
    return back


def task(tiny_world, seed=4, run=2, round=1):
    return EpisodeBrief.of(tiny_world.episodes[0], seed=seed, run=run, round=round)


def test_view_sets_round_trip_with_and_without_panorama(tiny_world):
    env = Environment(tiny_world)
    env.reset(tiny_world.episodes[0])
    obs = env.step(move(0)).observation
    plain = convert.observation_to_view_set(obs, task(tiny_world), "vs-1", STAMP)
    assert wire(plain) == plain
    assert convert.view_set_to_observation(wire(plain)) == obs
    with_pano = replace(plain, panorama=PanoramaEntry(frame_id="panorama", width=64, height=32),
                        feedback="that view does not exist", done=True)
    assert wire(with_pano) == with_pano


def test_a_decide_goal_carries_the_prompt_context(tiny_world):
    env = Environment(tiny_world)
    view_set = convert.observation_to_view_set(env.reset(tiny_world.episodes[0]), task(tiny_world), "vs", STAMP)
    context = PromptContext(backtrack="you came from B", history="A -> B")
    goal = Decide.Goal(view_set=typed.view_set_to_ros(view_set), context=typed.context_to_ros(context))
    goal = cdr(goal)
    back = typed.view_set_from_ros(goal.view_set, goal.context)
    assert back.context == context and replace(back, context=None) == view_set


@pytest.mark.parametrize("action", [move(2), STOP, retrace("B")])
def test_decisions_and_world_actions_round_trip(tiny_world, action):
    decision = Answer(view_set_id="vs", task=task(tiny_world), step=3, decision=Decision(action, 0.75, "the cafe sign"),
                      policy="random", latency_s=0.012, records=[{"prompt_sha": "ab", "raw": ["x"]}])
    assert wire(decision) == decision
    assert wire(ActionMsg(view_set_id="vs", action=action)) == ActionMsg(view_set_id="vs", action=action)


def test_a_failed_decision_and_a_missing_confidence_survive(tiny_world):
    failed = Answer(view_set_id="vs", task=task(tiny_world), step=0, error="TimeoutError: backend",
                    policy="vlm", latency_s=30.0)
    assert wire(failed) == failed and wire(failed).decision is None
    unsure = Answer(view_set_id="vs", task=task(tiny_world), step=0, decision=Decision(STOP), policy="p", latency_s=0.0)
    assert wire(unsure) == unsure and wire(unsure).decision.confidence is None
    assert wire(ActionMsg(view_set_id="vs", error="boom")) == ActionMsg(view_set_id="vs", error="boom")


def test_episode_states_round_trip(tiny_world):
    idle = EpisodeMsg(status="idle")
    assert wire(idle) == idle
    ended = EpisodeMsg(status="ended", task=task(tiny_world), path=["A", "B", "A"], actions=[0, "back", None],
                       steps=3, end_reason="stopped", path_latlon=[[22.1, 114.2], [22.2, 114.3], [22.1, 114.2]],
                       solvable=False, metrics={"tce": 0.0, "spl": 0.25}, map_origin=MapOrigin(lat=22.0, lon=114.0))
    assert wire(ended) == ended
    errored = EpisodeMsg(status="ended", task=task(tiny_world), path=["A"], steps=0, end_reason="error",
                         error="the view source failed", solvable=True, metrics={"tce": 0.0})
    assert wire(errored) == errored


def test_outcomes_carry_the_record_and_its_headline_fields():
    record = {"episode_id": "e1", "seed": 7, "end_reason": "stopped", "metrics": {"tcp50": 100.0, "spl": 0.5},
              "rounds": [{"round": 0}], "decisions": [{"raw": ["go"]}]}
    outcome = OutcomeMsg(index=2, total=5, record=record)
    msg = typed.to_ros(outcome)
    assert (msg.episode_id, msg.seed, msg.round, msg.success, msg.end_reason) == ("e1", 7, 1, True, "stopped")
    assert {m.name: m.value for m in msg.metrics} == {"tcp50": 100.0, "spl": 0.5}
    assert wire(outcome) == outcome


def test_status_location_guidance_safety_round_trip():
    running = SupervisorStatus(state="holding", reason="no decision", episode_id="e", seed=3, round=1, step=4,
                               done=1, total=2, holds=1)
    assert wire(running) == running
    starting = SupervisorStatus(state="starting")
    assert wire(starting) == starting
    walkable = (WalkableHeading(0, 90.0, 0.0, RelativeDirection.FRONT, "C"),
                WalkableHeading(1, 270.0, None, None, None))
    location = Localisation(LocalisationStatus.ON_NODE, "B", 1.5, 90.0, "motion", walkable, 22.3, 114.1,
                            STAMP.seconds, "")
    back = wire(location)
    assert back == Localisation(**{**location.__dict__, "stamp": back.stamp})
    assert back.stamp == pytest.approx(STAMP.seconds)
    assert typed.location_to_ros(location, STAMP).header.stamp.nanosec == STAMP.nanosec  # the fix's exact stamp
    no_fix = Localisation(LocalisationStatus.NO_FIX, None, None, None, None, (), None, None, 12.5, "no fix yet")
    assert wire(no_fix) == no_fix
    guidance = Guidance(action="move", node="B", next_node="C", heading_deg=90.0, relative_deg=-10.0,
                        direction="front", distance_m=42.0, reason="the sign", confidence=0.5, text="the sign",
                        view_set_id="vs", episode_id="e", stamp=STAMP)
    assert wire(guidance) == guidance
    stop = Guidance(action="stop", node="B", next_node=None, heading_deg=None, relative_deg=None, direction=None,
                    distance_m=None, reason="", confidence=None, text="", view_set_id="vs", episode_id="e",
                    stamp=STAMP)
    assert wire(stop) == stop
    safety = BridgeStatus(moving=False, code="estop", reason="e-stop latched", estop=True, connected=True,
                          stamp=STAMP)
    assert wire(safety) == safety


def test_motion_commands_use_standard_fields():
    goal = CommandMsg(stamp=STAMP, command=Goal(lat=22.3, lon=114.1, alt_m=30.0, heading_deg=90.0,
                                                speed_m_s=5.0), reason="go", view_set_id="vs")
    msg = typed.to_ros(goal)
    assert msg.type == ci.MotionCommand.GOAL and msg.goal.latitude == 22.3 and msg.goal.altitude == 30.0
    assert wire(goal) == goal
    plain_goal = CommandMsg(stamp=STAMP, command=Goal(lat=1.0, lon=2.0))
    assert wire(plain_goal) == plain_goal
    velocity = CommandMsg(stamp=STAMP, command=Velocity(east_m_s=1.0, north_m_s=-2.0, up_m_s=0.5,
                                                        yaw_rate_deg_s=90.0))
    msg = typed.to_ros(velocity)
    assert (msg.velocity.linear.x, msg.velocity.linear.y, msg.header.frame_id) == (1.0, -2.0, "enu")
    assert msg.velocity.angular.z == pytest.approx(math.pi / 2)
    back = wire(velocity).command
    assert back.yaw_rate_deg_s == pytest.approx(90.0) and back.east_m_s == 1.0
    hold = CommandMsg(stamp=STAMP, command=HOLD, reason="no decision")
    assert wire(hold) == hold


def test_text_ros_cannot_encode_is_cleaned_not_fatal(tiny_world):
    decision = Answer(view_set_id="vs", task=task(tiny_world), step=0, decision=Decision(STOP, None, "go \ud800 left"),
                      policy="vlm", latency_s=0.0, records=[{"raw": "x\udfff"}])
    back = wire(decision)
    assert back.decision.rationale == "go \ufffd left" and back.records == [{"raw": "x\ufffd"}]
    outcome = OutcomeMsg(index=0, total=1, record={"episode_id": "e\ud800", "seed": 0, "note": "ok 😀"})
    assert wire(outcome).record == {"episode_id": "e\ufffd", "seed": 0, "note": "ok 😀"}


@pytest.mark.parametrize("msg, says", [
    (ci.AgentAction(kind=7), "AgentAction.kind"),
    (ci.Episode(status=9), "Episode.status"),
    (ci.Outcome(record_json="[1, 2]"), "JSON object"),
    (ci.Decision(ok=True, action=ci.AgentAction(kind=ci.AgentAction.MOVE, index=-1), records_json="[]"), "index"),
    (ci.Decision(ok=True, action=ci.AgentAction(kind=ci.AgentAction.STOP), records_json="{"), "Decision"),
    (ci.MotionCommand(type=5), "MotionCommand.type"),
    (ci.SupervisorStatus(state=42), "SupervisorStatus.state"),
])
def test_malformed_messages_give_one_line(msg, says):
    if isinstance(msg, ci.AgentAction):
        msg = ci.WorldAction(view_set_id="vs", ok=True, action=msg)
    with pytest.raises(ValueError) as err:
        typed.from_ros(msg)
    assert says in str(err.value) and "\n" not in str(err.value)
