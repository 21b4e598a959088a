"""The one way a seed agent calls its model and records it, and the base class of the seed agents.

A seed agent (PReP, NavGPT, MapGPT, CityEQA's PMA) makes several named calls per step
("perception", "reflection", "planning", "action"...). Each goes through `SeedAgent.call`:
one request to the agent's VLM backend, timed, its prompt hashed, its reply kept (the head
parsing reads, at most parsing.MAX_CHARS) and read by the caller's parser. A reply that cannot
be read is not retried: the call reports `parse_error`, the agent goes on with what it has
(its counted fallback), and the step's record counts it. A backend failure (BackendError) is
not a parse failure: it propagates and the benchmark ends that episode with end reason `error`;
the calls the step made before it stay in the step's record (with `"error"`).

Every call declares its reply once (replies.ReplySchema): with the agent's `json_schema` switch
on (the default) the request carries the schema, which the backend sends as `response_format`
where the server supports it; on or off, the schema's reader reads the reply, so the reply's
shape, its parsing and the counted fallback are one declaration.

Per step, `step_records()` holds one record per decision:

    {"step", "agent", "calls": [{"role", "schema", "tokens_in", "tokens_out", "seconds",
     "prompt_hash", "raw", "parsed", "parse_error"?}], "calls_n", "tokens_in", "tokens_out", "seconds",
     "fallbacks", "fallback", "decision", "state", "error"?}

The agent's prompt version is `SeedAgent.version` (also `describe()["prompt_version"]`); its
switches are `describe()` less the backend's keys (`settings()`).

`tokens_in`/`tokens_out` are what the backend reports (None where it reports nothing; a step's
total is None only when no call reported); `seconds` is the wall time of the call (the
backend's preprocessing, generation and our parsing). `state` is what the agent carries to the
next step (its plan, memory, inferences), so a reader can follow the agent's mind.

Backends are made exactly as the VLM policy makes them (`vlm.policy.backend_settings`,
`shared_backend`): same parameters, same sharing, same errors.
"""
from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, Optional, TypeVar

import numpy as np

from cityseeker_ros.core.agents.policies.base import Decision, PromptContext
from cityseeker_ros.core.agents.seeds.replies import ReplySchema
from cityseeker_ros.core.agents.vlm.backend import Backend, BackendError, GenerationRequest, Message
from cityseeker_ros.core.agents.vlm.parsing import MAX_CHARS
from cityseeker_ros.core.agents.vlm.policy import (
    FALLBACKS,
    CallsModel,
    backend_settings,
    fallback_action,
    release_backend,
)
from cityseeker_ros.core.agents.vlm.prompts import prompt_hash
from cityseeker_ros.core.agents.vlm.schema import ParsedDecision
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.redact import redact
from cityseeker_ros.core.tasks.environment import STOP, Action, Observation, move
from cityseeker_ros.core.tasks.episode import Episode, World

T = TypeVar("T")


@dataclass(frozen=True)
class Read(Generic[T]):
    """What a parser made of a reply: `value`, or None with `error` set (the call's parse_error)."""

    value: Optional[T]
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None


Parser = Callable[[str], Read[Any]]


def fields_parser(schema: ReplySchema) -> Parser:
    """The schema's reader as a Parser: the reply's typed fields, or why they cannot be read."""
    def parse(text: str) -> Read[dict[str, Any]]:
        read = schema.read(text)
        return Read(read.fields, read.error)
    return parse


def decision_parser(parse: Callable[[str], ParsedDecision]) -> Parser:
    """A parser from one of parsing's decision readers (parse_single, parse_choice...)."""
    def adapted(text: str) -> Read[ParsedDecision]:
        parsed = parse(text)
        return Read(parsed if parsed.ok else None, parsed.error)
    return adapted


@dataclass(frozen=True)
class CallRecord:
    """One model call: its role, tokens in and out (None where the backend reports none), wall
    seconds, the prompt's hash, the reply as read, and why it could not be used (None if it could)."""

    role: str
    schema: str  # the name of the reply schema the call declared
    tokens_in: Optional[int]
    tokens_out: Optional[int]
    seconds: float
    prompt_hash: str
    raw: str
    parse_error: Optional[str] = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "schema": self.schema, "tokens_in": self.tokens_in,
                               "tokens_out": self.tokens_out, "seconds": self.seconds,
                               "prompt_hash": self.prompt_hash, "raw": self.raw, "parsed": self.parse_error is None}
        if self.parse_error is not None:
            out["parse_error"] = self.parse_error
        return out


