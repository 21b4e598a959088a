"""The JSON form of the records the nodes exchange, and the records that have no core type yet.

On the wire each concept travels as its cityseeker_interfaces message and, in Python, as ONE
type: a core dataclass where the core has the concept (core.tasks.environment.Action,
core.vehicles.safety.commands.Goal/Velocity/Hold, core.loop.state_machine.SupervisorStatus,
core.loop.guidance.Guidance, core.sensing.localisation.Localisation,
core.vehicles.airsim.bridge.BridgeStatus, core.infra.stamp.Stamp), else a record below
(ros/typed.py converts, one function pair per concept). This module imports neither rclpy nor
message packages: evaluators and bag tools use the records without ROS.

JSON: run files, test reports and `as_dict` use the form given here; `to_json`/`parse` and each
record's `kind` and `version` are also the JSON form of bags recorded before the typed
interfaces (std_msgs/String), which bag/evaluate.py still reads. An action keeps its old form
{"kind", "index", "back_to"} and a motion command {"type", ...fields}; core dataclasses are read
and written by pydantic's TypeAdapter, which runs their own validation (__post_init__).
"""
from __future__ import annotations

import dataclasses
import json
from functools import cache
from typing import Annotated, Any, Literal, Optional, TypeVar, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, TypeAdapter, model_validator

from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.infra.text import clean_json, loads_json
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.state_machine import SupervisorStatus
from cityseeker_ros.core.sensing.localisation import Localisation
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.core.vehicles.airsim.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Hold, Velocity

VERSION = 1

# -- core values in their JSON form ------------------------------------------------------------

_ACTION_KEYS = {"kind", "index", "back_to"}


def action_as_dict(action: Action) -> dict[str, Any]:
    return {"kind": action.kind, "index": action.index, "back_to": action.back_to}


def action_from_dict(value: Any) -> Action:
    """core Action from {"kind": "move"|"stop"|"back", "index", "back_to"} (an Action passes)."""
    if isinstance(value, Action):
        return value
    if not isinstance(value, dict) or not set(value) <= _ACTION_KEYS:
        raise ValueError(f"an action is an object with keys {', '.join(sorted(_ACTION_KEYS))}")
    kind, index, back_to = value.get("kind"), value.get("index"), value.get("back_to")
    if kind == "move" and (index is None or back_to is not None):
        raise ValueError("a move names a view index and nothing else")
    if kind == "back" and (back_to is None or index is not None):
        raise ValueError("a back action names the node to walk back to and nothing else")
    if kind == "stop" and (index is not None or back_to is not None):
        raise ValueError("stop takes no index and no node")
    if kind not in ("move", "stop", "back"):
        raise ValueError(f"action kind must be move, stop or back, got {kind!r}")
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
    SupervisorStatus: "supervisor_status",
    Guidance: "guidance",
    Localisation: "location",
    BridgeStatus: "safety",
}


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
    body = _adapter(type(record)).dump_python(record, mode="json")
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


class Task(BaseModel):
    """What an agent may know about its episode (no target, no reference route), and the key
    of one run of it: a decision node resets its policy whenever this key changes."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str
    city: str
    category: str
    difficulty: str
    instruction: str
    request: str
    start: str
    seed: int  # with episode_id and round, seeds the policy's random stream (episode_rng)
    round: int = 0
    run: int  # the replay node's counter: restarting the same episode is a new run

    def key(self) -> tuple[str, int, int, int]:
        return self.episode_id, self.seed, self.round, self.run


class ViewEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int
    heading: float  # absolute, degrees clockwise from north
    relative: str  # core.streets.directions.RelativeDirection value, relative to `facing`
    # header.frame_id of this view's image on the images topic (stamped with the view set's
    # stamp); None: the view set carries no image for it
    frame_id: Optional[str] = None


class PanoramaEntry(BaseModel):
    """The node's panorama (core ViewSource.panorama_view): equirectangular, width = 2 x height,
    its centre column looking along the view set's `facing`. Sent on the images topic like a view."""

    model_config = ConfigDict(extra="forbid")

    frame_id: str  # header.frame_id of its image (stamped with the view set's stamp)
    width: int = Field(gt=0)
    height: int = Field(gt=0)


class ViewSetMsg(Record):
    """The observation at the current node: one entry per walkable heading. The images come
    separately as sensor_msgs/CompressedImage, matched by (stamp, frame_id)."""

    kind: Literal["view_set"] = "view_set"
    view_set_id: str  # opaque and unique; an action answers exactly one view set
    stamp: StampJson
    task: Task
    node: str
    lat: float
    lon: float
    facing: float  # direction of travel, degrees clockwise from north
    step: int
    steps_left: int
    feedback: Optional[str] = None  # why the previous action was rejected
    views: list[ViewEntry] = Field(default_factory=list)
    done: bool = False  # the episode has ended: nothing to decide
    # The supervisor's BCR prompt slots (core PromptContext: backtrack, surroundings, history);
    # set only on the view sets the supervisor forwards to the decision node.
    context: Optional[dict[str, Optional[str]]] = None
    # The node's panorama, for the VLM's stop prompt; None: the world node sends none (its view
    # source has none, or its `panorama` parameter is off) and the stop prompt shows the views.
    panorama: Optional[PanoramaEntry] = None

    def image_frames(self) -> list[str]:
        """Every image this view set carries: the views', then the panorama's."""
        frames = [v.frame_id for v in self.views if v.frame_id is not None]
        return frames + [self.panorama.frame_id] if self.panorama is not None else frames


class DecisionMsg(Record):
    """A policy's answer to one view set. Exactly one of `action` and `error` is set."""

    kind: Literal["decision"] = "decision"
    view_set_id: str
    task: Task
    step: int
    action: Optional[ActionJson] = None
    confidence: Optional[float] = None
    rationale: str = ""
    error: Optional[str] = None  # the policy or its backend failed: the episode ends with `error`
    policy: str
    latency_s: float  # decision time on the worker, images decoded included
    # The policy's own per-decision log (prompt hash, raw reply...: Policy.step_records) for
    # this decision, so an evaluator writes the same "decisions" as an in-process run.
    records: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_outcome(self) -> DecisionMsg:
        if (self.action is None) == (self.error is None):
            raise ValueError("a decision carries either an action or an error")
        return self


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
    task: Optional[Task] = None
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
