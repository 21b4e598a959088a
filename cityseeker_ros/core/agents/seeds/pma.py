"""CityEQA's Planner-Manager-Actor agent (PMA) as the `pma` policy.

- Planner (one text call, first step): the paper's three-step chain of thought (objects and
  their relations, information requirements, a plan of Navigation, Exploration and Collection
  sub-tasks). `planner=false`: a fixed plan, Exploration of the question's target around the
  agent, then Collection.
- Manager (one call with the views per step): lists the landmark objects seen, which it places
  on the object-centric grid map (grid_map.py) from the agent's position, the view's heading and
  the estimated distance; process control moves through the plan; once the plan is done, Answer
  Generation (one text call) answers from what was collected. `manager=false`: no map, no
  answer generation (the collector's answer is final).
- Actors: the Navigator plans a path on the grid map to the navigation point by A* (the
  paper's Section 4.3; cells where the agent has been cost more, so the path goes round them)
  and walks the view nearest the path's bearing 10 m ahead (the paper's L^nav), never a view
  that leads where it has been (taken from this node before, or the way back) while another
  remains; when no remaining view makes progress (every one turns more than 90 degrees from the
  path) the sub-task ends as near as the streets allow (the record's state says "closest").
  Without a navigation point (landmark not on the map, or no manager), or with no path (the
  point off the map: the record says "no path"), it asks the model to choose a view or say it
  has arrived. The Explorer asks the model whether the target is in a view (the paper's MM-LLM
  check) and walks to the map's exploration points as the Navigator walks (a point it cannot
  come nearer is passed over), or to the view the model names without a map. The Collector
  answers from the view it looks at and selects an action to improve that view (the paper's
  Figure 8); turns re-ask in the same step (TurnLeft: the next view counter-clockwise within
  180 degrees; none there: the answer stands), moves take a step, KeepStill ends the plan.
  `collector=false`: one answer from the current view, no refinement.

Ids: the planner's objects keep the planner's ids ("building_1"); the map's are prefixed "map_"
("map_building_1"), and a planner id that starts with "map_" is renamed "plan_...", so no id names
two things in one prompt.

`subtask_steps` (the project's choice; the paper limits only the whole walk, navigation and
exploration together to 50 steps, Section 5.1 "Implementation Details"): by default ("auto") a
sub-task may use the steps left divided among the navigation and exploration sub-tasks left
(recomputed when it starts), so the last one may use all that is left: a fixed 15 stopped
landmark-goal episodes after 15 of 73 steps. An integer fixes the cap per sub-task.

Families: on the questions family the episode ends with `answer(text)`. On families whose stop
gives no answer (needs, landmark goals) the plan is Navigation and Exploration only: the
Collection sub-task becomes "stop" (after stepping into the view where the target was found).
Every reply that cannot be read is a counted fallback (calls.py) and the episode goes on.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional

from cityseeker_ros.core.agents.policies.base import POLICIES
from cityseeker_ros.core.agents.seeds.calls import Read, SeedAgent, decision_parser, system, user
from cityseeker_ros.core.agents.seeds.grid_map import CARDINALS, GridMap, MapObject
from cityseeker_ros.core.agents.seeds.replies import (
    ANSWER,
    ReplySchema,
    choice_enum,
    enum_field,
    flag_field,
    list_field,
    number_field,
    object_field,
    text_field,
)
from cityseeker_ros.core.agents.vlm.backend import GenerationRequest
from cityseeker_ros.core.agents.vlm.parsing import parse_single
from cityseeker_ros.core.agents.vlm.prompts import compass_word, view_image, view_letter
from cityseeker_ros.core.agents.vlm.schema import LETTERS
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import LocalFrame, circular_difference
from cityseeker_ros.core.tasks.environment import STOP, Action, Observation, View, answer, move
from cityseeker_ros.core.tasks.episode import Episode
from cityseeker_ros.core.tasks.family import family_of
from cityseeker_ros.core.tasks.landmarks.relations import xy_bearing_distance

VERSION = "cityseeker-pma/1"
KINDS = ("navigation", "exploration", "collection")
# The paper's nine collector actions less MoveUp and MoveDown: a street agent cannot fly.
COLLECTOR_ACTIONS = ("MoveForward", "MoveBack", "MoveLeft", "MoveRight", "TurnLeft", "TurnRight", "KeepStill")
_TURNS = {"turnleft": -1, "turnright": 1}
_MOVES = {"moveforward": 0.0, "moveback": 180.0, "moveleft": -90.0, "moveright": 90.0}
MAX_PLAN = 8
MAX_OBJECTS = 40  # sightings read from one manager reply
MAP_PREFIX = "map_"  # the map's ids; the planner's never start with it
LOOKAHEAD_M = 10.0  # the paper's L^nav: the Navigator walks toward the path's point this far ahead
AUTO = "auto"

PLAN_REPLY = ReplySchema("PmaPlan", {
    "objects": list_field(object_field({"id": text_field(), "class": text_field(), "name": text_field(),
                                        "state": enum_field("Known", "Unknown")}, ("id",))),
    "relationships": list_field(text_field()), "requirements": list_field(text_field()),
    "plan": list_field(object_field({"type": enum_field("Navigation", "Exploration", "Collection"),
                                     "landmark": text_field(), "direction": enum_field(*CARDINALS),
                                     "target": text_field(), "requirement": text_field()}, ("type",)))},
    ("plan",))
ANSWER_REPLY = ReplySchema("PmaAnswer", {"answer": ANSWER}, ("answer",))
COLLECT_REPLY = ReplySchema("PmaCollect", {"answer": ANSWER, "action": enum_field(*COLLECTOR_ACTIONS)},
                            ("answer", "action"))


def _letters_enum(n_views: int) -> dict[str, Any]:
    return enum_field(*LETTERS[:max(n_views, 1)])


def manager_reply(n_views: int) -> ReplySchema:
    return ReplySchema("PmaSightings", {"objects": list_field(object_field(
        {"view": _letters_enum(n_views), "class": text_field(), "name": text_field(), "distance_m": number_field(),
         "width_m": number_field()}, ("view", "class", "distance_m")))}, ("objects",))


def navigator_reply(n_views: int) -> ReplySchema:
    return ReplySchema("PmaNavigate", {"thoughts": text_field(), "action": choice_enum(n_views)}, ("action",))


def explorer_reply(n_views: int) -> ReplySchema:
    return ReplySchema("PmaExplore", {"thoughts": text_field(), "found": flag_field(),
                                      "action": _letters_enum(n_views)}, ("found", "action"))

PLANNER_SYSTEM = (
    "You are the Planner of an embodied agent in a city. Before any action is taken, you parse the {label} and "
    "formulate an executable plan, in three steps.\n"
    "Step 1. Extract all the objects mentioned in the {label}, along with the spatial relationships between them. "
    "Assign each object a unique identifier (its class and a number, such as building_1) and mark its state as "
    "Unknown, as its location is uncertain. The agent itself is a special object, \"agent\", whose state is Known: "
    "it serves as the initial landmark.\n"
    "Step 2. Extract the information necessary to {purpose} as the information requirements.\n"
    "Step 3. Formulate an executable plan by combining three types of sub-tasks based on the information "
    "requirements. Rules: first, collecting information requires a Collection sub-task, and before it the "
    "states of the relevant objects must be Known; second, the Exploration sub-task Exploration(landmark, "
    "direction, object) searches the direction side of a Known landmark and changes the object's state from "
    "Unknown to Known; third, before an Exploration, the Navigation sub-task Navigation(landmark, direction) can "
    "use a Known object as the landmark to reach the area on that side of it, which narrows the exploration "
    "scope. Directions are north, south, east or west.{goal_rule}\n"
    "Answer with one JSON object and nothing else.")
_GOAL_RULE = (" The {label} names a place to reach, not information to collect: end the plan with the sub-task "
              "that finds the place, and use no Collection sub-task.")
PLANNER_EXAMPLE = {
    "objects": [{"id": "agent", "class": "agent", "name": "", "state": "Known"},
                {"id": "building_1", "class": "building", "name": "City Hall", "state": "Unknown"},
                {"id": "car_1", "class": "car", "name": "", "state": "Unknown"}],
    "relationships": ["building_1 is north of agent", "car_1 is west of building_1"],
    "requirements": ["the colour of car_1"],
    "plan": [{"type": "Exploration", "landmark": "agent", "direction": "north", "target": "building_1"},
             {"type": "Navigation", "landmark": "building_1", "direction": "west"},
             {"type": "Exploration", "landmark": "building_1", "direction": "west", "target": "car_1"},
             {"type": "Collection", "requirement": "the colour of car_1"}]}
_EXAMPLE_QUESTION = ("There is a building named \"City Hall\" to the north of you. On the west side of it, a car "
                     "is parked. What colour is the car?")

MANAGER_SYSTEM = (
    "You are the Manager of an embodied agent in a city. You keep an object-centric map of the landmark objects "
    "around the agent (buildings, shops and other places with signs). Answer with one JSON object and nothing else.")
MANAGER_TASK = (
    "List every landmark object you see in these views: the view it is in, its class in one or two words (such "
    "as building, bank, cafe), the name on its sign if you can read it (else \"\"), its estimated distance from "
    "you in metres and its estimated width in metres.\nReply with this JSON object:\n"
    '{"objects": [{"view": "<view letter>", "class": "<class>", "name": "<name or empty>", '
    '"distance_m": <number>, "width_m": <number>}]}')

ACTOR_SYSTEM = ("You are the {role} of an embodied agent in a city. Answer with one JSON object and nothing else.")
NAVIGATOR_TASK = (
    "Current sub-task: {subtask}: go to the {direction} side of {landmark}.\n"
    "Choose the view to walk along, or STOP if you are already on the {direction} side of {landmark}.\n"
    'Reply with this JSON object:\n{{"thoughts": "<your reasoning>", "action": "<{letters} or STOP>"}}')
EXPLORER_TASK = (
    "Current sub-task: {subtask}: explore the {direction} side of {landmark} to find {target}.\n"
    "Does {target} appear in any of the views? If it does, answer found true and the view that shows it; if not, "
    "answer found false and the view to explore next.\n"
    'Reply with this JSON object:\n{{"thoughts": "<your reasoning>", "found": true or false, "action": "<{letters}>"}}')
# The paper's Figure 8, with its action set less MoveUp and MoveDown.
COLLECTOR_VQA = (
    "Task 1: Visual Q&A\n"
    "Analyze the content of the current Image and provide a concise and meaningful answer to the Question.\n"
    "Guidelines:\n"
    "-If the image is insufficient to answer the Question, use reasoning and common sense to guess an answer.\n"
    "-Your answer must be meaningful and informative. Avoid vague responses like \"It is not legible/visible...\" "
    "or \"It is not possible to determine...\"\n"
    "-Provide a concise response without including explanations, reasoning, or thought processes.\n"
    "-Compare your answer to the Reference Answer and select the better one as your final answer.")
COLLECTOR_ACTION = (
    "-Do not consider Task 2 until you have completed Task 1.\n"
    "Task 2: Action Selection\n"
    "Please, select one action from the following {n} actions: {actions}.\n"
    "Guidelines:\n"
    "-Analyze the drawback of the current image, such as occlusion, sidelong view, too far away, etc., and then "
    "select the appropriate action to adjust your view to obtain a better image.\n"
    "-Think this step is your last step to adjust view, so choose the most urgent action. If the object mentioned "
    "in the question is on the edge of the image, you can use a TurnLeft or a TurnRight to make the object fully "
    "appear in the image.\n"
    "-Keep the current view if the answer is clear and confident.\n"
    "-Use TurnLeft or TurnRight to look around if the current image does not contain the answer.")
ANSWERER_SYSTEM = (
    "You are the Answer Generation module of an embodied agent in a city. Answer the Question from the "
    "information collected. Provide a concise and meaningful answer without explanations, reasoning or thought "
    "processes; if the information is insufficient, use reasoning and common sense to guess an answer. Answer "
    "with one JSON object and nothing else.")


@dataclass
class SubTask:
    kind: str  # navigation, exploration, collection, or "stop" (families whose goal is a place)
    landmark: str = "agent"
    direction: Optional[str] = None
    target: str = ""
    requirement: str = ""
    steps: int = 0  # steps spent on it
    cap: Optional[int] = None  # the steps it may spend, set when it starts

    def words(self) -> str:
        d = self.direction or "any"
        if self.kind == "navigation":
            return f"Navigation({self.landmark}, {d})"
        if self.kind == "exploration":
            return f"Exploration({self.landmark}, {d}, {self.target})"
        return f"Collection({self.requirement})" if self.kind == "collection" else "Stop()"


@dataclass
class _Episode:
    """What PMA carries between steps of one episode."""

    plan: list[SubTask] = field(default_factory=list)
    objects: dict[str, dict[str, str]] = field(default_factory=dict)  # planner's id -> class and name
    at: int = 0  # the sub-task under way
    frame: Optional[LocalFrame] = None  # metres east and north of the start
    position: tuple[float, float] = (0.0, 0.0)
    grid: Optional[GridMap] = None
    known: dict[str, str] = field(default_factory=dict)  # planner's id -> map object id
    visited: list[tuple[float, float]] = field(default_factory=list)  # exploration points reached
    trail: list[tuple[float, float]] = field(default_factory=list)  # the positions the agent has stood at
    taken: set[tuple[str, int]] = field(default_factory=set)  # (node, view index) moves already made
    last_node: Optional[str] = None  # the node of the previous step
    routes: list[dict[str, Any]] = field(default_factory=list)  # this step's walks: sub-task, point, path, outcome
    focus: Optional[float] = None  # the heading the collector looks along
    collected: list[str] = field(default_factory=list)  # Req_info: what the collector read
    reference: Optional[str] = None  # the collector's latest answer
    collector_calls: int = 0


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _number(value: Any, low: float, high: float) -> Optional[float]:
    if isinstance(value, bool):
        return None
    try:
        x = float(str(value).strip().rstrip("m").strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        return None
    return min(max(x, low), high) if math.isfinite(x) else None


def _safe(parse: Any) -> Any:
    """A parser that never raises: a bug in reading one reply costs that call, not the episode."""
    def guarded(text: str) -> Read[Any]:
        try:
            return parse(text)
        except Exception as exc:  # noqa: BLE001 - any failure is a parse error of this call
            return Read(None, f"unreadable reply ({type(exc).__name__}: {exc})"[:300])
    return guarded


def _answer_of(schema: ReplySchema, text: str) -> Read[dict[str, Any]]:
    """The schema's fields, refused when the answer is empty."""
    read = schema.read(text)
    if not read.ok or read.fields is None:
        return Read(None, read.error or "no answer")
    if not read.fields["answer"]:
        return Read(None, "the answer is empty")
    return Read(read.fields)