def _sum(values: list[Optional[int]]) -> Optional[int]:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


@dataclass
class CallLog:
    """The calls of one step, in order."""

    calls: list[CallRecord] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(c.parse_error is not None for c in self.calls)

    def totals(self) -> dict[str, Any]:
        """{calls, calls_n, tokens_in, tokens_out, seconds} of the step."""
        return {"calls": [c.as_dict() for c in self.calls], "calls_n": len(self.calls),
                "tokens_in": _sum([c.tokens_in for c in self.calls]),
                "tokens_out": _sum([c.tokens_out for c in self.calls]),
                "seconds": sum(c.seconds for c in self.calls)}


class Caller:
    """Makes one named call on a backend and logs it in a CallLog; the prompt hash carries
    `version` (the agent's prompt version), so prompts of different versions never match. With
    `structured` the request carries the call's reply schema (GenerationRequest.json_schema)."""

    def __init__(self, backend: Callable[[], Backend], version: str, structured: bool = True) -> None:
        self._backend, self.version, self.structured = backend, version, structured

    def call(self, log: CallLog, role: str, request: GenerationRequest, schema: ReplySchema,
             parse: Optional[Parser] = None) -> Read[Any]:
        """`parse` reads the reply where the call needs more than the schema's typed fields (a
        view choice); without it the schema's reader is the parser."""
        parse = parse if parse is not None else fields_parser(schema)
        request = replace(request, json_schema=schema.json_schema() if self.structured else None)
        started = time.perf_counter()
        generations = self._backend().generate([request])
        if len(generations) != 1:
            raise BackendError(f"backend returned {len(generations)} replies for 1 request")
        generation = generations[0]
        text = generation.text if isinstance(generation.text, str) else str(generation.text)
        read = parse(text)
        log.calls.append(CallRecord(role, schema.name, generation.prompt_tokens, generation.completion_tokens,
                                    time.perf_counter() - started, prompt_hash(request, self.version),
                                    text[:MAX_CHARS], read.error))
        return read


def user(*content: Any) -> Message:
    return Message("user", tuple(content))


def system(text: str) -> Message:
    return Message("system", (text,))


