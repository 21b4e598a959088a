"""Prompt profiles by name: `improved` (prompts.py, the default) and `paper` (here).

`paper` is the protocol of the paper (appendix C.2) in the message layout of the authors'
reference code: user messages only, in order instruction, output format, example, the
slots, the request, then the images unlabelled in one message; the stop prompt shows the
node's panorama; both calls are made at every step; the action is a letter and a bare number
in a reply counts from 0. The wording is the appendix's; docs/fidelity.md lists what the
reference code says differently and every other difference. Our fixes (RGB order, correct
LEFT/RIGHT, the JSON schema with a retry) apply to both profiles; switches in the policy turn
them off for an exact reproduction.

A profile's `template_hash` is the prompt hash of its requests for one fixed synthetic step,
so any change of wording, order, layout or schema changes it; results record it.

Both profiles speak CitySeeker's needs, the first task family, in the paper's words. For an
episode of another family, `family_profile` gives the same profile, layout and parsing with
that family's words (its PromptForms: system text, goal label, stop question, whether the stop
answers) and a version of its own, `<profile version>+<family>/<FAMILY_VERSION>`, so results
made with different prompts never pool.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.policies.base import PromptContext
from cityseeker_ros.core.agents.vlm import prompts
from cityseeker_ros.core.agents.vlm.backend import Content, GenerationRequest, Message
from cityseeker_ros.core.agents.vlm.parsing import MAX_CHARS, parse_choice, parse_single, parse_stop
from cityseeker_ros.core.agents.vlm.schema import LETTERS, ParsedDecision, with_answer
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.directions import RelativeDirection
from cityseeker_ros.core.tasks.environment import Observation, View
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY
from cityseeker_ros.core.tasks.family import PromptForms, get_family

# (observation, context, max_new_tokens, panorama or None) -> request
Builder = Callable[[Observation, Optional[PromptContext], int, Optional[np.ndarray]], GenerationRequest]
Parser = Callable[[str, Observation], ParsedDecision]

PAPER_VERSION = "cityseeker-paper/1"
# Bump when the words made from a family's PromptForms (family_wording, paper_wording) change.
FAMILY_VERSION = "1"


@dataclass(frozen=True)
class PromptProfile:
    name: str
    version: str
    stop: Builder
    choice: Builder
    single: Optional[Builder]  # None: the profile has no single-call form
    parse_stop: Parser
    parse_choice: Parser
    parse_single: Optional[Parser]
    always_choose: bool  # ask the choice prompt even when the stop prompt stopped (the paper's two calls)
    stop_shows_panorama: bool = True  # its stop prompt shows the node's panorama when it is given one
    forms: Optional[PromptForms] = None  # None: the paper's need; else the family words it speaks

    @property
    def template_hash(self) -> str:
        return _template_hash(self)


def _directions(obs: Observation) -> list[str]:
    return [v.relative.value for v in obs.views]


# --- improved: prompts.py --------------------------------------------------------------------

def _improved(wording: prompts.Wording, version: str, forms: Optional[PromptForms] = None) -> PromptProfile:
    """The improved profile speaking `wording`: CitySeeker's (forms None) or a family's, either of
    them with short replies."""
    answers = wording.answers
    return PromptProfile(
        name="improved", version=version,
        stop=lambda obs, ctx, n, pano: prompts.stop_prompt(obs, ctx, n, panorama=pano, wording=wording),
        choice=lambda obs, ctx, n, pano: prompts.choice_prompt(obs, ctx, n, wording=wording),
        single=lambda obs, ctx, n, pano: prompts.single_prompt(obs, ctx, n, wording=wording),
        parse_stop=lambda text, obs: parse_stop(text, answers=answers),
        parse_choice=lambda text, obs: parse_choice(text, len(obs.views), _directions(obs)),
        parse_single=lambda text, obs: parse_single(text, len(obs.views), _directions(obs), answers=answers),
        always_choose=False, forms=forms)


IMPROVED = _improved(prompts.CITYSEEKER, prompts.PROMPT_VERSION)


def _improved_for(forms: PromptForms, version: str) -> PromptProfile:
    return _improved(prompts.family_wording(forms), version, forms)


# --- paper: appendix C.2 ---------------------------------------------------------------------

_STOP_INSTRUCTION = (
    "Instruction: You are a helpful robot that analyses images according to question and helps them find the way "
    "to reach their destination. Given the question, state whether the scene content satisfies the user's "
    "requirement.")
_STOP_OUTPUT = {"overall_observation": "There are residential buildings, a bookstore, and a bus station.",
                "thoughts": "I am hungry, so I should find a restaurant. No restaurant here, keep going.",
                "action": 0}
_CHOICE_OUTPUT = {
    "perspective_observation": {
        "A": "A narrow side street with no shops or amenities nearby.",
        "B": "A broad avenue lined with numerous office buildings, suggesting a higher chance of restaurants and "
             "other services."},
    "thoughts": "I'm hungry and need the route most likely to lead to food. The broad avenue (B) lined with office "
                "buildings is much more likely to have restaurants, while the narrow side street (A) lacks any "
                "amenities. Therefore, I should head toward B.",
    "action": "B", "score": 0.78}


def _example(n_images: int, output: dict[str, Any], text: str = "I am hungry") -> str:
    """The appendix's example: a text and `n_images` images in, the JSON reply out."""
    parts = [f'  {{"type": "text", "text": {json.dumps(text, ensure_ascii=False)}}}'] + [
        '  {"type": "image_url", "image_url": "..."}'] * n_images
    return ("Example:\nInput:\n[\n" + ",\n".join(parts) + "\n]\nOutput:\n"
            + json.dumps(output, indent=2, ensure_ascii=False))


