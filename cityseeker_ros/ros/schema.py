"""The JSON form of the records the nodes exchange, and the records that have no core type yet.

On the wire each concept travels as its cityseeker_interfaces message and, in Python, as ONE
type: a core dataclass where the core has the concept (core.loop.view_set.ViewSet, Answer and
EpisodeBrief, core.tasks.environment.Action, core.vehicles.safety.commands.Goal/Velocity/Hold,
core.loop.state_machine.SupervisorStatus, core.loop.guidance.Guidance,
core.sensing.localisation.Localisation, core.vehicles.bridge.BridgeStatus,
core.infra.stamp.Stamp), else a record below
(ros/typed.py converts, one function pair per concept). This module imports neither rclpy nor
message packages: evaluators and bag tools use the records without ROS.

JSON: run files, test reports and `as_dict` use the form given here; `to_json`/`parse` and each
record's `kind` and `version` are also the JSON form of bags recorded before the typed
interfaces (std_msgs/String), which bag/evaluate.py still reads. An action keeps its old form
{"kind", "index", "back_to"}, a motion command {"type", ...fields} and an Answer the flat form of
a decision (its Decision's action, confidence and rationale beside view_set_id...); other core
dataclasses are read and written by pydantic's TypeAdapter, which runs their own validation
(__post_init__).
"""
from __future__ import annotations

import dataclasses
import json
from functools import cache
from typing import Annotated, Any, Literal, Optional, TypeVar, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, TypeAdapter, model_validator

from cityseeker_ros.core.agents.policies.base import Decision
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.infra.text import clean_json, loads_json
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.state_machine import SupervisorStatus
from cityseeker_ros.core.loop.view_set import Answer, EpisodeBrief, ViewSet
from cityseeker_ros.core.sensing.localisation import Localisation
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Hold, Velocity

VERSION = 1

# -- core values in their JSON form ------------------------------------------------------------

_ACTION_KEYS = {"kind", "index", "back_to", "answer"}


def action_as_dict(action: Action) -> dict[str, Any]:
    """The JSON form; `answer` appears only on an answer, so moves and stops read as before."""
    out = {"kind": action.kind, "index": action.index, "back_to": action.back_to}
    return out | ({"answer": action.answer} if action.answer is not None else {})


def action_from_dict(value: Any) -> Action:
    """core Action from {"kind": "move"|"stop"|"back"|"answer", "index", "back_to", "answer"} (an
    Action passes)."""
    if isinstance(value, Action):
        return value
    if not isinstance(value, dict) or not set(value) <= _ACTION_KEYS:
        raise ValueError(f"an action is an object with keys {', '.join(sorted(_ACTION_KEYS))}")
    kind, index, back_to, answer = value.get("kind"), value.get("index"), value.get("back_to"), value.get("answer")
    if kind == "answer":
        if not isinstance(answer, str) or index is not None or back_to is not None:
            raise ValueError("an answer names its text and nothing else")
        return Action(answer=answer)
    if answer is not None:
        raise ValueError("only an answer action carries an answer")
    if kind == "move" and (index is None or back_to is not None):
        raise ValueError("a move names a view index and nothing else")
    if kind == "back" and (back_to is None or index is not None):
        raise ValueError("a back action names the node to walk back to and nothing else")
    if kind == "stop" and (index is not None or back_to is not None):
        raise ValueError("stop takes no index and no node")
    if kind not in ("move", "stop", "back"):
        raise ValueError(f"action kind must be move, stop, back or answer, got {kind!r}")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        raise ValueError(f"a move's index is an integer, got {index!r}")
    return Action(index=index, back_to=back_to)


_COMMANDS: dict[str, type] = {"goal": Goal, "velocity": Velocity, "hold": Hold}
_COMMAND_NAMES = {v: k for k, v in _COMMANDS.items()}


def command_as_dict(command: Command) -> dict[str, Any]:
    return {"type": _COMMAND_NAMES[type(command)], **dataclasses.asdict(command)}


