"""The `improved` prompt profile: the paper's two prompts (appendix C.2) reworked, versioned and hashed.

Three shapes: the stop prompt (is the place here?), the choice prompt (which view?), both as
in the paper, and a single prompt that asks both at once to halve the calls per step. Each
view is labelled with a letter, its direction relative to where the agent faces (RIGHT is
clockwise, the reference code swaps them) and its absolute heading, and its image follows its
label, so a model never has to count images to know which is which. The stop prompt shows the
node's panorama when the policy passes one (the paper's panoramic view), else the views.
The `paper` profile (prompt_profiles.py) keeps the paper's wording and message layout instead;
docs/fidelity.md lists every difference.

The words around the episode are a `Wording`: CITYSEEKER's (the paper's need, the first task
family's) or one made by `family_wording` from another family's PromptForms (its system text,
goal label, stop question, and whether its stop gives an answer), in the same layout.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Optional

import numpy as np

from cityseeker_ros.core.agents.policies.base import PromptContext
from cityseeker_ros.core.agents.vlm.backend import Content, GenerationRequest, Message
from cityseeker_ros.core.agents.vlm.schema import (
    LETTERS,
    MAX_ANSWER_CHARS,
    SHORT_REASON_CHARS,
    STOP_WORD,
    decision_schema,
    reply_budget,
    short_decision_schema,
    short_stop_schema,
    stop_schema,
    with_answer,
)
from cityseeker_ros.core.tasks.environment import Observation, View
from cityseeker_ros.core.tasks.family import PromptForms

# Bump the number after the slash whenever any prompt's wording, order of parts, image
# placement or output schema changes: results made with different prompts must not be pooled.
# prompt_hash() changes on its own for any edit; the version names the family in reports.
PROMPT_VERSION = "cityseeker-c2/2"

SYSTEM = ("You are a helpful robot that walks through a city to help a person. The person states a need, "
          "not a place: work out what kind of place would satisfy it and look for one in the street views. "
          "Answer with one JSON object and nothing else.")

_PRIORITY = ("Prioritise the FRONT, LEFT and RIGHT directions (FRONT_LEFT and FRONT_RIGHT included); choose a "
             "BACK, BACK_LEFT or BACK_RIGHT view only if no better option exists, since it leads back the way "
             "you came.")
_CHOICE_EXAMPLE = ('{"observations": [{"view": "A", "description": "A narrow side street with no shops."}, '
                   '{"view": "B", "description": "A broad avenue lined with office buildings."}], '
                   '"thoughts": "I am hungry and need food. The avenue (B) is much more likely to have restaurants '
                   'than the side street (A).", "action": "B", "confidence": 0.78}')
_STOP_EXAMPLE = ('{"observation": "Residential buildings, a bookstore and a bus station.", '
                 '"thoughts": "I am hungry, so I need a restaurant. There is none here, so I keep going.", '
                 '"stop": false, "confidence": 0.8}')



@dataclass(frozen=True)
class Wording:
    """What the improved prompts say around an episode. `stop_task` holds "{where}" (in this
    panorama, in these views); `choice_task` and `single_task` hold "{letters}" (A, B, C)."""

    system: str
    goal_label: str
    stop_task: str
    stop_example: str
    choice_task: str
    single_task: str
    choice_example: str
    answers: bool = False  # the stop gives an answer: the replies carry an `answer` field
    compass: bool = False  # view labels name the compass direction too (goals stated by bearing)
    short: bool = False  # short replies: action or stop, confidence and a short reason; a budget to fit


CITYSEEKER = Wording(
    system=SYSTEM, goal_label="Request",
    stop_task=("State whether the place that satisfies the request is right here, {where}. Answer stop true only "
               "if you have arrived; otherwise answer false and you will choose a direction next."),
    stop_example=_STOP_EXAMPLE,
    choice_task="Choose the view whose direction most likely leads to a place that satisfies the request.",
    single_task=("If the place that satisfies the request is right here, in these views, set "
                 f'"action" to "{STOP_WORD}". Otherwise choose the view whose direction most likely leads to such a '
                 "place."),
    choice_example=_CHOICE_EXAMPLE)

# The answer's guideline, after CityEQA's Collector prompt (its appendix, Figure 8).
ANSWER_GUIDE = ("a concise and meaningful answer to the question, without explanations, reasoning or thought "
                f"processes, at most {MAX_ANSWER_CHARS} characters")
# The choice, in PReP's per-step words (its appendix G.2): "choose one in [...] as your next action".
_FAMILY_CHOICE = ("According to all information above, choose one in [{letters}] as your next action: the view whose "
                  "direction most likely brings you closer to your goal.")


def family_wording(forms: PromptForms) -> Wording:
    """The improved prompts' words for a task family other than CitySeeker's needs, from its
    PromptForms; the examples describe no particular goal."""
    if forms.answers:
        stop = (f'{forms.stop_question} Judge it {{where}}. Answer stop true only if you can answer from what you '
                f'see here, and put your answer in "answer": {ANSWER_GUIDE}. Otherwise answer false, leave '
                '"answer" empty, and you will choose a direction next.')
        single = (f'{forms.stop_question} If you can answer from what you see here, in these views, set "action" to '
                  f'"{STOP_WORD}" and put your answer in "answer": {ANSWER_GUIDE}. Otherwise leave "answer" empty. '
                  + _FAMILY_CHOICE)
    else:
        stop = (f"{forms.stop_question} Judge it {{where}}. Answer stop true only if you have arrived; otherwise "
                "answer false and you will choose a direction next.")
        single = (f'{forms.stop_question} If you have arrived, set "action" to "{STOP_WORD}". Otherwise, ' +
                  _FAMILY_CHOICE[0].lower() + _FAMILY_CHOICE[1:])
    stop_example = {"observation": "A crossing with a bank on the corner and apartment blocks along the street.",
                    "thoughts": "Nothing here matches my goal, so I keep going.", "stop": False,
                    **({"answer": ""} if forms.answers else {}), "confidence": 0.8}
    choice_example = {
        "observations": [{"view": "A", "description": "A narrow side street lined with houses."},
                         {"view": "B", "description": "A broad avenue with a tall tower in the distance."}],
        "thoughts": "The avenue (B) heads the way my goal most likely lies; the side street (A) does not.",
        "action": "B", "confidence": 0.78}
    return Wording(system=forms.system, goal_label=forms.goal_label, stop_task=stop,
                   stop_example=json.dumps(stop_example, ensure_ascii=False), choice_task=_FAMILY_CHOICE,
                   single_task=single, choice_example=json.dumps(choice_example, ensure_ascii=False),
                   answers=forms.answers, compass=True)


def view_letter(position: int) -> str:
    return LETTERS[position]


def _heading(deg: float) -> int:
    return int(round(deg)) % 360


def view_label(position: int, view: View) -> str:
    return f"View {view_letter(position)} ({view.relative.value}, {_heading(view.heading)}°)"


COMPASS = ("north", "north-east", "east", "south-east", "south", "south-west", "west", "north-west")


def compass_word(deg: float) -> str:
    """The nearest of the eight compass directions to a heading (degrees clockwise from north)."""
    return COMPASS[int(((deg % 360.0) + 22.5) // 45.0) % 8]


def _label(position: int, view: View, wording: Wording) -> str:
    if not wording.compass:
        return view_label(position, view)
    return (f"View {view_letter(position)} ({view.relative.value}, {_heading(view.heading)}°, "
            f"{compass_word(view.heading)})")


def view_image(view: View) -> np.ndarray:
    image = np.asarray(view.image)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"view {view.index}: expected an RGB uint8 image (H, W, 3), got {image.dtype} {image.shape}")
    return image


def _slot(name: str, text: Optional[str]) -> list[str]:
    return [f"{name}: {text.strip()}"] if text and text.strip() else []


def _header(obs: Observation, context: PromptContext, slots: tuple[str, ...], goal_label: str) -> list[str]:
    lines = [f"{goal_label}: {obs.instruction}",
             f"You are now at viewpoint {obs.node}, step {obs.step} ({obs.steps_left} steps left).",
             f"You are facing {_heading(obs.facing)}°. Headings are degrees clockwise from north; "
             "directions are relative to where you face, and RIGHT is clockwise."]
    names = {"backtrack": "Backtracking", "surroundings": "Historical context from previous rounds",
             "history": "Visit trajectory so far"}
    for slot in slots:
        lines += _slot(names[slot], getattr(context, slot))
    return lines


def _views(obs: Observation, wording: Wording) -> list[Content]:
    items: list[Content] = [f"There are {len(obs.views)} views, one per direction you can walk:"]
    for position, view in enumerate(obs.views):
        if view.image is None:
            items.append(f"{_label(position, view, wording)}: no image; judge it by its direction only.")
        else:
            items += [f"{_label(position, view, wording)}:", view_image(view)]
    return items


def _join(items: list[Content]) -> tuple[Content, ...]:
    """Adjacent text parts become one, so the request has the same shape with or without images."""
    out: list[Content] = []
    for item in items:
        if isinstance(item, str) and out and isinstance(out[-1], str):
            out[-1] = f"{out[-1]}\n{item}"
        else:
            out.append(item)
    return tuple(out)


def panorama_image(panorama: np.ndarray) -> np.ndarray:
    image = np.asarray(panorama)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"panorama: expected an RGB uint8 image (H, W, 3), got {image.dtype} {image.shape}")
    return image


def panorama_items(obs: Observation, panorama: np.ndarray) -> list[Content]:
    image = panorama_image(panorama)
    return [f"The panorama here shows the whole circle around you: its centre looks the way you face "
            f"({_heading(obs.facing)}°), its left and right edges look behind you.", image]


def _request(obs: Observation, context: Optional[PromptContext], slots: tuple[str, ...], task: list[str],
             schema: dict, max_new_tokens: int, wording: Wording,
             scene: Optional[list[Content]] = None) -> GenerationRequest:
    context = context or PromptContext()
    tail = task + _slot("Note about your previous answer", context.feedback)
    items: list[Content] = ["\n".join(_header(obs, context, slots, wording.goal_label)),
                            *(_views(obs, wording) if scene is None else scene), "\n".join(tail)]
    messages = (Message("system", (wording.system,)), Message("user", _join(items)))
    if wording.short:  # the token budget the short reply's schema needs, within the policy's
        max_new_tokens = min(max_new_tokens, reply_budget(schema))
    return GenerationRequest(messages, max_new_tokens=max_new_tokens, temperature=0.0, json_schema=schema)


def check_views(obs: Observation) -> None:
    if not obs.views:
        raise ValueError("no walkable view to choose from")
    if len(obs.views) > len(LETTERS):
        raise ValueError(f"{len(obs.views)} views; prompts label at most {len(LETTERS)}")


def _letters(n: int, allow_stop: bool) -> str:
    return ", ".join(list(LETTERS[:n]) + ([STOP_WORD] if allow_stop else []))


_ANSWER_SLOT = '"answer": "<your answer when you stop, else empty>", '


_REASON = f'"reason": "<why, in at most {SHORT_REASON_CHARS} characters>"'
_SHORT_STOP_EXAMPLE = '{"stop": false, "confidence": 0.8, "reason": "Nothing here fits, so I keep going."}'
SHORT_CHOICE_EXAMPLE = '{"action": "B", "confidence": 0.78, "reason": "The avenue (B) is the likelier way."}'


def _short_format(fields: str, example: str, answer: bool) -> list[str]:
    if answer:  # the example continues, so its answer is empty
        fields = fields.replace('"confidence"', f'{_ANSWER_SLOT}"confidence"', 1)
        example = example.replace('"confidence"', '"answer": "", "confidence"', 1)
    return ["Reply with this JSON object, kept short:", f"{{{fields}, {_REASON}}}", "Example reply:", example]


def _decision_format(n: int, allow_stop: bool, wording: Wording) -> list[str]:
    if wording.short:
        return _short_format(f'"action": "<one of {_letters(n, allow_stop)}>", "confidence": <number from 0 to 1>',
                             SHORT_CHOICE_EXAMPLE, wording.answers and allow_stop)
    answer = _ANSWER_SLOT if wording.answers and allow_stop else ""
    example = wording.choice_example
    if answer:  # the example continues, so its answer is empty
        example = example.replace('"confidence"', '"answer": "", "confidence"', 1)
    return ["Reply with this JSON object:",
            '{"observations": [{"view": "A", "description": "<what view A shows>"}, ...], '
            '"thoughts": "<your reasoning>", '
            f'"action": "<one of {_letters(n, allow_stop)}>", {answer}"confidence": <number from 0 to 1>}}',
            f"Make sure the number of observations equals the number of views provided ({n}), in order.",
            "Example reply for two views:", example]


def stop_prompt(obs: Observation, context: Optional[PromptContext] = None,
                max_new_tokens: int = 512, panorama: Optional[np.ndarray] = None,
                wording: Wording = CITYSEEKER) -> GenerationRequest:
    """The paper's stop prompt over the panorama (when given) or the current views; only
    {backtrack_prompt} goes in, as there."""
    if panorama is None and len(obs.views) > len(LETTERS):
        raise ValueError(f"{len(obs.views)} views; prompts label at most {len(LETTERS)}")
    where = "in this panorama" if panorama is not None else "in these views"
    if wording.short:
        task = [wording.stop_task.replace("{where}", where),
                *_short_format('"stop": true or false, "confidence": <number from 0 to 1>', _SHORT_STOP_EXAMPLE,
                               wording.answers)]
        schema = short_stop_schema()
    else:
        answer = _ANSWER_SLOT if wording.answers else ""
        task = [wording.stop_task.replace("{where}", where),
                "Reply with this JSON object:",
                '{"observation": "<what you see here>", "thoughts": "<your reasoning>", "stop": true or false, '
                f'{answer}"confidence": <number from 0 to 1>}}',
                "Example reply:", wording.stop_example]
        schema = stop_schema()
        if wording is not CITYSEEKER:
            schema.pop("description", None)  # it asks about "the place that satisfies the request"
    return _request(obs, context, ("backtrack",), task, with_answer(schema) if wording.answers else schema,
                    max_new_tokens, wording, None if panorama is None else panorama_items(obs, panorama))


def _task(sentence: str, n: int) -> str:
    return sentence.replace("{letters}", ", ".join(LETTERS[:n])) + " " + _PRIORITY


def choice_prompt(obs: Observation, context: Optional[PromptContext] = None,
                  max_new_tokens: int = 512, wording: Wording = CITYSEEKER) -> GenerationRequest:
    """The paper's choice prompt: one letter among the walkable views, never stop."""
    check_views(obs)
    n = len(obs.views)
    task = [_task(wording.choice_task, n), *_decision_format(n, False, wording)]
    schema = short_decision_schema(n, False) if wording.short else decision_schema(n, False)
    return _request(obs, context, ("backtrack", "surroundings", "history"), task, schema, max_new_tokens, wording)