_TURN = "\nNow it's your turn.\nInput:"
_STOP_EXAMPLE = (_example(1, _STOP_OUTPUT) + "\nIf you think you have already arrived at the destination, output "
                 "action -1 for stop; otherwise 0." + _TURN)
_CHOICE_INSTRUCTION = (
    "Instruction: You are a helpful robot that analyses multiple candidate images and selects the one that best "
    "answers the user's question. Return its index (A, B, C ...) together with a confidence score in [0, 1].")
_CHOICE_EXAMPLE = _example(2, _CHOICE_OUTPUT)


@dataclass(frozen=True)
class PaperWording:
    """What the paper profile's messages say around an episode: its two instructions and examples."""

    stop_instruction: str
    stop_example: str
    choice_instruction: str
    choice_example: str
    answers: bool = False  # the stop gives an answer: its reply carries an `answer` field


CITYSEEKER = PaperWording(_STOP_INSTRUCTION, _STOP_EXAMPLE, _CHOICE_INSTRUCTION, _CHOICE_EXAMPLE)


def paper_wording(forms: PromptForms) -> PaperWording:
    """The paper profile's words for a family other than CitySeeker's needs: the appendix's
    instructions with the family's system text and stop question, examples about no goal in particular."""
    goal = f"<the {forms.goal_label.lower()}>"
    stop_output: dict[str, Any] = {"overall_observation": "There are residential buildings, a bank, and a bus station.",
                                   "thoughts": "Nothing here matches my goal, keep going.", "action": 0}
    if forms.answers:
        stop_output["answer"] = ""
        rule = (f'If you can answer from what you see here, output action -1 for stop and put your answer in '
                f'"answer": {prompts.ANSWER_GUIDE}; otherwise output 0 and leave "answer" empty.')
    else:
        rule = "If you think you have already arrived at the destination, output action -1 for stop; otherwise 0."
    choice_output = {
        "perspective_observation": {"A": "A narrow side street lined with houses.",
                                    "B": "A broad avenue with a tall tower in the distance."},
        "thoughts": "The avenue (B) heads the way my goal most likely lies; the side street (A) does not. "
                    "Therefore, I should head toward B.",
        "action": "B", "score": 0.78}
    return PaperWording(
        stop_instruction=f"Instruction: {forms.system} {forms.stop_question}",
        stop_example=_example(1, stop_output, goal) + "\n" + rule + _TURN,
        choice_instruction=(f"Instruction: {forms.system} Select the candidate image whose direction best leads "
                            "towards your goal. Return its index (A, B, C ...) together with a confidence score "
                            "in [0, 1]."),
        choice_example=_example(2, choice_output, goal), answers=forms.answers)