class SeedAgent(CallsModel):
    """A seed paper's agent: subclasses implement `think(observation) -> Action`, making their
    calls with `self.call(role, request, parser)`; everything else (backend, records, fallback,
    describe, close) is here.

    Parameters shared by every seed agent: `backend`, `model`, `backend_params` and
    `backend_instance` exactly as the `vlm` policy takes them; `max_new_tokens` per call;
    `fallback` ("first", "forward" or "stop", as the vlm policy's) is the action when the call
    that chooses cannot be read; `json_schema` false sends no reply schema (the papers' free-text
    protocol; the prompts are the same, the reader the same).

    Strategies: the supervisor's prompt context (BCR R1-R3, C1-C2 and B3's hint) reaches the
    prompt through `context_lines()`, where each agent's paper has a place for it; the agents
    report no confidence, so strategies that need one (strategies.base.Strategy.needs) are
    refused at start-up.
    """

    agent: ClassVar[str] = ""  # the registry name, in records and messages
    version: ClassVar[str] = ""  # the agent's prompt version, hashed into every prompt hash
    uses_images = True
    accepts_context = True
    reports_confidence: ClassVar[bool] = False

    def __init__(self, backend: Optional[str] = None, model: Optional[str] = None,
                 backend_params: Optional[dict[str, Any]] = None, max_new_tokens: int = 512,
                 fallback: str = "first", json_schema: bool = True, *,
                 backend_instance: Optional[Backend] = None) -> None:
        who = f"{self.agent} policy"
        if fallback not in FALLBACKS:
            raise ConfigError(f"{who}: fallback must be one of {', '.join(FALLBACKS)}, got {fallback!r}")
        if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool) or max_new_tokens < 1:
            raise ConfigError(f"{who}: max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
        self.backend_name, self.backend_params = backend_settings(who, backend, model, backend_params,
                                                                  backend_instance)
        self.max_new_tokens, self.fallback = max_new_tokens, fallback
        self.json_schema = self.switch(self.agent, "json_schema", json_schema)
        self._backend = backend_instance
        self._owns_backend = backend_instance is None
        self._caller = Caller(lambda: self.backend, self.version, self.json_schema)
        self._context: Optional[PromptContext] = None
        self._records: list[dict[str, Any]] = []
        self._log = CallLog()
        self._fallbacks = 0
        self._answer: Optional[str] = None

    @staticmethod
    def switch(who: str, name: str, value: Any) -> bool:
        """A true/false parameter, refused otherwise."""
        if not isinstance(value, bool):
            raise ConfigError(f"{who} policy: {name} must be true or false, got {value!r}")
        return value

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        super().reset(episode, rng, world)
        self.start(episode)

    def start(self, episode: Episode) -> None:  # noqa: B027 - agents without episode state
        """Clear the agent's own state for a new episode."""

    @abstractmethod
    def think(self, observation: Observation) -> Action:
        """This step's calls and action; a call whose reply cannot be read counts a fallback
        (`self.fell_back`) and the agent goes on without it."""

    def state(self) -> dict[str, Any]:
        """What the agent carries to the next step, for the step record."""
        return {}

    def call(self, role: str, request: GenerationRequest, schema: ReplySchema,
             parse: Optional[Parser] = None) -> Read[Any]:
        """One named model call of this step, its reply declared by `schema`; an unreadable
        reply is counted as a fallback."""
        read = self._caller.call(self._log, role, request, schema, parse)
        if not read.ok:
            self._fallbacks += 1
        return read

    def fallback_action(self, observation: Observation) -> Action:
        """The action when the choosing call could not be read (the vlm policy's rule)."""
        return fallback_action(observation, self.fallback)

    def act(self, observation: Observation) -> Action:
        self._log, self._fallbacks = CallLog(), 0
        try:
            if not observation.views and not self.answers:
                action = STOP  # nowhere to go: nothing to ask
            else:
                action = self.think(observation)
        except BackendError as exc:  # the calls made so far were paid for: keep them
            self._records.append({"step": observation.step, "agent": self.agent, **self._log.totals(),
                                  "fallbacks": self._fallbacks, "fallback": self._fallbacks > 0,
                                  "decision": None, "state": self.state(), "error": str(exc)[:300]})
            raise
        self._records.append({"step": observation.step, "agent": self.agent, **self._log.totals(),
                              "fallbacks": self._fallbacks, "fallback": self._fallbacks > 0,
                              "decision": _decision(action), "state": self.state()})
        return action

    def decide(self, observation: Observation, context: Optional[PromptContext] = None) -> Decision:
        self._context = context
        try:
            return Decision(self.act(observation))
        finally:
            self._context = None

    def context_lines(self) -> list[str]:
        """This decision's supervisor context (BCR strategies), one line per filled slot, in the
        paper's order (backtrack, surroundings, history); empty without a supervisor."""
        c = self._context
        if c is None:
            return []
        return [text for text in (c.backtrack, c.surroundings, c.history, c.feedback) if text]

    @property
    def answers(self) -> bool:
        """Whether this episode's stop answers a question (the questions family)."""
        from cityseeker_ros.core.tasks.family import family_of
        episode = getattr(self, "episode", None)
        return episode is not None and family_of(episode).prompts.answers

    def step_records(self) -> list[dict[str, Any]]:
        return list(self._records)

    def describe(self) -> dict[str, Any]:
        """The backend's description once it exists, else its configuration (never loads it)."""
        if self._backend is not None:
            base = self._backend.describe()
        else:
            base = {"name": self.backend_name, **redact(self.backend_params), "loaded": False}
        return {**base, "policy": self.agent, "prompt_version": self.version, "fallback": self.fallback,
                "max_new_tokens": self.max_new_tokens, "json_schema": self.json_schema, **self.settings()}

    def settings(self) -> dict[str, Any]:
        """The agent's switches, for describe()."""
        return {}

    def close(self) -> None:
        if self._backend is not None and self._owns_backend:
            release_backend(self._backend)
            self._backend = None


def _decision(action: Action) -> dict[str, Any]:
    out: dict[str, Any] = {"action": action.index}
    if action.answer is not None:
        out["answer"] = action.answer
    return out


__all__ = ["STOP", "CallLog", "CallRecord", "Caller", "Read", "SeedAgent", "decision_parser", "fields_parser",
           "move", "system", "user"]