def command_from_dict(value: Any) -> Command:
    """core Goal/Velocity/Hold from {"type": "goal"|"velocity"|"hold", ...its fields}."""
    if isinstance(value, (Goal, Velocity, Hold)):
        return value
    if not isinstance(value, dict) or value.get("type") not in _COMMANDS:
        raise ValueError("a command is an object whose type is goal, velocity or hold")
    cls = _COMMANDS[value["type"]]
    fields = {k: v for k, v in value.items() if k != "type"}
    if cls is Hold:
        if fields:
            raise ValueError("a hold has no fields")
        return HOLD
    return _adapter(cls).validate_python(fields, strict=False)


# Fields of the records below that hold a core value, with its JSON form.
ActionJson = Annotated[Action, BeforeValidator(action_from_dict), PlainSerializer(action_as_dict)]
CommandJson = Annotated[Union[Goal, Velocity, Hold], BeforeValidator(command_from_dict),
                        PlainSerializer(command_as_dict)]
StampJson = Annotated[Stamp, BeforeValidator(lambda v: _adapter(Stamp).validate_python(v))]

# -- records -----------------------------------------------------------------------------------


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = VERSION

    def to_json(self) -> str:
        return to_json(self)


R = TypeVar("R")

# JSON `kind` of the core dataclasses that are records on their own.
KINDS: dict[type, str] = {
    ViewSet: "view_set",
    Answer: "decision",
    SupervisorStatus: "supervisor_status",
    Guidance: "guidance",
    Localisation: "location",
    BridgeStatus: "safety",
}




def answer_as_dict(answer: Answer) -> dict[str, Any]:
    """An answer in the JSON form of a decision: the policy's decision flattened into it."""
    decision = answer.decision
    return {"view_set_id": answer.view_set_id, "task": _adapter(EpisodeBrief).dump_python(answer.task, mode="json"),
            "step": answer.step, "action": action_as_dict(decision.action) if decision is not None else None,
            "confidence": decision.confidence if decision is not None else None,
            "rationale": decision.rationale if decision is not None else "", "error": answer.error,
            "policy": answer.policy, "latency_s": answer.latency_s, "records": list(answer.records)}


_ANSWER_KEYS = {"view_set_id", "task", "step", "action", "confidence", "rationale", "error", "policy", "latency_s",
                "records"}


def answer_from_dict(data: dict[str, Any]) -> Answer:
    """An Answer from the JSON form of a decision (answer_as_dict's)."""
    extra = set(data) - _ANSWER_KEYS
    if extra:
        raise ValueError(f"Answer: extra fields not permitted: {', '.join(sorted(extra))}")
    data = dict(data)
    action, confidence, rationale = data.pop("action", None), data.pop("confidence", None), data.pop("rationale", "")
    decision = None
    if action is not None:
        decision = _adapter(Decision).validate_python({"action": action_from_dict(action), "confidence": confidence,
                                                       "rationale": rationale})
    return _adapter(Answer).validate_python({**data, "decision": decision})


# JSON forms of the core dataclasses that TypeAdapter would not write as the records always were.
_AS_DICT = {Answer: answer_as_dict}
_FROM_DICT = {Answer: answer_from_dict}


@cache
def _adapter(cls: type) -> TypeAdapter:
    return TypeAdapter(cls)


def _validate(model: type[R], data: Any) -> R:
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_validate(data)
    if not isinstance(data, dict):
        raise ValueError(f"a {model.__name__} is a JSON object")
    kind = data.pop("kind", KINDS.get(model))
    if kind != KINDS.get(model):
        raise ValueError(f"kind must be {KINDS.get(model)!r}, got {kind!r}")
    if data.pop("version", VERSION) != VERSION:
        raise ValueError(f"version must be {VERSION}")
    if model in _FROM_DICT:
        return _FROM_DICT[model](data)
    extra = set(data) - {f.name for f in dataclasses.fields(model)}
    if extra:
        raise ValueError(f"{model.__name__}: extra fields not permitted: {', '.join(sorted(extra))}")
    return _adapter(model).validate_python(data)


