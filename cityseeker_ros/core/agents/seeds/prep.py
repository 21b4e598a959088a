"""prep: PReP's perceive, reflect and plan agent (Zeng et al., appendix G.1's prompts).

Per step, in this order (docs/agents.md lists what is faithful and what is not):

1. perception, one call per view with its image. On landmark goals it asks the paper's two
   questions for every landmark the episode lists ("Is the <landmark> visible in the image?",
   "How far is that place away from the camera?"); the landmark's direction is the view's
   heading. The calculator (goal_inference.py) turns the sightings and the description into this
   step's goal inference by vector sum: "Now you infer that the goal is in <direction> <distance>".
   On families without landmarks (needs, questions) it asks the model to describe the view; the
   descriptions go to the planner as text.
2. reflection (switch `reflection`), text only: a "memory" call summarises the episodic memory
   (one sentence per move, the paper's format) into semantic memory; on landmark goals, once an
   inference exists, a "reflection" call reads every inference (absolute coordinates, so a past
   one points at the same place from here) and answers where the goal most likely is. The
   calculator turns those coordinates into the goal's direction and distance from here; an
   unreadable reply falls back to the calculator's own reconciliation (outliers dropped, the
   rest averaged).
3. planning, text only: with `planning` on, the paper's planning prompt (the old plan, which
   step is being carried out, whether to update it, the new plan, the action); with it off,
   only the action (G.4; with both off G.2, "plain PReP"). An unreadable reply keeps the old
   plan and takes the policy's fallback action.

Positions are whole metres east and north of the episode's start (the paper: grid steps of
50 m). The paper's agent never decides to stop; ours may choose STOP (the family's stop
question; on questions the stop carries the answer).
"""
from __future__ import annotations

import re
from typing import Any, Optional

from cityseeker_ros.core.agents.policies.base import POLICIES
from cityseeker_ros.core.agents.seeds.calls import Read, SeedAgent, system, user
from cityseeker_ros.core.agents.seeds.goal_inference import (
    Inference,
    Sighting,
    direction_from,
    infer_goal,
    reconcile,
)
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
from cityseeker_ros.core.agents.seeds.walk import (
    XY,
    Walk,
    action_of,
    choice_parser,
    forms_of,
    heading_words,
    images_of,
    jsonable,
    option_ids,
    stop_rule,
    xy_text,
)
from cityseeker_ros.core.agents.vlm.backend import GenerationRequest
from cityseeker_ros.core.agents.vlm.parsing import read_object
from cityseeker_ros.core.agents.vlm.prompts import view_letter
from cityseeker_ros.core.tasks.environment import Action, Observation
from cityseeker_ros.core.tasks.episode import Episode
from cityseeker_ros.core.tasks.landmarks.relations import Relation

VERSION = "prep/1"
ROLE = ("You are an agent navigating a city by perceiving, reflecting and planning. Answer with one JSON object "
        "and nothing else.")
PLAN_FORMAT = ('Reply with one JSON object: {"current_state": "Step <n>", "yes_or_no": "Yes or No", '
               '"new_plan": ["1. ...", "2. ..."], "action_reason": "...", "action": "<one of the choices>"')
ACTION_FORMAT = '{"action_reason": "...", "action": "<one of the choices>"'
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
SIGHTINGS = ReplySchema("PrepSightings", {"landmarks": list_field(object_field(
    {"name": text_field(), "visible": flag_field(), "distance_m": number_field()}, ("name",)))}, ("landmarks",))
DESCRIPTION = ReplySchema("PrepDescription", {"description": text_field()}, ("description",))
SUMMARY = ReplySchema("PrepSummary", {"summary": text_field()}, ("summary",))
GOAL = ReplySchema("PrepGoal", {"Thought_Q1": text_field(), "Answer_Q1": list_field(number_field()),
                                "Thought_Q2": text_field(), "Answer_Q2": text_field()}, ())


