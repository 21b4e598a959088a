"""The strategy interface: small classes the supervisor consults before and after each decision.

A strategy may add text to the prompt's slots, hint a view, or ask for a backtrack; it never moves
the agent itself. Strategies that read privileged information (distance to the goal, the shortest
path) say so with `oracle = True` and must be enabled as oracle in the configuration.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from cityseeker_ros.core.agents.memory.store import MemoryKey, MemoryStore
from cityseeker_ros.core.agents.policies.base import Decision
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.key_value import parse_key_value
from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.core.tasks.environment import Observation
from cityseeker_ros.core.tasks.episode import Episode, World

SLOTS = ("backtrack", "surroundings", "history")


@dataclass
class StepMemo:
    """One step of the current round as the supervisor saw it."""

    step: int
    node: str
    lat: float
    lon: float
    facing: float
    kind: str  # "decide" (the policy chose) or "retrace" (walking back)
    action: Optional[int] = None  # view index; None = stop or a retraced hop
    heading: Optional[float] = None
    relative: Optional[str] = None
    confidence: Optional[float] = None
    rationale: str = ""


@dataclass(frozen=True)
class Backtrack:
    """Walk back to where the agent stood at `to_step` of this round."""

    to_step: int
    reason: str


@dataclass
class Advice:
    """What the strategies add before one decision."""

    slots: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in SLOTS})
    hint: Optional[int] = None  # a view index the agent is told to take


@dataclass
class EpisodeState:
    """What a strategy may know: the episode, this round's steps, the memory of this episode,
    and — for oracle strategies only — the world."""

    episode: Episode
    key: MemoryKey
    round: int
    rounds: int
    memory: MemoryStore
    world: Optional[World] = None
    steps: list[StepMemo] = field(default_factory=list)
    backtracks: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def final_round(self) -> bool:
        return self.round == self.rounds - 1

    def event(self, strategy: str, kind: str, step: int, **detail: Any) -> None:
        self.events.append({"step": step, "round": self.round, "strategy": strategy, "kind": kind,
                            "detail": detail})

    def decisions(self) -> list[StepMemo]:
        return [s for s in self.steps if s.kind == "decide"]


class Strategy:
    """Base: every hook does nothing, so a strategy overrides only what it uses."""

    code: ClassVar[str] = ""
    oracle: ClassVar[bool] = False

    def start(self, state: EpisodeState) -> None:
        """A new round begins (state.steps is empty)."""

    def advise(self, state: EpisodeState, obs: Observation, advice: Advice) -> None:
        """Add prompt text or a hint before the policy decides at `obs`."""

    def after_decision(self, state: EpisodeState, obs: Observation, decision: Decision) -> Optional[Backtrack]:
        """Inspect the decision just made at `obs` (already in state.steps); ask for a backtrack."""
        return None

    def after_backtrack(self, state: EpisodeState, backtrack: Backtrack) -> None:
        """A backtrack (by any strategy) has just been started."""

    def needs_confidence(self) -> bool:
        """Whether the strategy acts on the policy's confidence (B1; B3 unless its confidence
        trigger is off): with a policy that reports none it would never act, so the supervisor
        refuses the pair at start-up."""
        return False

    def describe(self) -> dict[str, Any]:
        return {"name": self.code, "oracle": self.oracle,
                "params": {k: v for k, v in vars(self).items() if not k.startswith("_")}}


STRATEGIES: Registry[Callable[..., Strategy]] = Registry("strategy")


def make_strategy(spec: dict[str, Any]) -> Strategy:
    """A strategy from its config entry {"name": ..., "oracle": bool, ...params}. An oracle
    strategy without "oracle": true fails: privileged information is never used silently."""
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise ConfigError(f"a strategy must be a mapping with a name, got {spec!r}")
    params = {k: v for k, v in spec.items() if k not in ("name", "oracle")}
    name = spec["name"]
    factory = STRATEGIES.get(name)
    marked = spec.get("oracle", False)
    if not isinstance(marked, bool):
        raise ConfigError(f"strategy {name}: oracle must be true or false, got {marked!r}")
    oracle = bool(getattr(factory, "oracle", False))
    if oracle and not marked:
        raise ConfigError(f"strategy {name} reads privileged information (the route to the goal); "
                          f"enable it explicitly as oracle:{name}")
    if marked and not oracle:
        raise ConfigError(f"strategy {name} is not an oracle strategy; drop the oracle: prefix")
    return STRATEGIES.create(name, **params)


def parse_strategy(text: str) -> dict[str, Any]:
    """The command line's form: [oracle:]NAME[:key=value,...], values read as JSON where they parse."""
    oracle = text.startswith("oracle:")
    name, _, rest = text[len("oracle:"):].partition(":") if oracle else text.partition(":")
    spec: dict[str, Any] = {"name": name.strip()}
    if oracle:
        spec["oracle"] = True
    spec.update(parse_key_value(item, where=f"--strategy {text!r}", metavar="key=value")
                for item in filter(None, (p.strip() for p in rest.split(","))))
    return spec