def turned_view(views: tuple[View, ...], view: View, side: int) -> Optional[View]:
    """The next view to the left (side -1: counter-clockwise) or right (+1) of `view`: the one
    the least turn away on that side, within 180 degrees; None when there is none on that side
    (a view 181 degrees counter-clockwise is a right turn, not a left one)."""
    turns = [((side * (v.heading - view.heading)) % 360.0, v.index, v) for v in views if v.index != view.index]
    on_side = [t for t in turns if 0.0 < t[0] < 180.0]
    return min(on_side, key=lambda t: (t[0], t[1]))[2] if on_side else None


@POLICIES.register("pma")
class PmaPolicy(SeedAgent):
    """CityEQA's Planner-Manager-Actor agent (docs/agents.md, "PMA"). Switches: `planner`,
    `manager`, `collector` (each true by default); `collect_steps` collector calls at most (the
    paper allows 10); `subtask_steps` the steps one navigation or exploration sub-task may take
    ("auto": its share of the steps left, see the module's docstring); `arrive_m` the distance at
    which a navigation or exploration point counts as reached; `map_size_m`, `map_resolution_m`
    the grid (400 m at 1 m)."""

    agent = "pma"
    version = VERSION

    def __init__(self, backend: Optional[str] = None, model: Optional[str] = None,
                 backend_params: Optional[dict[str, Any]] = None, max_new_tokens: int = 512, fallback: str = "first",
                 planner: bool = True, manager: bool = True, collector: bool = True, collect_steps: int = 3,
                 subtask_steps: Any = AUTO, arrive_m: float = 10.0, map_size_m: float = 400.0,
                 map_resolution_m: float = 1.0, json_schema: bool = True, *, backend_instance: Any = None) -> None:
        super().__init__(backend, model, backend_params, max_new_tokens, fallback, json_schema,
                         backend_instance=backend_instance)
        self.planner = self.switch("pma", "planner", planner)
        self.manager = self.switch("pma", "manager", manager)
        self.collector = self.switch("pma", "collector", collector)
        for name, value in (("collect_steps", collect_steps), ("subtask_steps", subtask_steps)):
            if name == "subtask_steps" and value == AUTO:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                extra = ' or "auto"' if name == "subtask_steps" else ""
                raise ConfigError(f"pma policy: {name} must be an integer >= 1{extra}, got {value!r}")
        for name, value in (("arrive_m", arrive_m), ("map_size_m", map_size_m), ("map_resolution_m", map_resolution_m)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"pma policy: {name} must be a number > 0, got {value!r}")
        self.collect_steps, self.subtask_steps = collect_steps, subtask_steps
        self.arrive_m = float(arrive_m)
        self.map_size_m, self.map_resolution_m = float(map_size_m), float(map_resolution_m)
        GridMap(self.map_size_m, self.map_resolution_m)  # a bad size fails now
        self._s = _Episode()

    def settings(self) -> dict[str, Any]:
        return {"planner": self.planner, "manager": self.manager, "collector": self.collector,
                "collect_steps": self.collect_steps, "subtask_steps": self.subtask_steps, "arrive_m": self.arrive_m,
                "map_size_m": self.map_size_m, "map_resolution_m": self.map_resolution_m}

    def start(self, episode: Episode) -> None:
        self._s = _Episode(grid=GridMap(self.map_size_m, self.map_resolution_m, MAP_PREFIX) if self.manager else None)
        if self._s.grid is not None:
            self._s.known["agent"] = self._s.grid.add("agent", 0.0, 0.0, 1.0, label="start").id

    def state(self) -> dict[str, Any]:
        s = self._s
        out: dict[str, Any] = {"plan": [t.words() for t in s.plan], "subtask": s.at,
                               "position": [round(v, 1) for v in s.position], "collected": list(s.collected)}
        if s.routes:
            out["navigator"] = [dict(r) for r in s.routes]
        if s.grid is not None:
            out["map"] = [o.describe() for o in s.grid.objects()]
            out["known"] = dict(s.known)
        return out

    # --- the step ----------------------------------------------------------------------------------

    def think(self, obs: Observation) -> Action:
        s = self._s
        if s.frame is None:
            s.frame = LocalFrame(obs.lat, obs.lon)
            s.plan = self._make_plan()
        x, y = s.frame.to_xy(obs.lat, obs.lon)
        s.position = (round(float(x), 1) + 0.0, round(float(y), 1) + 0.0)  # + 0.0: never -0.0 ("0 m west")
        s.routes = []
        action = self._step(obs)
        if action.index is not None:
            s.taken.add((obs.node, action.index))
        s.trail.append(s.position)
        s.last_node = obs.node
        return action

    def _step(self, obs: Observation) -> Action:
        s = self._s
        if self.manager and obs.views:
            self._perceive(obs)
        for _ in range(len(s.plan) + 1):  # process control: finished sub-tasks give way in this step
            task = s.plan[s.at] if s.at < len(s.plan) else SubTask("collection" if self.answers else "stop")
            if self.answers and (task.kind == "collection" or obs.steps_left <= 1):
                return self._collect(obs, task)
            if task.kind in ("collection", "stop") or not obs.views:
                return STOP
            if task.cap is None:
                task.cap = self._cap(obs)
            if task.steps >= task.cap or (s.at < len(s.plan) and self._finished(task)):
                s.at += 1
                continue
            task.steps += 1
            if task.kind == "navigation":
                action = self._navigate(obs, task)
            else:
                action = self._explore(obs, task)
            if action is not None:
                return action
        return STOP

    def _cap(self, obs: Observation) -> int:
        """The steps the sub-task now starting may take: `subtask_steps`, or with "auto" its
        share of the steps left among the navigation and exploration sub-tasks left."""
        if self.subtask_steps != AUTO:
            return int(self.subtask_steps)
        left = sum(t.kind in ("navigation", "exploration") for t in self._s.plan[self._s.at:])
        return max(1, obs.steps_left // max(left, 1))

    # --- planner -----------------------------------------------------------------------------------

    def _describe(self, oid: str) -> str:
        o = self._s.objects.get(oid, {})
        if oid == "agent":
            return "where you started (agent)"
        if o and not o.get("class") and not o.get("name"):
            return f"the place the {family_of(self.episode).prompts.goal_label.lower()} is about"
        name = f' named "{o["name"]}"' if o.get("name") else ""
        return f"the {o.get('class') or 'object'}{name} ({oid})" if o else oid

    def _default_plan(self) -> list[SubTask]:
        """The fixed plan without a planner: explore around the agent for the question's target, then collect."""
        ep = self.episode
        plan = [SubTask("exploration", "agent", None, "target")]
        self._s.objects["target"] = {"class": "", "name": ""}
        return plan + [SubTask("collection", requirement=ep.instruction) if self.answers else SubTask("stop")]

    def _make_plan(self) -> list[SubTask]:
        if not self.planner:
            return self._default_plan()
        forms = family_of(self.episode).prompts
        label = forms.goal_label.lower()
        purpose = "answer the question" if forms.answers else "reach the goal"
        prompt = PLANNER_SYSTEM.format(label=label, purpose=purpose,
                                       goal_rule="" if forms.answers else _GOAL_RULE.format(label=label))
        example = f"Example:\n{forms.goal_label}: {_EXAMPLE_QUESTION}\nReply:\n{json.dumps(PLANNER_EXAMPLE)}"
        request = GenerationRequest((system(prompt), user(f"{example}\n\n{forms.goal_label}: "
                                                          f"{self.episode.instruction}\nReply:")),
                                    self.max_new_tokens)
        read = self.call("planner", request, PLAN_REPLY, _safe(self._read_plan))
        if not read.ok:
            return self._default_plan()
        plan, objects = read.value
        self._s.objects.update(objects)
        return plan

    def _read_plan(self, text: str) -> Read[tuple[list[SubTask], dict[str, dict[str, str]]]]:
        read = PLAN_REPLY.read(text)
        if not read.ok or read.fields is None:
            return Read(None, read.error or "no plan")
        steps = read.fields["plan"]
        objects = {_planner_id(o["id"]): {"class": _text(o.get("class")).lower()[:40],
                                          "name": _text(o.get("name"))[:80]}
                   for o in read.fields.get("objects", []) if o["id"]}
        plan: list[SubTask] = []
        for item in steps[:MAX_PLAN]:
            kind = item["type"].lower()
            direction = item.get("direction")
            landmark = _planner_id(_text(item.get("landmark")) or "agent")
            if kind == "navigation" and direction:
                plan.append(SubTask(kind, landmark, direction))
            elif kind == "exploration" and _text(item.get("target")):
                plan.append(SubTask(kind, landmark, direction, _planner_id(_text(item.get("target")))))
            elif kind == "collection":
                plan.append(SubTask(kind, requirement=_text(item.get("requirement")) or self.episode.instruction)
                            if self.answers else SubTask("stop"))
        plan = [t for t in plan if t.kind != "stop"]
        if not plan or all(t.kind == "collection" for t in plan) and not self.answers:
            return Read(None, "the plan holds no usable sub-task")
        if self.answers and not any(t.kind == "collection" for t in plan):
            plan.append(SubTask("collection", requirement=self.episode.instruction))
        return Read((plan if self.answers else plan + [SubTask("stop")], objects))

    # --- manager -----------------------------------------------------------------------------------

    def _views(self, obs: Observation) -> list[Any]:
        items: list[Any] = []
        for i, v in enumerate(obs.views):
            items.append(f"View {view_letter(i)} ({v.relative.value}, {int(round(v.heading)) % 360}°, "
                         f"{compass_word(v.heading)}):")
            if v.image is not None:
                items.append(view_image(v))
        return items

    def _where(self, obs: Observation) -> str:
        x, y = self._s.position
        return (f"You are {abs(x):.0f} m {'east' if x >= 0 else 'west'} and {abs(y):.0f} m "
                f"{'north' if y >= 0 else 'south'} of where you started, facing {int(round(obs.facing)) % 360}°.")

    def _perceive(self, obs: Observation) -> None:
        request = GenerationRequest((system(MANAGER_SYSTEM), user(self._where(obs), *self._views(obs), MANAGER_TASK)),
                                    self.max_new_tokens)
        read = self.call("manager", request, manager_reply(len(obs.views)),
                         _safe(lambda text: self._read_sightings(text, len(obs.views))))
        grid = self._s.grid
        assert grid is not None
        for index, cls, name, distance, width in read.value or []:
            grid.add_seen(cls, self._s.position, obs.views[index].heading, distance, width, name)

    @staticmethod
    def _read_sightings(text: str, n_views: int) -> Read[list[tuple[int, str, str, float, float]]]:
        read = manager_reply(n_views).read(text)
        if not read.ok or read.fields is None:
            return Read(None, read.error or "no objects")
        seen = []
        for item in read.fields["objects"][:MAX_OBJECTS]:
            index = LETTERS.index(item["view"])
            distance = _number(item["distance_m"], 1.0, 200.0)
            width = _number(item.get("width_m", 10.0), 1.0, 60.0) or 10.0
            cls = item["class"].lower()[:40]
            if 0 <= index < n_views and distance is not None and cls:
                seen.append((index, cls, _text(item.get("name"))[:80], distance, width))
        return Read(seen)

    def _resolve(self, oid: str) -> Optional[MapObject]:
        """The map object the planner's `oid` names: known already, else found by its name, else
        by class and relation to its landmark (the Manager's retrieval)."""
        s = self._s
        if s.grid is None:
            return None
        if oid in s.known:
            return s.grid.get(s.known[oid])
        o = s.objects.get(oid, {})
        found = s.grid.named(o["name"]) if o.get("name") else None
        if found is None and o.get("class"):
            for task in s.plan:
                if task.kind == "exploration" and task.target == oid and task.direction and task.landmark != oid:
                    base = self._resolve(task.landmark)
                    found = base and s.grid.find(o["class"], task.direction, base, o.get("name", ""))
                    break
        if found is not None:
            s.known[oid] = found.id
        return found

    def _finished(self, task: SubTask) -> bool:
        """Process control: a navigation sub-task ends at its navigation point (an exploration
        ends when the explorer reports its target found, `_explore`)."""
        if task.kind == "navigation":
            point = self._nav_point(task)
            return point is not None and self._distance(point) <= self.arrive_m
        return False

    def _nav_point(self, task: SubTask) -> Optional[tuple[float, float]]:
        landmark = self._resolve(task.landmark)
        if landmark is None or task.direction is None or self._s.grid is None:
            return None
        return self._s.grid.navigation_point(landmark, task.direction, self.arrive_m)

    def _distance(self, point: tuple[float, float]) -> float:
        x, y = self._s.position
        return math.hypot(point[0] - x, point[1] - y)

    def _toward(self, obs: Observation, task: SubTask, point: tuple[float, float]) -> Optional[Action]:
        """A step along the A* path to `point` on the map (the paper's Navigator): the view
        nearest the path's bearing LOOKAHEAD_M ahead, among the views that do not lead where the
        agent has been (all of them when every one does). None when no path exists (the point is
        off the map) or when no allowed view turns less than 90 degrees from the path: the agent
        is as near as the streets allow. The step's state ("navigator") says which."""
        s = self._s
        x, y = s.position
        route: dict[str, Any] = {"subtask": task.words(), "point": [round(point[0], 1), round(point[1], 1)]}
        s.routes.append(route)
        path = None
        if s.grid is not None:
            avoid = set().union(*(s.grid.cells_near(p, self.arrive_m / 2.0) for p in s.trail)) if s.trail else set()
            path = s.grid.path(s.position, point, avoid - s.grid.cells_near(s.position, self.arrive_m / 2.0))
        if path is None:
            route["outcome"] = "no path"
            return None
        ahead = next((p for p in path if math.hypot(p[0] - x, p[1] - y) >= LOOKAHEAD_M), path[-1])
        bearing, _ = xy_bearing_distance(ahead[0] - x, ahead[1] - y)
        fresh = [v for v in obs.views if not self._been(obs, v)]
        view = min(fresh or list(obs.views), key=lambda v: (abs(circular_difference(v.heading, bearing)), v.index))
        route["path_m"] = round(sum(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in zip(path, path[1:])), 1)
        if abs(circular_difference(view.heading, bearing)) >= 90.0:
            route["outcome"] = "closest"
            return None
        route["outcome"] = "walk"
        return move(view.index)

    def _been(self, obs: Observation, view: View) -> bool:
        """Whether `view` leads where the agent has been: taken from this node before, or the way back."""
        s = self._s
        back = (s.last_node is not None and s.last_node != obs.node
                and abs(circular_difference(view.heading, obs.facing + 180.0)) <= 30.0)
        return back or (obs.node, view.index) in s.taken

    # --- actors ------------------------------------------------------------------------------------

    def _actor_request(self, role: str, obs: Observation, task_text: str) -> GenerationRequest:
        s = self._s
        head = [f"{family_of(self.episode).prompts.goal_label}: {self.episode.instruction}", self._where(obs)]
        if s.grid is not None:
            head.append(f"Your map (east and north of where you started):\n{s.grid.to_text()}")
        head += self.context_lines()  # the supervisor's memory and map (BCR), beside the Manager's map
        return GenerationRequest((system(ACTOR_SYSTEM.format(role=role)),
                                  user("\n".join(head), *self._views(obs), task_text)), self.max_new_tokens)

    def _letters(self, obs: Observation) -> str:
        return ", ".join(view_letter(i) for i in range(len(obs.views)))

    def _navigate(self, obs: Observation, task: SubTask) -> Optional[Action]:
        point = self._nav_point(task)
        if point is not None:
            step = self._toward(obs, task, point)  # the paper's deterministic navigator: no call
            if step is not None:
                return step
            if self._s.routes[-1].get("outcome") == "closest":
                self._s.at += 1  # as near as the streets allow: the next sub-task decides in this step
                return None
        text = NAVIGATOR_TASK.format(subtask=task.words(), direction=task.direction,
                                     landmark=self._describe(task.landmark), letters=self._letters(obs))
        dirs = [v.relative.value for v in obs.views]
        read = self.call("navigator", self._actor_request("Navigator", obs, text), navigator_reply(len(obs.views)),
                         decision_parser(lambda t: parse_single(t, len(obs.views), dirs)))
        if not read.ok:
            return self.fallback_action(obs)
        if read.value.is_stop:
            self._s.at += 1  # arrived: the next sub-task decides in this step
            return None
        return move(obs.views[read.value.action_index].index)

    def _explore(self, obs: Observation, task: SubTask) -> Optional[Action]:
        s = self._s
        text = EXPLORER_TASK.format(subtask=task.words(), direction=task.direction or "any",
                                    landmark=self._describe(task.landmark), target=self._describe(task.target),
                                    letters=self._letters(obs))
        read = self.call("explorer", self._actor_request("Explorer", obs, text), explorer_reply(len(obs.views)),
                         _safe(lambda t: self._read_found(t, len(obs.views))))
        on_map = self._resolve(task.target) if task.target in s.objects else None
        if read.ok and read.value[0]:
            view = obs.views[read.value[1]]
            s.focus = view.heading
            s.at += 1
            if s.grid is not None and on_map is None and task.target in s.objects:
                o = s.objects[task.target]
                seen = s.grid.add_seen(o.get("class") or "target", s.position, view.heading, self.arrive_m, 5.0,
                                       o.get("name", ""))
                if seen is not None:
                    s.known[task.target] = seen.id
            if self.answers:
                return None  # the collector looks along that view in this step
            return move(view.index)  # a place to reach: step into the view, then stop
        point = self._exploration_point(task)
        while point is not None:
            step = self._toward(obs, task, point)
            if step is not None:
                return step
            s.visited.append(point)  # unreachable from here, or as near as the streets allow: the next point
            point = self._exploration_point(task)
        if not read.ok:
            return self.fallback_action(obs)
        return move(obs.views[read.value[1]].index)

    @staticmethod
    def _read_found(text: str, n_views: int) -> Read[tuple[bool, int]]:
        read = explorer_reply(n_views).read(text)
        if not read.ok or read.fields is None:
            return Read(None, read.error or "no reply")
        return Read((read.fields["found"], LETTERS.index(read.fields["action"])))

    def _exploration_point(self, task: SubTask) -> Optional[tuple[float, float]]:
        """The nearest exploration point not yet reached on the landmark's side (None: no map,
        landmark unknown, or every point covered)."""
        s = self._s
        landmark = self._resolve(task.landmark)
        if landmark is None or s.grid is None:
            return None
        directions = [task.direction] if task.direction else list(CARDINALS)
        for p in [p for d in directions for p in s.grid.exploration_points(landmark, d, near=s.position)]:
            if any(math.hypot(p[0] - q[0], p[1] - q[1]) < 1e-6 for q in s.visited):
                continue
            if self._distance(p) <= self.arrive_m:
                s.visited.append(p)
                continue
            return p
        return None

    def _collect(self, obs: Observation, task: SubTask) -> Action:
        """The Collector: answer from the view it looks along, adjusting the view with the paper's
        actions (turns within this step); then Answer Generation gives the final answer."""
        s = self._s
        question = self.episode.instruction
        while True:
            view = self._focus_view(obs)
            last = obs.steps_left <= 1 or s.collector_calls + 1 >= self.collect_steps
            refine = self.collector and not last
            parts: list[Any] = [f"Question: {question}", f"Reference Answer: {s.reference or 'None'}"]
            if view is not None:
                parts += [f"Image (View {view_letter(obs.views.index(view))}, {int(round(view.heading)) % 360}°, "
                          f"{compass_word(view.heading)}):"] + ([view_image(view)] if view.image is not None else [])
            else:
                parts.append("Image: none (nowhere to look)")
            tasks = COLLECTOR_VQA + ("\n" + COLLECTOR_ACTION.format(n=len(COLLECTOR_ACTIONS),
                                                                    actions=", ".join(COLLECTOR_ACTIONS))
                                     if refine else "")
            reply = ('{"answer": "<your answer>", "action": "<one of the actions>"}' if refine
                     else '{"answer": "<your answer>"}')
            request = GenerationRequest((system(ACTOR_SYSTEM.format(role="Collector")),
                                         user(*parts, f"{tasks}\nReply with this JSON object:\n{reply}")),
                                        self.max_new_tokens)
            s.collector_calls += 1
            read = self.call("collector", request, COLLECT_REPLY if refine else ANSWER_REPLY,
                             _safe(lambda t, refine=refine: self._read_collect(t, refine)))
            if read.ok:
                said, act = read.value
                s.reference = said
                where = (f", view {view_letter(obs.views.index(view))} ({int(round(view.heading)) % 360}°)"
                         if view is not None else "")
                s.collected.append(f"step {obs.step}{where}: {said}")
            else:
                act = "keepstill" if s.reference or not refine else "moveforward"
            if not refine or act == "keepstill":
                return self._final(obs)
            if act in _TURNS and view is not None:
                turned = turned_view(obs.views, view, _TURNS[act])
                if turned is None:  # nothing to see on that side: the answer stands
                    s.routes.append({"subtask": task.words(), "collector": f"no view to turn to ({act})"})
                    return self._final(obs)
                s.focus = turned.heading
                continue
            if view is None:
                return self._final(obs)
            wanted = (view.heading + _MOVES.get(act, 0.0)) % 360.0
            chosen = min(obs.views, key=lambda v: (abs(circular_difference(v.heading, wanted)), v.index))
            s.focus = chosen.heading
            return move(chosen.index)

    def _focus_view(self, obs: Observation) -> Optional[View]:
        if not obs.views:
            return None
        heading = self._s.focus if self._s.focus is not None else obs.facing
        return min(obs.views, key=lambda v: (abs(circular_difference(v.heading, heading)), v.index))

    @staticmethod
    def _read_collect(text: str, refine: bool) -> Read[tuple[str, str]]:
        read = _answer_of(COLLECT_REPLY if refine else ANSWER_REPLY, text)
        if not read.ok or read.value is None:
            return Read(None, read.error)
        return Read((read.value["answer"], read.value["action"].lower() if refine else "keepstill"))

    def _final(self, obs: Observation) -> Action:
        """Answer Generation from Req_info (with the manager), else the collector's answer; with
        no answer read at all, a stop without one."""
        s = self._s
        if self.manager and s.collected:
            info = "\n".join(s.collected)
            request = GenerationRequest((system(ANSWERER_SYSTEM), user(
                f"Question: {self.episode.instruction}\nCollected information:\n{info}\n"
                'Reply with this JSON object:\n{"answer": "<your answer>"}')), self.max_new_tokens)
            read = self.call("answerer", request, ANSWER_REPLY, _safe(lambda t: _answer_of(ANSWER_REPLY, t)))
            if read.ok:
                return answer(read.value["answer"])
        return answer(s.reference) if s.reference else STOP



def _planner_id(oid: str) -> str:
    """The planner's id, renamed when it could be taken for one of the map's ("map_...")."""
    return f"plan_{oid}" if oid.startswith(MAP_PREFIX) else oid