def plan_schema(n_views: int, planning: bool, answers: bool) -> ReplySchema:
    """The planning call's reply: the paper's plan fields (G.1) with `planning`, else the action alone (G.4)."""
    fields: dict[str, Any] = {}
    if planning:
        fields |= {"current_state": text_field(), "yes_or_no": enum_field("Yes", "No"),
                   "new_plan": list_field(text_field())}
    fields |= {"action_reason": text_field(), "action": choice_enum(n_views)}
    if answers:
        fields["answer"] = ANSWER
    return ReplySchema("PrepPlan" if planning else "PrepAction", fields, ("action",))
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def _ordinal(k: int) -> str:
    return _ORDINALS[k] if k < len(_ORDINALS) else f"{k + 1}th"


def _coordinates(value: Any) -> Optional[XY]:
    """(x, y) from [x, y], {"x":, "y":} or text holding two numbers such as "(56, -26)"."""
    if isinstance(value, dict):
        value = [value.get("x"), value.get("y")]
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return float(value[0]), float(value[1])
    if isinstance(value, str):
        numbers = _NUMBER.findall(value)
        if len(numbers) >= 2:
            return float(numbers[0]), float(numbers[1])
    return None


def _goal_reader(text: str) -> Read[XY]:
    """The reflection's Answer_Q1 as (x, y): [x, y], {"x":, "y":} or "(56, -26)" (the schema asks
    for [x, y]; a free-text reply may write it any of these ways)."""
    found = GOAL.read(text)
    raw = read_object(text, ("answer_q1",))
    said = _coordinates(raw.fields.get("answer_q1")) if raw.ok and raw.fields is not None else None
    if said is None:
        return Read(None, found.error or "Answer_Q1 holds no coordinates")
    return Read(said)


def _plan(value: Any) -> Optional[list[str]]:
    if isinstance(value, str) and value.strip():
        return [value.strip()[:500]]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [v.strip()[:500] for v in value[:10]]
    return None


