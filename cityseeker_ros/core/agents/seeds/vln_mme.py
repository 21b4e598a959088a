"""navgpt and mapgpt: VLN-MME's two agent families (appendix D), on street views.

Both make one "action" call per step with the views' images: VLN-MME's system prompt (its
roles, inputs and key rules: avoid loops, do not revisit, detect arrival, prefer progress,
follow heading) and its navigation prompt (instruction, history, current heading, action
options grouped Left/Front/Right/Back, plus STOP). They differ in memory:

- `navgpt` (text summarization as memory, after NavGPT): the history is one line per move,
  "Step k: Turning heading direction <delta> degrees from <old> to <new>, and forward <m> meters
  towards <description>", the description being what the model said of the view it chose;
- `mapgpt` (text map as memory, after MapGPT): the history also names the current node, the
  visited nodes and the unexplored directions, and a "Map" field writes the topological map
  ("node_0 is connected to node_1, node_2.").

Switches: `cot` asks for the reasoning first ("reasoning": progress estimate, further analysis,
prediction; VLN-MME's <Reasoning>); `reflection` asks after the action for a "reflection" and a
"final_decision", keep or revise; on revise a second call ("replan") shows the model its reply
and asks for the action again (VLN-MME appendix D.4: "the agent replans rather than moving";
its D.8 only logs the reflection: the code follows D.4). Whether to replan is read from the
structured field `final_decision` (the enum keep/revise of the call's reply schema), never from
words elsewhere in the reply: "Keep: no change needed" keeps; an unreadable field keeps and is
noted in the step's state (`final_decision: "unread"`).
Replies are JSON objects (replies.py declares them; the action read by parsing.parse_single,
where VLN-MME reads an `Action:` line); an unreadable action is a counted fallback (the
policy's `fallback`), an unreadable replan keeps the first choice. The supervisor's context
(BCR strategies) goes into the History field, the paper's place for what the agent remembers.
"""
from __future__ import annotations

import json
from typing import Any, ClassVar, Optional

from cityseeker_ros.core.agents.policies.base import POLICIES
from cityseeker_ros.core.agents.seeds.calls import Read, SeedAgent, system, user
from cityseeker_ros.core.agents.seeds.replies import ANSWER, ReplySchema, choice_enum, enum_field, text_field
from cityseeker_ros.core.agents.seeds.walk import (
    Walk,
    action_of,
    choice_parser,
    forms_of,
    images_of,
    jsonable,
    stop_rule,
)
from cityseeker_ros.core.agents.vlm.backend import GenerationRequest, Message
from cityseeker_ros.core.agents.vlm.prompts import view_letter
from cityseeker_ros.core.agents.vlm.schema import STOP_WORD
from cityseeker_ros.core.streets.directions import RelativeDirection
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.tasks.environment import Action, Observation
from cityseeker_ros.core.tasks.episode import Episode
from cityseeker_ros.core.tasks.landmarks.relations import compass_word

VERSION = "vln-mme/1"
_GROUPS = {RelativeDirection.FRONT: "Front", RelativeDirection.FRONT_LEFT: "Front",
           RelativeDirection.FRONT_RIGHT: "Front", RelativeDirection.LEFT: "Left", RelativeDirection.RIGHT: "Right",
           RelativeDirection.BACK: "Back", RelativeDirection.BACK_LEFT: "Back", RelativeDirection.BACK_RIGHT: "Back"}
STOP_TEXT = "Have reached the destination and stop here."
DECISIONS = ("keep", "revise")


def reply_schema(n_views: int, cot: bool, reflection: bool, answers: bool) -> ReplySchema:
    """The action call's reply (and, without the reflection fields, the replan's)."""
    fields: dict[str, Any] = {}
    if cot:
        fields["reasoning"] = text_field()
    fields |= {"action": choice_enum(n_views), "description": text_field()}
    if reflection:
        fields |= {"reflection": text_field(), "final_decision": enum_field(*DECISIONS)}
    if answers:
        fields["answer"] = ANSWER
    return ReplySchema("VlnMmeReflectedAction" if reflection else "VlnMmeAction", fields, ("action",))


