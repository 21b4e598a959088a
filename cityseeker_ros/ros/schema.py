"""The records the nodes exchange, as pydantic models: view sets, decisions, actions, episodes,
outcomes, status, locations, guidance, motion commands and safety states.

On the wire each travels as its cityseeker_interfaces message (ros/typed.py converts, one
function pair per record); here they validate what a message type cannot (a move names an
index, a decision carries an action or an error) and give the JSON that run files, test
reports and `as_dict` use. This module imports neither rclpy nor message packages: evaluators
and bag tools use the records without ROS.

`to_json`/`parse` and each record's `kind` and `version` are the JSON form of bags recorded
before the typed interfaces (std_msgs/String): bag/evaluate.py still reads those.
"""
from __future__ import annotations

import json
from typing import Any, Literal, Optional, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cityseeker_ros.core.infra.text import clean_json, loads_json

VERSION = 1


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = VERSION

    def to_json(self) -> str:
        """Valid UTF-8 whatever the record holds: a lone surrogate (which ROS cannot send) is
        replaced by U+FFFD rather than failing the publish."""
        try:
            return self.model_dump_json()
        except ValueError:  # PydanticSerializationError: text that UTF-8 cannot encode
            return json.dumps(clean_json(self.model_dump(mode="json")), ensure_ascii=False, separators=(",", ":"))


R = TypeVar("R", bound=Record)


def parse(model: type[R], text: str) -> R:
    """One record from a String message's data; raises pydantic.ValidationError when malformed.

    Text from the network is cleaned here: JSON that escapes a lone surrogate ("\\ud800", which
    Python's json writes by default and pydantic refuses) is read with U+FFFD in its place."""
    try:
        return model.model_validate_json(text)
    except ValueError:
        try:
            cleaned = json.dumps(loads_json(text), ensure_ascii=False)
        except (ValueError, RecursionError):
            cleaned = None
        if cleaned is None or cleaned == text:
            raise
        return model.model_validate_json(cleaned)


class Stamp(BaseModel):
    """builtin_interfaces/Time as JSON: the header stamp of the images of a view set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sec: int
    nanosec: int = Field(ge=0, lt=1_000_000_000)


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


class ActionField(BaseModel):
    """core.tasks.environment.Action: move along view `index`, stop, or walk back to `back_to`."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["move", "stop", "back"]
    index: Optional[int] = None
    back_to: Optional[str] = None

    @model_validator(mode="after")
    def _consistent(self) -> ActionField:
        if self.kind == "move" and (self.index is None or self.back_to is not None):
            raise ValueError("a move names a view index and nothing else")
        if self.kind == "back" and (self.back_to is None or self.index is not None):
            raise ValueError("a back action names the node to walk back to and nothing else")
        if self.kind == "stop" and (self.index is not None or self.back_to is not None):
            raise ValueError("stop takes no index and no node")
        return self


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
    stamp: Stamp
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
    action: Optional[ActionField] = None
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
    action: Optional[ActionField] = None
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


class GoalField(BaseModel):
    """core.vehicles.safety.commands.Goal: go to a position (alt_m above home; heading clockwise from north)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["goal"] = "goal"
    lat: float
    lon: float
    alt_m: float = 0.0
    heading_deg: Optional[float] = None
    speed_m_s: Optional[float] = None


class VelocityField(BaseModel):
    """core.vehicles.safety.commands.Velocity: local ENU (REP 103), yaw rate positive counter-clockwise."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["velocity"] = "velocity"
    east_m_s: float
    north_m_s: float
    up_m_s: float = 0.0
    yaw_rate_deg_s: float = 0.0


class HoldField(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["hold"] = "hold"


class CommandMsg(Record):
    """A motion command from the supervisor to a vehicle bridge (AirSim, a real airframe). The
    bridge passes it through core.vehicles.safety.SafetyGate before anything moves."""

    kind: Literal["command"] = "command"
    stamp: Stamp
    command: Union[GoalField, VelocityField, HoldField] = Field(discriminator="type")
    reason: str = ""  # why: the decision's rationale, or why the supervisor holds
    view_set_id: Optional[str] = None  # the view set the decision answered


class SafetyMsg(Record):
    """What a bridge's safety gate let through, latched: code (core.vehicles.safety.codes) and reason."""

    kind: Literal["safety"] = "safety"
    stamp: Stamp
    moving: bool
    code: str
    reason: str
    estop: bool = False


class WalkableField(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int
    heading_deg: float
    relative_deg: Optional[float] = None  # to the vehicle heading, positive clockwise
    direction: Optional[str] = None  # core.streets.directions.RelativeDirection value
    target: Optional[str] = None  # the node a move along it leads to


class LocationMsg(Record):
    """core.sensing.localisation.Localisation: where on the street graph the vehicle is."""

    kind: Literal["location"] = "location"
    stamp: Stamp
    status: Literal["on-node", "between", "off-graph", "no-fix"]
    node: Optional[str] = None
    distance_m: Optional[float] = None
    heading_deg: Optional[float] = None
    heading_source: Optional[str] = None
    walkable: list[WalkableField] = Field(default_factory=list)
    lat: Optional[float] = None
    lon: Optional[float] = None
    reason: str = ""


class GuidanceMsg(Record):
    """What an AR device shows a walking user: which way to go relative to where the device
    points, how far to the next node, and why."""

    kind: Literal["guidance"] = "guidance"
    stamp: Stamp
    view_set_id: str
    episode_id: str
    action: Literal["move", "stop", "back"]
    node: str
    next_node: Optional[str] = None
    heading_deg: Optional[float] = None  # absolute, clockwise from north
    relative_deg: Optional[float] = None  # to the device heading, -180..180, positive clockwise
    direction: Optional[str] = None  # core.streets.directions.RelativeDirection value of relative_deg
    distance_m: Optional[float] = None  # to the next node
    reason: str = ""
    confidence: Optional[float] = None


class OutcomeMsg(Record):
    """A finished task from the supervisor to the evaluator: the episodes.jsonl record exactly as
    an in-process run writes it. Published reliable and transient-local with a deep history, so
    an evaluator that starts or restarts late still receives every outcome."""

    kind: Literal["outcome"] = "outcome"
    index: int  # position in the run's task list
    total: int
    record: dict[str, Any]


class SupervisorStatusMsg(Record):
    """What the supervisor is doing, latched: for operators, the runner and tests."""

    kind: Literal["supervisor_status"] = "supervisor_status"
    state: Literal["starting", "selecting", "running", "holding", "finished"]
    reason: str = ""
    episode_id: Optional[str] = None
    seed: Optional[int] = None
    round: Optional[int] = None
    step: Optional[int] = None
    done: int = 0  # tasks finished
    total: int = 0
    holds: int = 0  # times the supervisor held because no decision came


def as_dict(record: Record) -> dict[str, Any]:
    return record.model_dump(mode="json")