@POLICIES.register("prep")
class PrepAgent(SeedAgent):
    """PReP: perception per view, reflection (memory and goal inferences), planning.

    Switches (the paper's ablation, Table 1): `reflection` false drops the memory and goal
    calls (G.3: the planner sees only this step's inference); `planning` false drops the plan
    (G.4: the action alone); both false is "plain PReP" (G.2). Other parameters: those of every
    seed agent (calls.SeedAgent).
    """

    agent = "prep"
    version = VERSION

    def __init__(self, reflection: bool = True, planning: bool = True, **params: Any) -> None:
        super().__init__(**params)
        self.reflection = self.switch("prep", "reflection", reflection)
        self.planning = self.switch("prep", "planning", planning)
        self.start(None)

    def settings(self) -> dict[str, Any]:
        return {"reflection": self.reflection, "planning": self.planning}

    def start(self, episode: Optional[Episode]) -> None:
        details = episode.details if episode is not None else {}
        self.landmarks = {str(m["id"]): str(m["name"]) for m in details.get("landmarks", []) if isinstance(m, dict)}
        self.goal_relations = [Relation.from_json(d) for d in details.get("goal_relations", [])]
        self.landmark_relations = [Relation.from_json(d) for d in details.get("landmark_relations", [])]
        self.walk = Walk()
        self.memory: list[str] = []  # episodic memory: one sentence per move
        self.pending: Optional[str] = None  # this move's sentence, finished on arrival
        self.inferences: list[Inference] = []
        self.summary = ""  # semantic memory
        self.plan: list[str] = []
        self.goal: Optional[XY] = None  # the reconciled goal
        self._step: dict[str, Any] = {}

    @property
    def uses_landmarks(self) -> bool:
        return bool(self.landmarks and self.goal_relations)

    def state(self) -> dict[str, Any]:
        return jsonable({**self._step, "plan": list(self.plan), "goal": self.goal and [round(c, 1) for c in self.goal],
                         "inferences": len(self.inferences)})

    # --- the step ---------------------------------------------------------------------------

    def think(self, obs: Observation) -> Action:
        here = self.walk.here(obs)
        self.walk.arrive(obs)
        if self.pending is not None:
            self.memory.append(f"{self.pending} You then arrived at {xy_text(here)}.")
            self.pending = None
        self._step = {}
        current = self.perceive(obs, here)
        if self.reflection:
            self.reflect(obs, here)
        action = self.decide_move(obs, here, current)
        self.walk.leave(obs, action)
        if action.index is not None:
            chosen = next(v for v in obs.views if v.index == action.index)
            self.pending = (f"You were at {xy_text(here)}. You could move to "
                            f"{[heading_words(v) for v in obs.views]} from there. "
                            f"You chose to move to {heading_words(chosen)}.")
        return action

    # --- perception -------------------------------------------------------------------------

    def perceive(self, obs: Observation, here: XY) -> Optional[Inference]:
        """Each view asked in turn; on landmark goals, this step's goal inference (or None)."""
        sightings: list[Sighting] = []
        self.descriptions: dict[str, str] = {}
        for k, (view, image) in enumerate(zip(obs.views, images_of(obs))):
            if image is None:
                continue  # nothing to perceive
            where = f"The image is the street view towards {heading_words(view)} from where you stand."
            if self.uses_landmarks:
                names = ", ".join(self.landmarks.values())
                text = (f"{where}\nFor each of these landmarks: {names}.\nQ: Is the <landmark> visible in the image? "
                        "If it is visible: How far is that place away from the camera?\nReply with one JSON object: "
                        '{"landmarks": [{"name": "<landmark>", "visible": true, "distance_m": <metres>}]}, listing '
                        "only the landmarks that are visible (an empty list if none).")
                read = self.call("perception", self._request(text, image), SIGHTINGS)
                sightings += self._sightings(read, here, view.heading)
            else:
                text = (f"{where}\nQ: Describe what you see in the image: the kind of street, the shops, signs and "
                        'landmarks.\nReply with one JSON object: {"description": "..."}')
                read = self.call("perception", self._request(text, image), DESCRIPTION)
                if read.ok:
                    self.descriptions[view_letter(k)] = read.value["description"].strip()[:500]
        self._step["sightings"] = [[s.landmark, round(s.bearing_deg), round(s.distance_m)] for s in sightings]
        goal = infer_goal(sightings, self.goal_relations, self.landmark_relations) if sightings else None
        if goal is None:
            return None
        inference = Inference(obs.step, here, goal)
        self.inferences.append(inference)
        return inference

    def _sightings(self, read: Read[Any], here: XY, heading: float) -> list[Sighting]:
        if not read.ok or not isinstance(read.value.get("landmarks"), list):
            return []
        by_name = {name.lower(): lm for lm, name in self.landmarks.items()} | {lm.lower(): lm for lm in self.landmarks}
        out = []
        for item in read.value["landmarks"]:
            if item.get("visible") is False:
                continue
            lm = by_name.get(item["name"].lower())
            distance = item.get("distance_m")
            if lm is None or distance is None or not 0 < distance < 100_000:
                continue
            out.append(Sighting(lm, here, heading, float(distance)))
        return out

    # --- reflection -------------------------------------------------------------------------

    def reflect(self, obs: Observation, here: XY) -> None:
        if self.memory:
            listing = "\n".join(f"{k + 1}. {m}" for k, m in enumerate(self.memory))
            text = (f"Q: Here is your memory list in time sequence.\n{listing}\nSummarize all your memory, what can "
                    'you learn from it?\nReply with one JSON object: {"summary": "..."}')
            read = self.call("memory", self._request(text), SUMMARY)
            if read.ok:
                self.summary = read.value["summary"].strip()[:2000]
        if not self.inferences:
            return
        calculated, kept = reconcile(self.inferences)
        lines = [f"The {_ordinal(k)} time you inferred the goal was at {xy_text(i.goal)}."
                 for k, i in enumerate(self.inferences)]
        latest = self.inferences[-1]
        now = (f" Now you infer that the goal is in {direction_from(here, latest.goal).phrase()}."
               if latest.step == obs.step else "")
        text = (f"Q: You are now at {xy_text(here)}. {' '.join(lines)}{now} According to all your inferences, what "
                "are the goal coordinates most likely to be? What is the corresponding goal direction from current "
                'position?\nReply with one JSON object: {"Thought_Q1": "...", "Answer_Q1": [x, y], '
                '"Thought_Q2": "...", "Answer_Q2": "..."}')
        read = self.call("reflection", self._request(text), GOAL, _goal_reader)
        said = read.value
        self.goal = said if said is not None else calculated
        self._step["goal_by"] = "model" if said is not None else "calculator"
        self._step["kept_inferences"] = len(kept)

    # --- planning ---------------------------------------------------------------------------

    def decide_move(self, obs: Observation, here: XY, current: Optional[Inference]) -> Action:
        forms = forms_of(getattr(self, "episode", None))
        choices = option_ids(obs)
        parts = [f"{forms.goal_label}: {obs.instruction}", f"Q: You are now at {xy_text(here)}."]
        if obs.views:
            parts.append("Your current connection includes "
                         f"{[f'{view_letter(k)}: {heading_words(v)}' for k, v in enumerate(obs.views)]}. " +
                         " ".join(f"{view_letter(k)} is {'Visited' if self.walk.visited(obs, v) else 'Unvisited'}."
                                  for k, v in enumerate(obs.views)))
        for letter, description in self.descriptions.items():
            parts.append(f"View {letter} shows: {description}")
        if self.reflection and self.goal is not None:
            d = direction_from(here, self.goal)
            parts.append(f"The goal coordinates are most likely to be {xy_text(self.goal)}. The goal "
                         f"{xy_text(self.goal)} is in {d.word} {d.distance_m:.0f} m from current position "
                         f"{xy_text(here)}.")
        elif not self.reflection and current is not None:
            parts.append(f"Now you infer that the goal is in {direction_from(here, current.goal).phrase()}.")
        if self.reflection and self.summary:
            parts.append(self.summary)
        parts += self.context_lines()  # the supervisor's memory and map, beside the agent's own (BCR)
        if self.planning:
            label = "The plan is" if self.reflection else "The last plan is"
            parts.append(f"{label} {self.plan}. Which step of the plan are you currently implementing? According to "
                         "all information above, should the plan be updated?. If yes, show the new plan. According "
                         f"to your plan and current connection, choose one in {choices} as your next action.")
        else:
            parts.append(f"According to all information above, choose one in {choices} as your next action.")
        parts.append(stop_rule(forms))
        answer = ', "answer": "<your answer when you stop, else empty>"' if forms.answers else ""
        parts.append((PLAN_FORMAT if self.planning else "Reply with one JSON object: " + ACTION_FORMAT) + answer + "}")
        text = "\n".join(parts)
        parse = choice_parser(obs, forms.answers)
        schema = plan_schema(len(obs.views), self.planning, forms.answers)

        def plan_and_choice(reply: str) -> Read[Any]:
            choice = parse(reply)
            fields = schema.read(reply).fields if self.planning else None
            return Read((choice.value, fields), choice.error)

        read = self.call("planning", self._request(text), schema, plan_and_choice)
        parsed, fields = read.value if read.value is not None else (None, None)
        if fields:
            new_plan = _plan(fields.get("new_plan"))
            if new_plan is not None and str(fields.get("yes_or_no", "yes")).strip().lower().startswith("y") \
                    or new_plan is not None and not self.plan:
                self.plan = new_plan
            self._step["current_state"] = str(fields.get("current_state", ""))[:100]
        return action_of(parsed, obs) if parsed is not None else self.fallback_action(obs)

    def _request(self, text: str, image: Any = None) -> GenerationRequest:
        forms = forms_of(getattr(self, "episode", None))
        content = (text,) if image is None else (text, image)
        return GenerationRequest((system(f"{ROLE} {forms.system}"), user(*content)), self.max_new_tokens)