def _system(forms: Any, memory: str, cot: bool, reflection: bool) -> str:
    inputs = ["1. Observation - The street views at the current location, one per walkable direction, each "
              "labelled with its option ID.",
              f"2. Instruction - {forms.goal_label}: what you are asked to do.",
              "3. History - Past moves, including mistakes and loops.",
              "4. Action Options - A dictionary of possible movement choices grouped by direction. Each option has "
              "a unique ID and a text description. The direction names (Left, Front, Right, Back) are for "
              "grouping only - they are NOT part of the output."]
    if memory == "map":
        inputs.append("5. Map - The connectivity of the places you have visited, written as text.")
    fields = []
    if cot:
        fields.append('"reasoning": "1. Progress estimate: ... 2. Further analysis: ... 3. Prediction: ..."')
    fields += ['"action": "<Option_ID>"', '"description": "<Option_description>"']
    if reflection:
        fields += ['"reflection": "<is this action sound?>"', '"final_decision": "keep or revise"']
    if forms.answers:
        fields.append('"answer": "<your answer when you stop, else empty>"')
    lines = [f"You are a Vision-and-Language Navigation (VLN) agent in a city. {forms.system}",
             "Your task is to select ONE next action that follows the navigation instruction, based on:", *inputs,
             "Key Rules:",
             "- Avoid loops: Do not repeat recent viewpoints or oscillate unless required.",
             "- Do not revisit: If a viewpoint was visited multiple times, stop instead.",
             f"- Detect arrival: If the scene matches the destination in the instruction, choose '{STOP_WORD}'. "
             f"{stop_rule(forms)}",
             "- Prefer progress: Select new paths that clearly advance toward the goal.",
             "- Follow heading: Use current heading when interpreting the instruction."]
    if cot:
        lines.append("First reason step by step in \"reasoning\" before committing to your action.")
    if reflection:
        lines.append("After choosing, reflect on your action in \"reflection\" and say in \"final_decision\" whether "
                     "you keep it or revise it.")
    lines += ["Output format: one JSON object {" + ", ".join(fields) + "}",
              "- <Option_ID> must be ONLY the ID from the action options (e.g. 'A', 'B').",
              f'If stopping: {{"action": "{STOP_WORD}", "description": "{STOP_TEXT}"}}']
    return "\n".join(lines)