def single_prompt(obs: Observation, context: Optional[PromptContext] = None,
                  max_new_tokens: int = 512, wording: Wording = CITYSEEKER) -> GenerationRequest:
    """Stop and choice in one call: the action is a letter, or STOP when the place is here."""
    check_views(obs)
    n = len(obs.views)
    task = [_task(wording.single_task, n), *_decision_format(n, True, wording)]
    schema = short_decision_schema(n, True) if wording.short else decision_schema(n, True)
    return _request(obs, context, ("backtrack", "surroundings", "history"), task,
                    with_answer(schema) if wording.answers else schema, max_new_tokens, wording)


def _image_digest(image: np.ndarray) -> bytes:
    array = np.ascontiguousarray(image)
    return hashlib.sha256(f"{array.dtype.str}{array.shape}".encode() + array.tobytes()).digest()


def prompt_hash(request: GenerationRequest, version: str = PROMPT_VERSION) -> str:
    """16 hex digits naming the exact prompt (profile version, roles, text, pixels, schema),
    equal across runs and machines, so decisions can be matched and cached by prompt."""
    h = hashlib.sha256()

    def put(tag: bytes, data: bytes) -> None:
        h.update(tag + len(data).to_bytes(8, "little") + data)

    put(b"v", version.encode())
    for message in request.messages:
        put(b"r", message.role.encode())
        for item in message.content:
            if isinstance(item, str):
                put(b"t", item.encode("utf-8", "surrogatepass"))
            else:
                put(b"i", _image_digest(item))
    if request.json_schema is not None:
        put(b"s", json.dumps(request.json_schema, sort_keys=True).encode())
    return h.hexdigest()[:16]