def parse(model: type[R], text: str) -> R:
    """One record from JSON (a String message's data); raises ValueError (pydantic's
    ValidationError included) when malformed.

    Text from the network is cleaned here: JSON that escapes a lone surrogate ("\\ud800", which
    Python's json writes by default and pydantic refuses) is read with U+FFFD in its place."""
    try:
        data = loads_json(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    return _validate(model, data)


def as_dict(record: Any) -> dict[str, Any]:
    """The JSON form of a record or a core dataclass record (with its `kind` and `version`)."""
    if isinstance(record, BaseModel):
        return record.model_dump(mode="json")
    if isinstance(record, Action):
        return action_as_dict(record)
    if isinstance(record, (Goal, Velocity, Hold)):
        return command_as_dict(record)
    encode = _AS_DICT.get(type(record))
    body = encode(record) if encode is not None else _adapter(type(record)).dump_python(record, mode="json")
    kind = KINDS.get(type(record))
    return {"version": VERSION, "kind": kind, **body} if kind is not None else body


def to_json(record: Any) -> str:
    """Valid UTF-8 whatever the record holds: a lone surrogate (which ROS cannot send) is
    replaced by U+FFFD rather than failing the publish."""
    if isinstance(record, BaseModel):
        try:
            return record.model_dump_json()
        except ValueError:  # PydanticSerializationError: text that UTF-8 cannot encode
            pass
    return json.dumps(clean_json(as_dict(record)), ensure_ascii=False, separators=(",", ":"))


class ActionMsg(Record):
    """What the world should do for view set `view_set_id`; anything else is ignored, so a
    stale or repeated action can never move the agent twice."""

    kind: Literal["action"] = "action"
    view_set_id: str
    action: Optional[ActionJson] = None
    error: Optional[str] = None  # end the episode with end reason `error` and this message

    @model_validator(mode="after")
    def _one_outcome(self) -> ActionMsg:
        if (self.action is None) == (self.error is None):
            raise ValueError("an action message carries either an action or an error")
        return self


class MapOrigin(BaseModel):
    """The `map` frame of the pose topics: east/north metres (azimuthal equidistant) about here."""

    model_config = ConfigDict(extra="forbid")

    lat: float
    lon: float


class EpisodeMsg(Record):
    """The replay's episode state, latched: idle, running (after every step) or ended (with
    the metrics of core.evaluation.metrics, so an evaluator need not load the world)."""

    kind: Literal["episode"] = "episode"
    status: Literal["idle", "running", "ended"]
    task: Optional[EpisodeBrief] = None
    path: list[str] = Field(default_factory=list)
    # per step: the view index moved along, None for stop, "back" for a retraced hop
    actions: list[Union[int, None, Literal["back"]]] = Field(default_factory=list)
    steps: int = 0
    end_reason: Optional[str] = None
    error: Optional[str] = None
    path_latlon: list[list[float]] = Field(default_factory=list)
    solvable: Optional[bool] = None
    metrics: Optional[dict[str, float]] = None
    map_origin: Optional[MapOrigin] = None
    answer: Optional[str] = None  # an episode ended by answer(text): the text


class CommandMsg(Record):
    """A motion command from the supervisor to a vehicle bridge (AirSim, a real airframe). The
    bridge passes it through core.vehicles.safety.SafetyGate before anything moves."""

    kind: Literal["command"] = "command"
    stamp: StampJson
    command: CommandJson
    reason: str = ""  # why: the decision's rationale, or why the supervisor holds
    view_set_id: Optional[str] = None  # the view set the decision answered


class OutcomeMsg(Record):
    """A finished task from the supervisor to the evaluator: the episodes.jsonl record exactly as
    an in-process run writes it. Published reliable and transient-local with a deep history, so
    an evaluator that starts or restarts late still receives every outcome."""

    kind: Literal["outcome"] = "outcome"
    index: int  # position in the run's task list
    total: int
    record: dict[str, Any]