def paper_stop_schema() -> dict[str, Any]:
    """The stop reply of the appendix's example, with the confidence score its text announces."""
    return {"type": "object", "title": "StopReply",
            "properties": {"overall_observation": {"type": "string"}, "thoughts": {"type": "string"},
                           "action": {"type": "integer", "enum": [-1, 0]},
                           "score": {"type": "number", "minimum": 0, "maximum": 1}},
            "required": ["overall_observation", "thoughts", "action", "score"]}


def paper_choice_schema(n_views: int) -> dict[str, Any]:
    letters = list(LETTERS[:n_views])
    return {"type": "object", "title": "ChoiceReply",
            "properties": {"perspective_observation": {"type": "object",
                                                       "properties": {k: {"type": "string"} for k in letters},
                                                       "required": letters},
                           "thoughts": {"type": "string"},
                           "action": {"type": "string", "enum": letters},
                           "score": {"type": "number", "minimum": 0, "maximum": 1}},
            "required": ["perspective_observation", "thoughts", "action", "score"]}


def _format(schema: dict[str, Any]) -> str:
    """{format_instructions}: our own sentence and the schema (the reference used its library's text)."""
    return ("Output Format: Reply with one JSON object that conforms to this JSON schema:\n"
            + json.dumps(schema, ensure_ascii=False))


def _query(obs: Observation) -> str:
    return f"{obs.instruction}\nYou are now at viewpoint {obs.node}."


def _images(obs: Observation) -> tuple[Content, ...]:
    """The views' images in order, unlabelled as in the reference; a view without one says so."""
    return tuple(prompts.view_image(v) if v.image is not None else f"(no image for perspective {LETTERS[i]})"
                 for i, v in enumerate(obs.views))


def _user(*content: Content) -> Message:
    return Message("user", tuple(content))


def _feedback(context: PromptContext) -> list[Message]:
    """Our retry's note (a fix the paper does not have), last, so the paper's layout stays intact."""
    text = (context.feedback or "").strip()
    return [_user(f"Note about your previous answer: {text}")] if text else []


def _slot(text: Optional[str], template: str = "{}") -> list[Message]:
    return [_user(template.format(text.strip()))] if text and text.strip() else []


def paper_stop(obs: Observation, context: Optional[PromptContext] = None, max_new_tokens: int = 512,
               panorama: Optional[np.ndarray] = None, wording: PaperWording = CITYSEEKER) -> GenerationRequest:
    """Instruction, format, example, the request, {backtrack_prompt}, the panorama (or, where
    the view source has none, the views), each a user message."""
    context = context or PromptContext()
    scene = (prompts.panorama_image(panorama),) if panorama is not None else _images(obs)
    schema = with_answer(paper_stop_schema()) if wording.answers else paper_stop_schema()
    messages = [_user(wording.stop_instruction), _user(_format(schema)), _user(wording.stop_example),
                _user(_query(obs)), *_slot(context.backtrack), _user(*scene), *_feedback(context)]
    return GenerationRequest(tuple(messages), max_new_tokens=max_new_tokens, temperature=0.0, json_schema=schema)


def _direction_prompt(obs: Observation) -> str:
    return json.dumps({LETTERS[i]: v.relative.value for i, v in enumerate(obs.views)})


