"""The VLM agent: the paper's prompts, a tolerant parser, one bounded retry, a counted fallback.

Two-call mode is the paper's protocol: the stop prompt, then the choice prompt unless the model
stopped. Single-call mode asks both in one prompt. The prompts speak the episode's task family
(prompt_profiles.family_profile); where its stop answers a question, a stop is `answer(text)`.
A reply that cannot be read is retried with the parser's error told to the model; when the
retry fails too the policy falls back (the paper's rule is action 0) and the step log says so.
A backend failure is not a parse failure: BackendError propagates and the benchmark ends that
episode with end reason `error`.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.policies.base import POLICIES, Decision, Policy, PromptContext
from cityseeker_ros.core.agents.vlm.backend import (
    BACKENDS,
    Backend,
    BackendError,
    Generation,
    GenerationRequest,
    make_backend,
)
from cityseeker_ros.core.agents.vlm.parsing import MAX_CHARS
from cityseeker_ros.core.agents.vlm.prompt_profiles import (
    PromptProfile,
    family_profile,
    get_profile,
    mirror,
    short_profile,
)
from cityseeker_ros.core.agents.vlm.prompts import prompt_hash
from cityseeker_ros.core.agents.vlm.schema import ParsedDecision
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.redact import redact
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.tasks.environment import STOP, Action, Observation, move
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, Episode, World

MODES = ("two-call", "single-call")
FALLBACKS = ("first", "forward", "stop")
STOP_VIEWS = ("panorama", "views")  # what the stop prompt shows: the node's panorama where one exists, or the views

_Builder = Callable[[Observation, Optional[PromptContext], int, Optional[np.ndarray]], GenerationRequest]
_Parser = Callable[[str, Observation], ParsedDecision]


def _calls(profile: PromptProfile) -> dict[str, tuple[Optional[_Builder], Optional[_Parser]]]:
    return {"stop": (profile.stop, profile.parse_stop), "choice": (profile.choice, profile.parse_choice),
            "single": (profile.single, profile.parse_single)}


def _swap_red_blue(request: GenerationRequest) -> GenerationRequest:
    """The reference's colour order (it JPEG-encodes RGB arrays as BGR): only for reproducing it."""
    messages = tuple(replace(m, content=tuple(np.ascontiguousarray(c[..., ::-1]) if isinstance(c, np.ndarray)
                                              else c for c in m.content)) for m in request.messages)
    return replace(request, messages=messages)


@dataclass
class _Step:
    """One observation's decision in the making, and what its log record needs."""

    obs: Observation
    context: PromptContext
    profile: PromptProfile  # the policy's profile in the words of the episode's task family
    action: Optional[Action] = None
    decision: Optional[ParsedDecision] = None
    stop_check: Optional[ParsedDecision] = None
    hashes: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    retries: int = 0
    cut_replies: int = 0  # replies longer than parsing.MAX_CHARS, of which only the head was read and kept
    fallback: bool = False
    parse_error: Optional[str] = None
    stop_input: Optional[str] = None  # "panorama" or "views": what the stop prompt showed
    preprocess_s: float = 0.0
    generate_s: float = 0.0
    parse_s: float = 0.0
    phases_s: dict[str, float] = field(default_factory=dict)  # vision, prefill, decode, where the backend splits them
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    cache: Optional[Counter[str]] = None  # the local backend's fast path: what its calls found done


def _add(total: Optional[int], more: Optional[int]) -> Optional[int]:
    return more if total is None else total if more is None else total + more


def _add_phases(step: _Step, generation: Generation) -> None:
    latency = generation.latency
    for name, value in (("vision", latency.vision_s), ("prefill", latency.prefill_s), ("decode", latency.decode_s)):
        if value is not None:
            step.phases_s[name] = step.phases_s.get(name, 0.0) + value
    if generation.cache is not None:
        step.cache = step.cache or Counter()
        step.cache.update({k: int(v) for k, v in asdict(generation.cache).items()})  # compiled: a count


