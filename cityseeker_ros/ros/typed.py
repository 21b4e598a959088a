"""cityseeker_interfaces messages <-> their one Python type, as pure functions: the one place
the wire types meet the types the nodes, bag tools and tests work with. That type is a core
dataclass (core.loop.view_set.ViewSet and Answer, core.tasks.environment.Action,
core.vehicles.safety.commands.Goal/Velocity/Hold,
core.loop.state_machine.SupervisorStatus, core.loop.guidance.Guidance,
core.sensing.localisation.Localisation, core.vehicles.bridge.BridgeStatus) or, where
the core has no such concept, a record of ros.schema; one to_ros/from_ros pair per concept.

The Python types validate what a message cannot (a move names an index, a decision carries an
action or an error). The typed messages are what crosses DDS and what a bag holds, so
`ros2 interface show`, Foxglove and plain MCAP readers understand every topic.

Conventions: an optional number travels as NaN, an optional string as "" (no record field
uses "" as a value), an optional sub-message with a has_* flag. JSON remains only in the
free-form fields (Decision.records_json, Outcome.record_json). Message classes are plain
Python: no rclpy, no running graph, so tests call these directly.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Optional, Union

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Twist
from pydantic import ValidationError
from std_msgs.msg import Header

from cityseeker_interfaces import msg as ci
from cityseeker_ros.core.agents.policies.base import Decision, PromptContext
from cityseeker_ros.core.frames.geo_origin import GeoOrigin
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.infra.text import clean_json, clean_text, loads_json
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.state_machine import SupervisorStatus
from cityseeker_ros.core.loop.view_set import Answer, EpisodeBrief, PanoramaEntry, ViewEntry, ViewSet
from cityseeker_ros.core.sensing.localisation import Localisation, LocalisationStatus, WalkableHeading
from cityseeker_ros.core.streets.directions import RelativeDirection
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY
from cityseeker_ros.core.tasks.family import family_of_record
from cityseeker_ros.core.vehicles.bridge import LINK_ERROR, BridgeStatus
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Velocity
from cityseeker_ros.ros.schema import ActionMsg, CommandMsg, EpisodeMsg, MapOrigin, OutcomeMsg

# -- scalars -----------------------------------------------------------------------------------


def nan_or(value: Optional[float]) -> float:
    return math.nan if value is None else float(value)


def or_none(value: float) -> Optional[float]:
    return None if math.isnan(value) else float(value)


def text_or_none(value: str) -> Optional[str]:
    return value if value else None


def _text(value: Optional[str]) -> str:
    """ROS refuses to encode a lone surrogate: replaced by U+FFFD rather than failing a publish."""
    return clean_text(value) if value else ""


def _json(value: Any) -> str:
    return json.dumps(clean_json(value), ensure_ascii=False, separators=(",", ":"))


def _time(stamp: Optional[Stamp]) -> Time:
    return Time(sec=stamp.sec, nanosec=stamp.nanosec) if stamp is not None else Time()


def _stamp(time: Time) -> Stamp:
    return Stamp(sec=int(time.sec), nanosec=int(time.nanosec))


def _header(stamp: Optional[Stamp], frame_id: str = "") -> Header:
    return Header(stamp=_time(stamp), frame_id=frame_id)


def _geo(lat: Optional[float], lon: Optional[float], alt: Optional[float] = None) -> ci.GeoPoint:
    return ci.GeoPoint(latitude=nan_or(lat), longitude=nan_or(lon), altitude=nan_or(alt))


def origin_to_ros(origin: GeoOrigin) -> ci.GeoPoint:
    return _geo(origin.lat, origin.lon, origin.alt)


def origin_from_ros(msg: ci.GeoPoint) -> GeoOrigin:
    return GeoOrigin(float(msg.latitude), float(msg.longitude), float(msg.altitude))


def _metrics(values: Optional[Mapping[str, Any]]) -> list[ci.Metric]:
    return [ci.Metric(name=k, value=float(v)) for k, v in (values or {}).items() if isinstance(v, (int, float))]


# -- tasks and actions -------------------------------------------------------------------------


def task_to_ros(task: EpisodeBrief) -> ci.Task:
    return ci.Task(episode_id=_text(task.episode_id), city=_text(task.city), category=_text(task.category),
                   difficulty=_text(task.difficulty), instruction=_text(task.instruction),
                   request=_text(task.request), start=_text(task.start), seed=int(task.seed),
                   round=int(task.round), run=int(task.run),
                   family="" if task.family == DEFAULT_FAMILY else _text(task.family), budget=int(task.budget or 0),
                   details=_json(task.details) if task.details else "")


def task_from_ros(msg: ci.Task) -> EpisodeBrief:
    details = json.loads(msg.details) if msg.details else {}
    if not isinstance(details, dict):
        raise ValueError(f"Task.details must be a JSON object, got {msg.details[:80]!r}")
    return EpisodeBrief(episode_id=msg.episode_id, city=msg.city, category=msg.category, difficulty=msg.difficulty,
                        instruction=msg.instruction, request=msg.request, start=msg.start, seed=msg.seed,
                        round=msg.round, run=msg.run, family=msg.family or DEFAULT_FAMILY,
                        budget=msg.budget or None, details=details)


_KINDS = {"move": ci.AgentAction.MOVE, "stop": ci.AgentAction.STOP, "back": ci.AgentAction.BACK,
          "answer": ci.AgentAction.ANSWER}
_KIND_NAMES = {v: k for k, v in _KINDS.items()}


def action_to_ros(action: Optional[Action]) -> ci.AgentAction:
    if action is None:
        return ci.AgentAction(kind=ci.AgentAction.STOP, index=-1)
    return ci.AgentAction(kind=_KINDS[action.kind], index=action.index if action.index is not None else -1,
                          back_to=_text(action.back_to), answer=_text(action.answer))


def action_from_ros(msg: ci.AgentAction) -> Action:
    """ValueError for an unknown kind or an inconsistent action."""
    kind = _KIND_NAMES.get(msg.kind)
    if kind is None:
        raise ValueError(f"AgentAction.kind must be MOVE, STOP, BACK or ANSWER, got {msg.kind}")
    if kind == "answer":
        return Action(answer=msg.answer)
    if kind == "move" and msg.index < 0:
        raise ValueError(f"AgentAction.index of a MOVE must be a view index >= 0, got {msg.index}")
    if kind == "back" and not msg.back_to:
        raise ValueError("a back action names the node to walk back to and nothing else")
    return Action(index=msg.index if kind == "move" else None, back_to=msg.back_to if kind == "back" else None)


# -- view sets and decisions -------------------------------------------------------------------

CONTEXT_FIELDS = ("backtrack", "surroundings", "history", "feedback")


def context_to_ros(context: Optional[PromptContext]) -> ci.PromptContext:
    context = context or PromptContext()
    return ci.PromptContext(**{k: _text(getattr(context, k)) for k in CONTEXT_FIELDS})


def context_from_ros(msg: ci.PromptContext) -> PromptContext:
    """None where the message is empty."""
    return PromptContext(**{k: text_or_none(getattr(msg, k)) for k in CONTEXT_FIELDS})


def view_set_to_ros(view_set: ViewSet) -> ci.ViewSet:
    """The view set without images (they travel on the images topic, matched by stamp and
    frame id); its `context` travels beside it (Decide goals), not in it."""
    views = [ci.View(index=v.index, heading_deg=float(v.heading), relative=v.relative, frame_id=v.frame_id or "")
             for v in view_set.views]
    msg = ci.ViewSet(header=_header(view_set.stamp, "map"), view_set_id=view_set.view_set_id,
                     task=task_to_ros(view_set.task), node=_text(view_set.node),
                     position=_geo(view_set.lat, view_set.lon),
                     facing_deg=float(view_set.facing), step=view_set.step, steps_left=view_set.steps_left,
                     feedback=_text(view_set.feedback), views=views, done=view_set.done)
    if view_set.panorama is not None:
        msg.has_panorama = True
        msg.panorama = ci.Panorama(frame_id=view_set.panorama.frame_id, width=view_set.panorama.width,
                                   height=view_set.panorama.height)
    return msg


def view_set_from_ros(msg: ci.ViewSet, context: Optional[ci.PromptContext] = None) -> ViewSet:
    """ValueError when a field is out of range."""
    views = tuple(ViewEntry(int(v.index), float(v.heading_deg), v.relative, text_or_none(v.frame_id))
                  for v in msg.views)
    panorama = (PanoramaEntry(msg.panorama.frame_id, int(msg.panorama.width), int(msg.panorama.height))
                if msg.has_panorama else None)
    return ViewSet(msg.view_set_id, _stamp(msg.header.stamp), task_from_ros(msg.task), msg.node,
                   float(msg.position.latitude), float(msg.position.longitude), float(msg.facing_deg), int(msg.step),
                   int(msg.steps_left), text_or_none(msg.feedback), views, bool(msg.done),
                   context_from_ros(context) if context is not None else None, panorama)


def decision_to_ros(answer: Answer) -> ci.Decision:
    decision = answer.decision
    return ci.Decision(view_set_id=answer.view_set_id, task=task_to_ros(answer.task), step=answer.step,
                       ok=decision is not None, action=action_to_ros(decision.action if decision else None),
                       error=_text(answer.error), confidence=nan_or(decision.confidence if decision else None),
                       rationale=_text(decision.rationale if decision else ""), policy=_text(answer.policy),
                       latency_s=float(answer.latency_s), records_json=_json(answer.records),
                       extras_json=_json(answer.extras) if answer.extras else "")


def decision_from_ros(msg: ci.Decision) -> Answer:
    """ValueError when the action is inconsistent or records_json is not a JSON array of objects."""
    records = loads_json(msg.records_json) if msg.records_json else []
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError("Decision.records_json must be a JSON array of objects")
    extras = loads_json(msg.extras_json) if msg.extras_json else {}
    if not isinstance(extras, dict):
        raise ValueError("Decision.extras_json must be a JSON object")
    decision = Decision(action_from_ros(msg.action), or_none(msg.confidence), msg.rationale) if msg.ok else None
    return Answer(msg.view_set_id, task_from_ros(msg.task), int(msg.step), msg.policy, float(msg.latency_s),
                  decision, None if msg.ok else (msg.error or "the decision carried no action"), records, extras)


def world_action_to_ros(action: ActionMsg) -> ci.WorldAction:
    return ci.WorldAction(view_set_id=action.view_set_id, ok=action.error is None,
                          action=action_to_ros(action.action), error=_text(action.error))


def world_action_from_ros(msg: ci.WorldAction) -> ActionMsg:
    if msg.ok:
        return ActionMsg(view_set_id=msg.view_set_id, action=action_from_ros(msg.action))
    return ActionMsg(view_set_id=msg.view_set_id, error=msg.error or "the action carried no action")


# -- episodes and outcomes ---------------------------------------------------------------------

_STATUS = {"idle": ci.Episode.IDLE, "running": ci.Episode.RUNNING, "ended": ci.Episode.ENDED}
_STATUS_NAMES = {v: k for k, v in _STATUS.items()}
_SOLVABLE = {None: ci.Episode.SOLVABLE_UNKNOWN, True: ci.Episode.SOLVABLE_YES, False: ci.Episode.SOLVABLE_NO}
_SOLVABLE_VALUES = {v: k for k, v in _SOLVABLE.items()}


def _step_action(value: Union[int, None, str]) -> int:
    return ci.Episode.ACTION_STOP if value is None else ci.Episode.ACTION_BACK if value == "back" else int(value)


def _step_action_from(value: int) -> Union[int, None, str]:
    return None if value == ci.Episode.ACTION_STOP else "back" if value == ci.Episode.ACTION_BACK else int(value)


def episode_to_ros(episode: EpisodeMsg, stamp: Optional[Stamp] = None) -> ci.Episode:
    msg = ci.Episode(header=_header(stamp, "map"), status=_STATUS[episode.status], has_task=episode.task is not None,
                     path=list(episode.path), actions=[_step_action(a) for a in episode.actions],
                     steps=episode.steps, end_reason=_text(episode.end_reason), error=_text(episode.error),
                     path_geo=[_geo(p[0], p[1]) for p in episode.path_latlon], solvable=_SOLVABLE[episode.solvable],
                     metrics=_metrics(episode.metrics), has_map_origin=episode.map_origin is not None,
                     answer=_text(episode.answer))
    if episode.task is not None:
        msg.task = task_to_ros(episode.task)
    if episode.map_origin is not None:
        msg.map_origin = _geo(episode.map_origin.lat, episode.map_origin.lon)
    return msg


def episode_from_ros(msg: ci.Episode) -> EpisodeMsg:
    status = _STATUS_NAMES.get(msg.status)
    if status is None:
        raise ValueError(f"Episode.status must be IDLE, RUNNING or ENDED, got {msg.status}")
    return EpisodeMsg(status=status, task=task_from_ros(msg.task) if msg.has_task else None, path=list(msg.path),
                      actions=[_step_action_from(a) for a in msg.actions], steps=msg.steps,
                      end_reason=text_or_none(msg.end_reason), error=text_or_none(msg.error),
                      path_latlon=[[p.latitude, p.longitude] for p in msg.path_geo],
                      solvable=_SOLVABLE_VALUES.get(msg.solvable),
                      metrics={m.name: m.value for m in msg.metrics} if status == "ended" and msg.metrics else None,
                      map_origin=(MapOrigin(lat=msg.map_origin.latitude, lon=msg.map_origin.longitude)
                                  if msg.has_map_origin else None),
                      answer=text_or_none(msg.answer))


def outcome_to_ros(outcome: OutcomeMsg) -> ci.Outcome:
    record = outcome.record
    metrics = record.get("metrics") or {}
    return ci.Outcome(index=outcome.index, total=outcome.total, episode_id=_text(str(record.get("episode_id", ""))),
                      seed=int(record.get("seed", 0)), round=len(record.get("rounds") or []),
                      end_reason=_text(record.get("end_reason")),
                      success=float(metrics.get(family_of_record(record).success_metric, 0.0)) >= 100.0,
                      metrics=_metrics(metrics), record_json=_json(record))


def outcome_from_ros(msg: ci.Outcome) -> OutcomeMsg:
    record = loads_json(msg.record_json)
    if not isinstance(record, dict):
        raise ValueError("Outcome.record_json must be a JSON object")
    return OutcomeMsg(index=msg.index, total=msg.total, record=record)


_STATES = {"starting": ci.SupervisorStatus.STARTING, "selecting": ci.SupervisorStatus.SELECTING,
           "running": ci.SupervisorStatus.RUNNING, "holding": ci.SupervisorStatus.HOLDING,
           "finished": ci.SupervisorStatus.FINISHED}
_STATE_NAMES = {v: k for k, v in _STATES.items()}


def status_to_ros(status: SupervisorStatus, stamp: Optional[Stamp] = None) -> ci.SupervisorStatus:
    return ci.SupervisorStatus(header=_header(stamp), state=_STATES[status.state], reason=_text(status.reason),
                               episode_id=_text(status.episode_id), seed=status.seed or 0, round=status.round or 0,
                               step=status.step if status.step is not None else -1, done=status.done,
                               total=status.total, holds=status.holds)


def status_from_ros(msg: ci.SupervisorStatus) -> SupervisorStatus:
    state = _STATE_NAMES.get(msg.state)
    if state is None:
        raise ValueError(f"SupervisorStatus.state out of range: {msg.state}")
    running = bool(msg.episode_id)
    return SupervisorStatus(state=state, reason=msg.reason, episode_id=msg.episode_id or None,
                            seed=msg.seed if running else None, round=msg.round if running else None,
                            step=msg.step if msg.step >= 0 else None, done=msg.done, total=msg.total,
                            holds=msg.holds)


# -- live: location, guidance, commands, safety ------------------------------------------------

_LOCATION = {LocalisationStatus.ON_NODE: ci.Location.ON_NODE, LocalisationStatus.BETWEEN: ci.Location.BETWEEN,
             LocalisationStatus.OFF_GRAPH: ci.Location.OFF_GRAPH, LocalisationStatus.NO_FIX: ci.Location.NO_FIX}
_LOCATION_NAMES = {v: k for k, v in _LOCATION.items()}


def location_to_ros(location: Localisation, stamp: Optional[Stamp] = None) -> ci.Location:
    """`stamp`: the exact stamp of the fix (Localisation.stamp is its float seconds)."""
    walkable = [ci.Walkable(index=w.index, heading_deg=float(w.heading_deg), relative_deg=nan_or(w.relative_deg),
                            direction=w.direction.value if w.direction is not None else "", target=_text(w.target))
                for w in location.walkable]
    if stamp is None and location.stamp is not None:
        stamp = Stamp.from_seconds(location.stamp)
    return ci.Location(header=_header(stamp), status=_LOCATION[location.status], node=_text(location.node_id),
                       distance_m=nan_or(location.distance_m), heading_deg=nan_or(location.heading_deg),
                       heading_source=_text(location.heading_source), walkable=walkable,
                       position=_geo(location.lat, location.lon), reason=_text(location.reason))


def location_from_ros(msg: ci.Location) -> Localisation:
    status = _LOCATION_NAMES.get(msg.status)
    if status is None:
        raise ValueError(f"Location.status out of range: {msg.status}")
    walkable = tuple(WalkableHeading(int(w.index), float(w.heading_deg), or_none(w.relative_deg),
                                     RelativeDirection(w.direction) if w.direction else None, text_or_none(w.target))
                     for w in msg.walkable)
    return Localisation(status, text_or_none(msg.node), or_none(msg.distance_m), or_none(msg.heading_deg),
                        text_or_none(msg.heading_source), walkable, or_none(msg.position.latitude),
                        or_none(msg.position.longitude), _stamp(msg.header.stamp).seconds, msg.reason)


def guidance_to_ros(guidance: Guidance) -> ci.Guidance:
    """The guidance's `text` is the message's reason: what the device shows."""
    return ci.Guidance(header=_header(guidance.stamp), view_set_id=guidance.view_set_id,
                       episode_id=_text(guidance.episode_id),
                       action=ci.AgentAction(kind=_KINDS[guidance.action], index=-1),
                       node=_text(guidance.node), next_node=_text(guidance.next_node),
                       heading_deg=nan_or(guidance.heading_deg), relative_deg=nan_or(guidance.relative_deg),
                       direction=_text(guidance.direction), distance_m=nan_or(guidance.distance_m),
                       reason=_text(guidance.text), confidence=nan_or(guidance.confidence))


def guidance_from_ros(msg: ci.Guidance) -> Guidance:
    kind = _KIND_NAMES.get(msg.action.kind)
    if kind is None:
        raise ValueError(f"Guidance.action.kind out of range: {msg.action.kind}")
    return Guidance(action=kind, node=msg.node, next_node=text_or_none(msg.next_node),
                    heading_deg=or_none(msg.heading_deg), relative_deg=or_none(msg.relative_deg),
                    direction=text_or_none(msg.direction), distance_m=or_none(msg.distance_m), reason=msg.reason,
                    confidence=or_none(msg.confidence), text=msg.reason, view_set_id=msg.view_set_id,
                    episode_id=msg.episode_id, stamp=_stamp(msg.header.stamp))


def motion_to_ros(command: Command) -> tuple[int, ci.GeoPoint, float, float, Optional[Twist]]:
    if isinstance(command, Goal):
        return (ci.MotionCommand.GOAL, _geo(command.lat, command.lon, command.alt_m), nan_or(command.heading_deg),
                nan_or(command.speed_m_s), None)
    if isinstance(command, Velocity):
        twist = Twist()
        twist.linear.x, twist.linear.y, twist.linear.z = command.east_m_s, command.north_m_s, command.up_m_s
        twist.angular.z = math.radians(command.yaw_rate_deg_s)
        return ci.MotionCommand.VELOCITY, _geo(None, None), math.nan, math.nan, twist
    return ci.MotionCommand.HOLD, _geo(None, None), math.nan, math.nan, None


def command_to_ros(command: CommandMsg) -> ci.MotionCommand:
    kind, goal, heading, speed, twist = motion_to_ros(command.command)
    msg = ci.MotionCommand(header=_header(command.stamp), reason=_text(command.reason),
                           view_set_id=_text(command.view_set_id), type=kind, goal=goal,
                           goal_heading_deg=heading, speed_m_s=speed)
    if twist is not None:
        msg.header.frame_id = "enu"
        msg.velocity = twist
    return msg


def command_from_ros(msg: ci.MotionCommand) -> CommandMsg:
    """ValueError for an unknown type."""
    command: Command
    if msg.type == ci.MotionCommand.GOAL:
        alt = msg.goal.altitude
        command = Goal(lat=msg.goal.latitude, lon=msg.goal.longitude, alt_m=0.0 if math.isnan(alt) else alt,
                       heading_deg=or_none(msg.goal_heading_deg), speed_m_s=or_none(msg.speed_m_s))
    elif msg.type == ci.MotionCommand.VELOCITY:
        v = msg.velocity
        command = Velocity(east_m_s=v.linear.x, north_m_s=v.linear.y, up_m_s=v.linear.z,
                           yaw_rate_deg_s=math.degrees(v.angular.z))
    elif msg.type == ci.MotionCommand.HOLD:
        command = HOLD
    else:
        raise ValueError(f"MotionCommand.type must be HOLD, GOAL or VELOCITY, got {msg.type}")
    return CommandMsg(stamp=_stamp(msg.header.stamp), command=command, reason=msg.reason,
                      view_set_id=text_or_none(msg.view_set_id))


def safety_to_ros(safety: BridgeStatus) -> ci.SafetyStatus:
    return ci.SafetyStatus(header=_header(safety.stamp), moving=safety.moving, code=_text(safety.code),
                           reason=_text(safety.reason), estop=safety.estop)


def safety_from_ros(msg: ci.SafetyStatus) -> BridgeStatus:
    """`connected` is not on the wire: only a LINK_ERROR code says the link is down."""
    return BridgeStatus(moving=msg.moving, code=msg.code, reason=msg.reason, estop=msg.estop,
                        connected=msg.code != LINK_ERROR, stamp=_stamp(msg.header.stamp))


# -- by record type ----------------------------------------------------------------------------

# Python type -> (message class, to_ros, from_ros): the one conversion pair of each wire concept.
WIRE: dict[type, tuple[type, Callable[..., Any], Callable[[Any], Any]]] = {
    ViewSet: (ci.ViewSet, view_set_to_ros, view_set_from_ros),
    Answer: (ci.Decision, decision_to_ros, decision_from_ros),
    ActionMsg: (ci.WorldAction, world_action_to_ros, world_action_from_ros),
    EpisodeMsg: (ci.Episode, episode_to_ros, episode_from_ros),
    OutcomeMsg: (ci.Outcome, outcome_to_ros, outcome_from_ros),
    SupervisorStatus: (ci.SupervisorStatus, status_to_ros, status_from_ros),
    Localisation: (ci.Location, location_to_ros, location_from_ros),
    Guidance: (ci.Guidance, guidance_to_ros, guidance_from_ros),
    CommandMsg: (ci.MotionCommand, command_to_ros, command_from_ros),
    BridgeStatus: (ci.SafetyStatus, safety_to_ros, safety_from_ros),
    Action: (ci.AgentAction, action_to_ros, action_from_ros),
    GeoOrigin: (ci.GeoPoint, origin_to_ros, origin_from_ros),  # the frames node's map origin
}
_BY_MESSAGE = {msg_type: (record, decode) for record, (msg_type, _, decode) in WIRE.items()}  # by class


def msg_type(record: type) -> type:
    """The message class a record of this type travels as."""
    return WIRE[record][0]


def to_ros(record: Any) -> Any:
    return WIRE[type(record)][1](record)


def from_ros(msg: Any) -> Any:
    """The record of a received message; ValueError with one line naming the message type and
    the first problem when it is malformed (a bad enum value, an inconsistent action)."""
    return record_from(_BY_MESSAGE[type(msg)][0], msg)


def record_from(record: type, msg: Any, *extra: Any) -> Any:
    """A `record` from a message of its wire type: rclpy's, or any object with the same fields
    (a bag reader's); `extra` goes to the decoder (a Decide goal's context for a view set).
    Errors as from_ros."""
    decode = WIRE[record][2]
    try:
        return decode(msg, *extra)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "message"
        raise ValueError(f"malformed {WIRE[record][0].__name__}: {where}: {first.get('msg')}") from None
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"malformed {WIRE[record][0].__name__}: {first_line}") from None