def paper_choice(obs: Observation, context: Optional[PromptContext] = None, max_new_tokens: int = 512,
                 panorama: Optional[np.ndarray] = None, wording: PaperWording = CITYSEEKER) -> GenerationRequest:
    """Instruction, format, example, {perspective_prompt}, {direction_prompt}, the BCR slots,
    the request, the views unlabelled in order, each a user message."""
    prompts.check_views(obs)
    context = context or PromptContext()
    n = len(obs.views)
    schema = paper_choice_schema(n)
    messages = [
        _user(wording.choice_instruction), _user(_format(schema)), _user(wording.choice_example),
        _user(f"There are {n} perspectives. Make sure the number of observations equals the number of "
              "perspectives provided."),
        _user(f"{_direction_prompt(obs)}. Prioritise the FORWARD, LEFT, and RIGHT directions; move BACK only if "
              "no better option exists."),
        *_slot(context.backtrack),
        *_slot(context.surroundings, "Historical context from previous rounds: {}."),
        *_slot(context.history, "Visit trajectory so far: {}."),
        _user(_query(obs)), _user(*_images(obs)), *_feedback(context)]
    return GenerationRequest(tuple(messages), max_new_tokens=max_new_tokens, temperature=0.0, json_schema=schema)


# No two quantifiers share a character (ws* (marks+ ws*)? rather than ws* marks* ws*): linear time.
_NUMBER_ACTION = re.compile(r"""["']?action["']?\s*[:=]\s*(?:["'*`]+\s*)?(\d{1,5})\s*(?:["'*`]+\s*)?[,}\n]""", re.I)


def parse_choice_zero_based(reply: Any, n_views: int, directions: Sequence[str] = ()) -> ParsedDecision:
    """parse_choice, except that a bare number is a 0-based index (the reference's prompt asks
    for "its index like 0" and reads numbers so): 0 is A, 1 is B. parse_choice reads numbers
    1-based (0 also A); when it read the same number, its view moves up by one."""
    parsed = parse_choice(reply, n_views, directions)
    m = _NUMBER_ACTION.search(reply, 0, MAX_CHARS) if isinstance(reply, str) else None  # the head the parser read
    if m is None:
        return parsed
    k = int(m.group(1))
    one_based = max(k - 1, 0)
    if parsed.ok and parsed.action_index != one_based:
        return parsed  # the parser took another field as the answer; leave its reading alone
    problems = [p for p in parsed.problems if not p.startswith(f"action {k}") and not p.startswith(f"action '{k}'")]
    if k >= n_views:
        return ParsedDecision(None, 0.0, parsed.thoughts, parsed.observations, problems,
                              error=f"action {k} is out of range: 0..{n_views - 1} (0-based)", cut=parsed.cut)
    if not parsed.ok:
        return parsed
    if k:
        problems.append(f"action {k} read 0-based as view {LETTERS[k]}")
    return ParsedDecision(k, parsed.confidence, parsed.thoughts, parsed.observations, problems, cut=parsed.cut)


PAPER = PromptProfile(
    name="paper", version=PAPER_VERSION, stop=paper_stop, choice=paper_choice, single=None,
    parse_stop=lambda text, obs: parse_stop(text),
    parse_choice=lambda text, obs: parse_choice_zero_based(text, len(obs.views), _directions(obs)),
    parse_single=None, always_choose=True)



def _paper_for(forms: PromptForms, version: str) -> PromptProfile:
    wording, answers = paper_wording(forms), forms.answers
    return PromptProfile(
        name="paper", version=version,
        stop=lambda obs, ctx, n, pano: paper_stop(obs, ctx, n, pano, wording),
        choice=lambda obs, ctx, n, pano: paper_choice(obs, ctx, n, pano, wording), single=None,
        parse_stop=lambda text, obs: parse_stop(text, answers=answers), parse_choice=PAPER.parse_choice,
        parse_single=None, always_choose=True, forms=forms)


PROFILES: dict[str, PromptProfile] = {p.name: p for p in (IMPROVED, PAPER)}
_FOR_FAMILY: dict[str, Callable[[PromptForms, str], PromptProfile]] = {"improved": _improved_for, "paper": _paper_for}


def family_profile(profile: PromptProfile, family: str) -> PromptProfile:
    """`profile` as it speaks to episodes of the task family `family`: itself for a family whose
    prompt forms are the profiles' own (CitySeeker's needs), else with the words of the family's
    PromptForms and a version naming the family. An unknown family fails listing the known ones."""
    forms = get_family(family).prompts
    if forms.native:
        return profile
    return _family_profile(profile.name, family, forms)