class VlnMmeAgent(SeedAgent):
    """The shared loop of navgpt and mapgpt; `memory` says which history and map they write."""

    memory: ClassVar[str] = ""
    version = VERSION

    def __init__(self, cot: bool = False, reflection: bool = False, **params: Any) -> None:
        super().__init__(**params)
        self.cot = self.switch(self.agent, "cot", cot)
        self.reflection = self.switch(self.agent, "reflection", reflection)
        self.start(None)

    def settings(self) -> dict[str, Any]:
        return {"cot": self.cot, "reflection": self.reflection}

    def start(self, episode: Optional[Episode]) -> None:
        self.walk = Walk()
        self.history: list[str] = []
        self.chosen: Optional[tuple[float, str]] = None  # heading and description of the last move
        self.nodes: dict[str, str] = {}  # graph node -> node_k, in order of first visit
        self.edges: dict[str, set[str]] = {}
        self.descriptions: dict[str, str] = {}  # node_k -> what the model said of it
        self.unexplored: dict[str, list[str]] = {}  # node_k -> compass words of headings not yet taken
        self._step: dict[str, Any] = {}

    def state(self) -> dict[str, Any]:
        return jsonable({**self._step, "history": len(self.history)})

    def think(self, obs: Observation) -> Action:
        self._step = {}
        self.walk.arrive(obs)
        self.remember_arrival(obs)
        forms = forms_of(getattr(self, "episode", None))
        messages = (system(_system(forms, self.memory, self.cot, self.reflection)), self.navigation(obs))
        parse = choice_parser(obs, forms.answers)
        n = len(obs.views)

        def reader(schema: ReplySchema) -> Any:
            def with_fields(reply: str) -> Read[Any]:
                choice = parse(reply)
                return Read((choice.value, schema.read(reply).fields), choice.error)
            return with_fields

        first = reply_schema(n, self.cot, self.reflection, forms.answers)
        read = self.call("action", GenerationRequest(messages, self.max_new_tokens), first, reader(first))
        parsed, fields = read.value if read.value is not None else (None, None)
        fields = fields or {}
        if self.reflection:
            self._step["final_decision"] = fields.get("final_decision", "unread")
        if self.reflection and fields.get("final_decision") == "revise":
            self._step["revised"] = True
            reply = self._log.calls[-1].raw
            again = messages + (Message("assistant", (reply,)),
                                user("Your reflection found the decision unsound, so replan rather than move: choose "
                                     "the best next action again. Return the result in the exact format specified "
                                     'above, without "reflection" and "final_decision".'))
            replan = reply_schema(n, self.cot, False, forms.answers)
            second = self.call("replan", GenerationRequest(again, self.max_new_tokens), replan, reader(replan))
            if second.value is not None and second.value[0] is not None:
                parsed, fields = second.value[0], second.value[1] or {}
        action = action_of(parsed, obs) if parsed is not None else self.fallback_action(obs)
        self.walk.leave(obs, action)
        if action.index is not None:
            view = next(v for v in obs.views if v.index == action.index)
            said = fields.get("description")
            self.chosen = (view.heading, str(said).strip()[:300] if isinstance(said, str) and said.strip()
                           else f"the street {compass_word(view.heading)}")
        return action

    # --- memory -----------------------------------------------------------------------------

    def remember_arrival(self, obs: Observation) -> None:
        node = self.nodes.setdefault(obs.node, f"node_{len(self.nodes)}")
        previous = self.walk.last
        if previous is not None and self.chosen is not None:
            before = self.nodes[previous.node]
            self.edges.setdefault(before, set()).add(node)
            self.edges.setdefault(node, set()).add(before)
            heading, description = self.chosen
            turn = circular_difference(heading, previous.facing)
            self.history.append(f"Step {len(self.history) + 1}: Turning heading direction {turn:.2f} degrees from "
                                f"{previous.facing % 360:.2f} to {heading % 360:.2f}, and forward "
                                f"{self.walk.hop_m(obs):.2f} meters towards {description}.")
            self.descriptions.setdefault(node, description)
            if self.walk.last_view is not None:
                left = self.unexplored.get(before, [])
                word = compass_word(self.walk.last_view.heading)
                self.unexplored[before] = [w for w in left if w != word]
        if node not in self.unexplored:
            self.unexplored[node] = [compass_word(v.heading) for v in obs.views if not self.walk.visited(obs, v)]

    def history_text(self, obs: Observation) -> str:
        return "\n".join(["Navigation starts.", *self.history])

    def navigation(self, obs: Observation) -> Message:
        options: dict[str, Any] = {"Left": {}, "Front": {}, "Right": {}, "Back": {}}
        for k, view in enumerate(obs.views):
            seen = "visited" if self.walk.visited(obs, view) else "unvisited"
            options[_GROUPS[view.relative]][view_letter(k)] = (
                f"The street towards {compass_word(view.heading)} ({int(round(view.heading)) % 360}°), {seen}.")
        options[STOP_WORD] = STOP_TEXT
        forms = forms_of(getattr(self, "episode", None))
        text = [f"Instruction: {forms.goal_label}: {obs.instruction}",
                f"History: {self.history_text(obs)}", *self.context_lines(),
                f"Current heading: {obs.facing % 360:.2f}°"]
        text += self.map_lines(obs)
        text += [f"Action options: {json.dumps(options, ensure_ascii=False, indent=2)}",
                 "Choose the best next action ID and its description.",
                 "Return the result in the exact format specified above.", "Observation:"]
        content: list[Any] = ["\n".join(text)]
        for k, image in enumerate(images_of(obs)):
            if image is not None:
                content += [f"Option {view_letter(k)}:", image]
        return user(*content)

    def map_lines(self, obs: Observation) -> list[str]:
        return []


@POLICIES.register("navgpt")
class NavGptAgent(VlnMmeAgent):
    """VLN-MME's text-summarization-as-memory agent (after NavGPT), with `cot` and `reflection`."""

    agent = "navgpt"
    memory = "summary"


@POLICIES.register("mapgpt")
class MapGptAgent(VlnMmeAgent):
    """VLN-MME's text-map-as-memory agent (after MapGPT), with `cot` and `reflection`."""

    agent = "mapgpt"
    memory = "map"

    def history_text(self, obs: Observation) -> str:
        node = self.nodes[obs.node]
        here = f"You are at {node}" + (f" ({self.descriptions[node]})" if node in self.descriptions else "") + "."
        visited = ", ".join(self.nodes.values())
        unexplored = "; ".join(f"{n} towards {', '.join(ws)}" for n, ws in self.unexplored.items() if ws) or "none"
        return "\n".join([super().history_text(obs), here, f"Visited nodes: {visited}.",
                          f"Unexplored directions: {unexplored}."])

    def map_lines(self, obs: Observation) -> list[str]:
        lines = [f"{n} is connected to {', '.join(sorted(self.edges[n], key=lambda m: int(m.split('_')[1])))}."
                 for n in self.nodes.values() if self.edges.get(n)]
        return [f"Map: {' '.join(lines) if lines else 'only ' + self.nodes[obs.node] + ' so far.'}"]