def _decision_dict(parsed: Optional[ParsedDecision], action: Action) -> dict[str, Any]:
    decision = {"action": action.index,
                "confidence": parsed.confidence if parsed is not None else 0.0,
                "thoughts": parsed.thoughts if parsed is not None else "",
                "observations": [o.model_dump() for o in parsed.observations] if parsed is not None else []}
    if action.answer is not None:  # only families whose stop answers: needs records keep their bytes
        decision["answer"] = action.answer
    return decision


def _stopping(parsed: ParsedDecision) -> Action:
    """A readable stop: the answer it gives, where the family's stop answers, else STOP."""
    return STOP if parsed.answer is None else Action(answer=parsed.answer)


def merge_backend_shorthands(params: dict[str, Any], backend: Optional[str] = None, model: Optional[str] = None,
                             backend_params: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """`params` with the shorthands for this policy's backend, model and backend_params merged in
    (`--backend`, `--model`, `--backend-param`; a ROS run's or decision node's backend and model),
    in this one place so that the CLI, a launch and a node hand the policy the same parameters.
    A shorthand that is not None wins over the same key in `params`; backend parameters are
    merged into `params`' backend_params key by key. `params` itself is left as it was."""
    merged = dict(params)
    for key, value in (("backend", backend), ("model", model)):
        if value is not None:
            merged[key] = value
    if backend_params:
        merged["backend_params"] = {**_backend_params(merged.get("backend_params")), **backend_params}
    return merged


def _backend_params(value: Any) -> dict[str, Any]:
    """The backend_params parameter as a new dict (None is none); anything but a mapping is refused."""
    if value is not None and not isinstance(value, dict):
        raise ConfigError(f"vlm policy: backend_params must be a mapping, got {value!r}")
    return dict(value or {})


def fallback_action(obs: Observation, fallback: str) -> Action:
    """The action when no reply could be used: "stop" stops, "forward" takes the view closest
    to the direction of travel, "first" view 0 (the paper's action 0). No view: stop."""
    if fallback == "stop" or not obs.views:
        return STOP
    if fallback == "forward":
        view = min(obs.views, key=lambda v: (abs(circular_difference(v.heading, obs.facing)), v.index))
        return move(view.index)
    return move(obs.views[0].index)


_SHARED_BACKENDS: dict[tuple[str, str], Backend] = {}


def backend_settings(who: str, backend: Optional[str], model: Optional[str],
                     backend_params: Optional[dict[str, Any]],
                     backend_instance: Optional[Backend]) -> tuple[str, dict[str, Any]]:
    """(backend name, backend parameters) of a model-calling policy, checked at construction:
    the model given once, an injected instance a Backend, a named backend known (an unknown
    name fails now, listing the known ones). `who` opens the error messages. Every policy that
    calls a model (the VLM policy, the seed agents) builds its backend settings here."""
    params = _backend_params(backend_params)
    if model is not None:
        if "model" in params:
            raise ConfigError(f"{who}: give the model once, as model or in backend_params, not both")
        params["model"] = model
    if backend_instance is not None:
        if not isinstance(backend_instance, Backend):
            raise ConfigError(f"{who}: backend_instance must be a Backend, got {type(backend_instance)}")
    elif backend is None:
        raise ConfigError(f"{who}: name a backend; known: {', '.join(BACKENDS.names()) or '(none)'}")
    else:
        BACKENDS.get(backend)
    return (backend if backend is not None else backend_instance.name), params  # type: ignore[union-attr]


def shared_backend(name: str, params: dict[str, Any]) -> Backend:
    """The backend `name` made with `params`, made once per process: policies with the same
    settings share it, so lockstep episodes load a model once."""
    key = (name, json.dumps(params, sort_keys=True, default=str))
    if key not in _SHARED_BACKENDS:
        _SHARED_BACKENDS[key] = make_backend(name, **params)
    return _SHARED_BACKENDS[key]


def release_backend(backend: Backend) -> None:
    """Close a backend made by shared_backend and forget it."""
    for key in [k for k, b in _SHARED_BACKENDS.items() if b is backend]:
        del _SHARED_BACKENDS[key]
    backend.close()


class CallsModel(Policy):
    """A policy that calls a model through a backend made from its settings (`backend_name`,
    `backend_params`) or injected (`_backend`): the VLM policy and the seed agents."""

    backend_name: str
    backend_params: dict[str, Any]
    _backend: Optional[Backend]

    @property
    def backend(self) -> Backend:
        """Made on first use; policies with the same backend settings in one process share it,
        so lockstep episodes (`act_together`) load a model once."""
        if self._backend is None:
            self._backend = shared_backend(self.backend_name, self.backend_params)
        return self._backend

    def prepare(self) -> None:
        self.backend  # noqa: B018 - loads the model or checks the server now

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        super().reset(episode, rng, world)
        self._records: list[dict[str, Any]] = []


@POLICIES.register("vlm")
class VlmPolicy(CallsModel):
    """A VLM chooses among the walkable views, or stops.

    `backend` names a registered backend, made on first use with `backend_params` (and
    `model=model` when given), so a parent process that only configures the run loads no model.
    The name is checked at construction: an unknown one fails at start-up listing the known
    backends. Tests and callers that share one loaded model pass `backend_instance` instead;
    the policy then never closes it.

    `fallback` after `retries` failed re-asks: "first" is view 0 (the paper's action 0),
    "forward" the view closest to the direction of travel, "stop" stops. In two-call mode an
    unreadable stop reply falls back to continuing (the paper's action 0 of the stop prompt),
    or to stopping under "stop".

    `prompt_profile` names the prompts ("improved", or "paper" for the paper's protocol: two
    calls at every step, two-call mode only); `stop_view` "panorama" shows the stop prompt the
    node's panorama where the view source has one, "views" the per-heading views. Switches for
    reproducing the reference exactly, off by default: `json_schema` false sends no output
    schema, `swap_red_blue` sends images with red and blue swapped, `swap_left_right` labels
    clockwise views LEFT. docs/fidelity.md says what each changes.

    `short_replies` asks for the action (or stop), a confidence and a reason of at most 80
    characters, with the token budget that reply needs (prompts.Wording.short): far fewer tokens
    decoded per call, the observations not asked for. Improved profile only.
    """

    uses_images = True
    accepts_context = True

    def __init__(self, backend: Optional[str] = None, model: Optional[str] = None,
                 backend_params: Optional[dict[str, Any]] = None, mode: str = "two-call", max_new_tokens: int = 512,
                 retries: int = 1, fallback: str = "first", prompt_profile: str = "improved",
                 stop_view: str = "panorama", json_schema: bool = True, swap_red_blue: bool = False,
                 swap_left_right: bool = False, short_replies: bool = False, *,
                 backend_instance: Optional[Backend] = None) -> None:
        if mode not in MODES:
            raise ConfigError(f"vlm policy: mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.profile = get_profile(prompt_profile)
        if mode == "single-call" and self.profile.single is None:
            raise ConfigError(f"vlm policy: prompt_profile {prompt_profile!r} has no single-call form; "
                              "use mode two-call")
        if stop_view not in STOP_VIEWS:
            raise ConfigError(f"vlm policy: stop_view must be one of {', '.join(STOP_VIEWS)}, got {stop_view!r}")
        for name, flag in (("json_schema", json_schema), ("swap_red_blue", swap_red_blue),
                           ("swap_left_right", swap_left_right), ("short_replies", short_replies)):
            if not isinstance(flag, bool):
                raise ConfigError(f"vlm policy: {name} must be true or false, got {flag!r}")
        if short_replies:
            short_profile(self.profile)  # refused now for a profile without short replies
        if fallback not in FALLBACKS:
            raise ConfigError(f"vlm policy: fallback must be one of {', '.join(FALLBACKS)}, got {fallback!r}")
        for name, value, least in (("retries", retries, 0), ("max_new_tokens", max_new_tokens, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ConfigError(f"vlm policy: {name} must be an integer >= {least}, got {value!r}")
        self.backend_name, self.backend_params = backend_settings("vlm policy", backend, model, backend_params,
                                                                  backend_instance)
        self.mode = mode
        self.max_new_tokens = max_new_tokens
        self.retries = retries
        self.fallback = fallback
        self.stop_view = stop_view
        # the same rule a runner asks before a world node ships panoramas
        self._shows_panorama = self.shows_panorama({"mode": mode, "stop_view": stop_view,
                                                    "prompt_profile": prompt_profile})
        self.json_schema, self.swap_red_blue, self.swap_left_right = json_schema, swap_red_blue, swap_left_right
        self.short_replies = short_replies
        self._backend = backend_instance
        self._owns_backend = backend_instance is None
        self._records: list[dict[str, Any]] = []

    @classmethod
    def shows_panorama(cls, params: dict[str, Any]) -> bool:
        """Only two-call mode's stop prompt shows a panorama (single-call never does), and only
        with `stop_view` panorama and a profile whose stop prompt takes one."""
        return (params.get("mode", "two-call") == "two-call" and params.get("stop_view", "panorama") == "panorama"
                and get_profile(params.get("prompt_profile", "improved")).stop_shows_panorama)

    def act(self, observation: Observation, context: Optional[PromptContext] = None) -> Action:
        return self.act_batch([observation], [context])[0]

    def act_batch(self, observations: Sequence[Observation],
                  contexts: Optional[Sequence[Optional[PromptContext]]] = None) -> list[Action]:
        """One request per observation in each `generate` call (two-call mode makes a stop
        round, then a choice round for those that went on; retries are further rounds).
        Records land in one step log in order; observations of different episodes need one
        policy each (they may share a backend through `backend_instance`)."""
        started = time.perf_counter()
        contexts = list(contexts) if contexts is not None else [None] * len(observations)
        if len(contexts) != len(observations):
            raise ValueError(f"{len(contexts)} contexts for {len(observations)} observations")
        steps = [_Step(self._shown(obs), self._context(obs, ctx), self._profile())
                 for obs, ctx in zip(observations, contexts)]
        self._decide(steps)
        total = time.perf_counter() - started
        for step in steps:
            self._records.append(self._record(step, total))
        return [step.action for step in steps]  # type: ignore[misc]

    @classmethod
    def act_together(cls, policies: Sequence[Policy], observations: Sequence[Observation]) -> list[Action]:
        """One decision per policy (each in its own episode), asked in shared batched calls to
        the first policy's backend; each policy logs its own step."""
        return [d.action for d in cls.decide_together(policies, observations, [None] * len(policies))]

    @classmethod
    def decide_together(cls, policies: Sequence[Policy], observations: Sequence[Observation],
                        contexts: Sequence[Optional[PromptContext]]) -> list[Decision]:
        if not all(isinstance(p, VlmPolicy) for p in policies):
            return super().decide_together(policies, observations, contexts)
        lead: VlmPolicy = policies[0]  # type: ignore[assignment]
        started = time.perf_counter()
        steps = [_Step(p._shown(obs), p._context(obs, ctx), p._profile())  # type: ignore[union-attr]
                 for p, obs, ctx in zip(policies, observations, contexts)]
        lead._decide(steps)
        total = time.perf_counter() - started
        for policy, step in zip(policies, steps):
            policy._records.append(policy._record(step, total))  # type: ignore[union-attr]
        return [Decision(step.action, *p.explain()) for p, step in zip(policies, steps)]  # type: ignore[arg-type]

    def decide(self, observation: Observation, context: Optional[PromptContext] = None) -> Decision:
        return self.decide_together([self], [observation], [context])[0]

    def explain(self) -> tuple[Optional[float], str]:
        """The parsed confidence and thoughts of the last decision (0 and "" after a fallback)."""
        if not self._records:
            return None, ""
        decision = self._records[-1]["decision"]
        return float(decision["confidence"]), str(decision["thoughts"])

    def _decide(self, steps: list[_Step]) -> None:
        for step in steps:
            if not step.obs.views:
                step.action = STOP
                step.problems.append("no walkable view: stopped without asking")
        asking = [s for s in steps if s.action is None]
        if self.mode == "two-call":
            self._ask("stop", asking)
            for step in asking:
                self._after_stop_check(step)
            self._ask("choice", [s for s in asking if s.action is None or s.profile.always_choose])
        else:
            self._ask("single", asking)
        for step in asking:
            if step.action is None:
                step.action = self._action(step)

    def _profile(self) -> PromptProfile:
        """The profile in the words of this episode's family (before any reset, the first family's)."""
        episode = getattr(self, "episode", None)
        profile = family_profile(self.profile, episode.family if episode is not None else DEFAULT_FAMILY)
        return short_profile(profile) if self.short_replies else profile

    def _shown(self, obs: Observation) -> Observation:
        """The observation as the prompts label it (mirrored under `swap_left_right`)."""
        if not self.swap_left_right:
            return obs
        return replace(obs, views=tuple(replace(v, relative=mirror(v.relative)) for v in obs.views))

    def _stop_panorama(self, step: _Step) -> Optional[np.ndarray]:
        """The node's panorama for the stop prompt, or None (then it shows the views)."""
        ref = step.obs.panorama if self._shows_panorama else None
        image = ref.get() if ref is not None else None
        step.stop_input = "views" if image is None else "panorama"
        return image

    def _build(self, kind: str, step: _Step, context: PromptContext) -> GenerationRequest:
        build = _calls(step.profile)[kind][0]
        assert build is not None  # single-call without a single form is refused at construction
        panorama = self._stop_panorama(step) if kind == "stop" else None
        request = build(step.obs, context, self.max_new_tokens, panorama)
        if not self.json_schema:
            request = replace(request, json_schema=None)
        return _swap_red_blue(request) if self.swap_red_blue else request

    def _context(self, obs: Observation, context: Optional[PromptContext]) -> PromptContext:
        context = context or PromptContext()
        notes = [n for n in (context.feedback, obs.feedback and
                             f"the environment rejected your previous action: {obs.feedback}") if n]
        return replace(context, feedback="; ".join(notes) or None)

    def _ask(self, kind: str, steps: list[_Step]) -> None:
        """Ask `kind` for every step, re-asking the unreadable ones up to `retries` times."""
        pending = steps
        for attempt in range(self.retries + 1):
            if not pending:
                return
            requests = []
            for step in pending:
                context = step.context
                if attempt:
                    step.retries += 1
                    note = (f"your previous reply could not be used ({step.parse_error}); "
                            "reply with the JSON object only, exactly as specified")
                    context = replace(context, feedback="; ".join(n for n in (context.feedback, note) if n))
                requests.append(self._build(kind, step, context))
            generations = self.backend.generate(requests)
            if len(generations) != len(requests):
                raise BackendError(f"backend returned {len(generations)} replies for {len(requests)} requests")
            unread = []
            for step, request, generation in zip(pending, requests, generations):
                step.hashes.append(prompt_hash(request, step.profile.version))
                step.raw.append(generation.text[:MAX_CHARS])  # what was read; a runaway tail is not kept
                step.preprocess_s += generation.latency.preprocess_s
                step.generate_s += generation.latency.generate_s
                _add_phases(step, generation)
                step.prompt_tokens = _add(step.prompt_tokens, generation.prompt_tokens)
                step.completion_tokens = _add(step.completion_tokens, generation.completion_tokens)
                t = time.perf_counter()
                parse = _calls(step.profile)[kind][1]
                assert parse is not None
                parsed = parse(generation.text, step.obs)
                step.parse_s += time.perf_counter() - t
                step.cut_replies += parsed.cut
                step.problems += [f"{kind}: {p}" for p in parsed.problems]
                if parsed.ok:
                    if kind == "stop":
                        step.stop_check = parsed
                    elif step.action is None:  # a step already stopped keeps the stop's decision
                        step.decision = parsed
                else:
                    step.problems.append(f"{kind}: attempt {attempt + 1} unusable: {parsed.error}")
                    if kind == "stop" or step.action is None:  # a stopped step needs no choice
                        step.parse_error = parsed.error
                        unread.append(step)
            pending = unread
        for step in pending:
            step.fallback = True
            step.problems.append(f"{kind}: fell back after {self.retries + 1} unusable replies")

    def _after_stop_check(self, step: _Step) -> None:
        if step.stop_check is None:  # unreadable: stop only when the fallback says so
            if self.fallback == "stop":
                step.action = STOP
        elif step.stop_check.is_stop:
            step.action, step.decision = _stopping(step.stop_check), step.stop_check

    def _action(self, step: _Step) -> Action:
        decision = step.decision
        if decision is not None:
            return _stopping(decision) if decision.is_stop else move(step.obs.views[decision.action_index].index)
        step.fallback = True
        return self._fallback(step.obs)

    def _fallback(self, obs: Observation) -> Action:
        return fallback_action(obs, self.fallback)

    def _record(self, step: _Step, total_s: float) -> dict[str, Any]:
        assert step.action is not None
        record: dict[str, Any] = {
            "step": step.obs.step,
            "mode": self.mode,
            "prompt_profile": self.profile.name,
            "prompt_version": step.profile.version,
            "prompt_hash": step.hashes[0] if len(step.hashes) == 1 else list(step.hashes),
            "raw": list(step.raw),
            "decision": _decision_dict(step.decision, step.action),
            "retries": step.retries,
            "cut_replies": step.cut_replies,
            "fallback": step.fallback,
            "parse_error": step.parse_error if step.fallback else None,
            "problems": list(step.problems),
            "latency_s": {"preprocess": step.preprocess_s, "generate": step.generate_s, "parse": step.parse_s,
                          "total": total_s, **step.phases_s},
            "tokens": {"prompt": step.prompt_tokens, "completion": step.completion_tokens},
        }
        if step.cache is not None:
            record["cache"] = dict(step.cache)
        if self.mode == "two-call" and step.hashes:
            check = step.stop_check
            record["stop_input"] = step.stop_input
            record["stop_check"] = None if check is None else {
                "stop": check.is_stop, "confidence": check.confidence, "thoughts": check.thoughts,
                "observation": check.observations[0].description if check.observations else ""}
            if check is not None and check.answer is not None:
                record["stop_check"]["answer"] = check.answer
        return record

    def step_records(self) -> list[dict[str, Any]]:
        """One record per decision since the last reset, for episodes.jsonl."""
        return list(self._records)

    def describe(self) -> dict[str, Any]:
        """The backend's description once it exists; before first use, its configuration
        (describing must not load a model in a process that will never use it)."""
        if self._backend is not None:
            base = self._backend.describe()
        else:
            params = redact(self.backend_params)  # credentials are never written to results
            base = {"name": self.backend_name, **params, "loaded": False}
        profile = self._profile()  # the current episode's family's words (before any, the first family's)
        return {**base, "policy": "vlm", "prompt_profile": profile.name, "prompt_version": profile.version,
                "prompt_template_hash": profile.template_hash, "mode": self.mode, "stop_view": self.stop_view,
                "json_schema": self.json_schema, "swap_red_blue": self.swap_red_blue,
                "swap_left_right": self.swap_left_right, "short_replies": self.short_replies,
                "retries": self.retries, "fallback": self.fallback,
                "max_new_tokens": self.max_new_tokens}

    def close(self) -> None:
        """Release a backend this policy made; an injected one belongs to the caller."""
        if self._backend is not None and self._owns_backend:
            release_backend(self._backend)
            self._backend = None