@cache
def _family_profile(name: str, family: str, forms: PromptForms) -> PromptProfile:
    return _FOR_FAMILY[name](forms, f"{PROFILES[name].version}+{family}/{FAMILY_VERSION}")


SHORT_VERSION = "short/1"  # bump when the short replies' words or schemas change


@cache
def short_profile(profile: PromptProfile) -> PromptProfile:
    """`profile` (improved, in any family's words) asking for short replies (prompts.Wording.short):
    the action or stop, a confidence and a reason of at most SHORT_REASON_CHARS characters, within the
    token budget their schema needs. The paper profile keeps the paper's replies."""
    if profile.name != "improved":
        raise ConfigError(f"vlm policy: short_replies works with prompt_profile improved, not {profile.name!r} "
                          "(the paper profile keeps the paper's replies)")
    wording = prompts.CITYSEEKER if profile.forms is None else prompts.family_wording(profile.forms)
    return _improved(replace(wording, short=True), f"{profile.version}+{SHORT_VERSION}", profile.forms)


def get_profile(name: str) -> PromptProfile:
    try:
        return PROFILES[str(name)]
    except KeyError:
        raise ConfigError(f"vlm policy: prompt_profile must be one of {', '.join(PROFILES)}, got {name!r}") from None


# --- the reference's labels (swap_left_right) ------------------------------------------------

_MIRROR = {RelativeDirection.LEFT: RelativeDirection.RIGHT, RelativeDirection.RIGHT: RelativeDirection.LEFT,
           RelativeDirection.FRONT_LEFT: RelativeDirection.FRONT_RIGHT,
           RelativeDirection.FRONT_RIGHT: RelativeDirection.FRONT_LEFT,
           RelativeDirection.BACK_LEFT: RelativeDirection.BACK_RIGHT,
           RelativeDirection.BACK_RIGHT: RelativeDirection.BACK_LEFT}


def mirror(direction: RelativeDirection) -> RelativeDirection:
    """LEFT for RIGHT and back: the reference's labels (its RIGHT is counter-clockwise)."""
    return _MIRROR.get(direction, direction)


# --- recording -------------------------------------------------------------------------------

def _canonical_step() -> tuple[Observation, np.ndarray]:
    """One fixed step, images included, that every profile renders for its template hash."""
    rng = np.random.default_rng(0)
    views = tuple(View(i, h, d, rng.integers(0, 256, (8, 16, 3), dtype=np.uint8))
                  for i, (h, d) in enumerate(((90.0, RelativeDirection.FRONT), (180.0, RelativeDirection.RIGHT))))
    obs = Observation("canonical", "I am hungry", "node-0", 0.0, 0.0, 90.0, views, 0, 35)
    return obs, rng.integers(0, 256, (8, 16, 3), dtype=np.uint8)


@cache
def _template_hash(profile: PromptProfile) -> str:
    obs, pano = _canonical_step()
    requests = [profile.stop(obs, None, 512, pano), profile.stop(obs, None, 512, None),
                profile.choice(obs, None, 512, None)]
    if profile.single is not None:
        requests.append(profile.single(obs, None, 512, None))
    merged = GenerationRequest(tuple(m for r in requests for m in r.messages),
                               json_schema={"schemas": [r.json_schema for r in requests]})
    return prompts.prompt_hash(merged, profile.version)


def prompt_record(policy: str, params: dict[str, Any], family: str = DEFAULT_FAMILY) -> Optional[dict[str, Any]]:
    """What config.json and summary.json say about the prompts of a run of `family`'s episodes:
    profile, version, template hash and the switches that change what the model is sent; None
    for policies that send no prompts."""
    if policy != "vlm":
        return None
    profile = family_profile(get_profile(params.get("prompt_profile", "improved")), family)
    return {"profile": profile.name, "version": profile.version, "template_hash": profile.template_hash,
            "stop_view": params.get("stop_view", "panorama"), "json_schema": bool(params.get("json_schema", True)),
            "swap_red_blue": bool(params.get("swap_red_blue", False)),
            "swap_left_right": bool(params.get("swap_left_right", False))}
