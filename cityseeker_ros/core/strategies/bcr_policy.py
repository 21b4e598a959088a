"""A policy run under the BCR strategies: an explicit episode state machine around any policy, applying the BCR
strategies chosen by configuration and writing every step to the memory store.

States: DECIDING (ask the strategies for advice, ask the policy, let the strategies judge the
decision) and RETRACING (walk back hop by hop to the node a backtrack chose, then DECIDING
again). Backtracking walks: each hop back is a step that counts against the budget and appears
in the path, the way a robot would have to do it; the paper's "revert" is read the same way.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from enum import Enum
from typing import Any, Optional, Union

import numpy as np

from cityseeker_ros.core.agents.memory.store import (
    DecisionMemory,
    EdgeMemory,
    MemoryKey,
    MemoryStore,
    RoundMemory,
    Visit,
)
from cityseeker_ros.core.agents.policies.base import Decision, Policy, PromptContext
from cityseeker_ros.core.agents.vlm.prompts import view_letter
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.strategies.base import SLOTS, Advice, Backtrack, EpisodeState, StepMemo, Strategy
from cityseeker_ros.core.tasks.environment import Action, Observation, move, retrace
from cityseeker_ros.core.tasks.episode import Episode, World

FOLLOW_HINTS = ("auto", "prompt", "force")


def refuse_unusable(policy: Policy, strategies: Sequence[Strategy]) -> None:
    """One line naming what works with what when a strategy cannot act on this policy: B1 (and
    B3 with its confidence trigger) read a confidence, which a policy with `reports_confidence`
    false never gives; every other strategy feeds the prompt (R1-R3, C1-C2, B3's hint) or reads
    the route (B2) and works with any policy that accepts context."""
    name = getattr(policy, "agent", "") or type(policy).__name__
    if getattr(policy, "reports_confidence", True):
        return
    blind = [s.code for s in strategies if s.needs_confidence()]
    if blind:
        raise ConfigError(
            f"strategy {', '.join(blind)} acts on the policy's confidence, which policy {name} does not report; "
            f"with {name} use R1-R3, C1-C2, B2 or B3 with confidence_trigger=false, and {', '.join(blind)} "
            "with the vlm policy")


class Phase(str, Enum):
    DECIDING = "deciding"
    RETRACING = "retracing"


class BcrPolicy(Policy):
    """Runs one policy under a set of strategies. Construct once per lockstep slot; call
    `begin_round(seed, round)` before each `reset`, and `finish_round(record)` after.

    `max_backtracks` caps backtracks per round (a trigger beyond it is logged as "capped").
    `follow_hints`: a B3 hint goes into the prompt for policies that read context and is taken
    directly for those that cannot ("auto"); "prompt" or "force" make one behaviour for all.
    """

    def __init__(self, policy: Policy, strategies: Sequence[Strategy], memory: MemoryStore, run_id: str,
                 rounds: int = 1, max_backtracks: int = 3, follow_hints: str = "auto") -> None:
        if follow_hints not in FOLLOW_HINTS:
            raise ConfigError(f"follow_hints must be one of {', '.join(FOLLOW_HINTS)}, got {follow_hints!r}")
        if not isinstance(max_backtracks, int) or max_backtracks < 0:
            raise ConfigError(f"max_backtracks must be an integer >= 0, got {max_backtracks!r}")
        if not isinstance(rounds, int) or rounds < 1:
            raise ConfigError(f"rounds must be an integer >= 1, got {rounds!r}")
        codes = [s.code for s in strategies]
        if len(set(codes)) != len(codes):
            raise ConfigError(f"a strategy is listed twice: {', '.join(codes)}")
        refuse_unusable(policy, strategies)
        self.policy, self.strategies, self.memory = policy, list(strategies), memory
        self.run_id, self.rounds = run_id, rounds
        self.max_backtracks, self.follow_hints = max_backtracks, follow_hints
        self.oracle = any(s.oracle for s in self.strategies)
        self.privileged = policy.privileged or self.oracle  # type: ignore[misc]
        self.uses_images = policy.uses_images  # type: ignore[misc]
        self._seed, self._round = 0, 0

    # -- episode lifecycle --

    def prepare(self) -> None:
        self.policy.prepare()

    def begin_round(self, seed: int, round: int) -> None:
        if not 0 <= round < self.rounds:
            raise ValueError(f"round {round} outside 0..{self.rounds - 1}")
        self._seed, self._round = seed, round

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        super().reset(episode, rng, world)
        self.policy.reset(episode, rng, world if self.policy.privileged else None)
        key = MemoryKey(self.run_id, episode.episode_id, self._seed)
        self.memory.begin_round(key, self._round)
        self.state = EpisodeState(episode, key, self._round, self.rounds, self.memory,
                                  world if self.oracle else None)
        self.phase = Phase.DECIDING
        self._plan: list[str] = []
        self._path: list[str] = []  # this round's path as observed, one node per step
        self._contexts: list[dict[str, Any]] = []
        for s in self.strategies:
            s.start(self.state)

    def finish_round(self, record: dict[str, Any]) -> None:
        """Make the round durable; a resumed run skips it and keeps its record."""
        self.memory.end_round(self.state.key, RoundMemory(self._round, tuple(record["path"]),
                                                          tuple(record.get("actions", [])), record["end_reason"],
                                                          {"record": record}))

    def describe(self) -> dict[str, Any]:
        return {"strategies": [s.describe() for s in self.strategies], "rounds": self.rounds,
                "max_backtracks": self.max_backtracks, "follow_hints": self.follow_hints}

    def episode_extras(self) -> dict[str, Any]:
        return {"supervisor": {**self.describe(), "round": self._round, "events": list(self.state.events),
                               "context": list(self._contexts), "backtracks": self.state.backtracks}}

    def step_records(self) -> list[dict[str, Any]]:
        return self.policy.step_records()

    # -- one step --

    def act(self, observation: Observation) -> Action:
        ask = self.advise(observation)
        if isinstance(ask, Action):
            return ask
        return self.judge(observation, self.policy.decide(observation, ask))

    @classmethod
    def act_together(cls, policies: Sequence[Policy], observations: Sequence[Observation]
                     ) -> list[Union[Action, Exception]]:
        """Strategies per episode, one batched call of the inner policies for the episodes that
        need a decision. A failing batch is retried per episode, so only the failing ones end."""
        if not all(isinstance(p, BcrPolicy) for p in policies):
            return super().act_together(policies, observations)  # type: ignore[return-value]
        sups: list[BcrPolicy] = list(policies)  # type: ignore[arg-type]
        out: list[Any] = [s.advise(o) for s, o in zip(sups, observations)]
        ask = [i for i, x in enumerate(out) if isinstance(x, PromptContext)]
        if not ask:
            return out
        inner = [sups[i].policy for i in ask]
        try:
            decisions: list[Any] = type(inner[0]).decide_together(inner, [observations[i] for i in ask],
                                                                   [out[i] for i in ask])
        except Exception:
            decisions = []
            for i in ask:
                try:
                    decisions.append(sups[i].policy.decide(observations[i], out[i]))
                except Exception as exc:  # noqa: BLE001 - ends that episode with `error`
                    decisions.append(exc)
        for i, d in zip(ask, decisions):
            out[i] = d if isinstance(d, Exception) else sups[i].judge(observations[i], d)
        return out

    def advise(self, obs: Observation) -> Union[Action, PromptContext]:
        """Before a decision: note where the agent is; go on retracing, take a forced hint (an
        action to take now), or make the prompt context to ask the policy with."""
        self._arrive(obs)
        if self.phase is Phase.RETRACING:
            if self._plan:
                return self._retrace_hop(obs)
            self.phase = Phase.DECIDING
        advice = Advice()
        for s in self.strategies:
            s.advise(self.state, obs, advice)
        if advice.hint is not None:
            position = next(p for p, v in enumerate(obs.views) if v.index == advice.hint)
            advice.slots["backtrack"].append(f"You have just backtracked; please choose view {view_letter(position)}.")
        slots = {name: "\n".join(advice.slots[name]) or None for name in SLOTS}
        if any(slots.values()):
            self._contexts.append({"step": obs.step, "round": self._round, **slots})
        force = self.follow_hints == "force" or (self.follow_hints == "auto" and not self.policy.accepts_context)
        if advice.hint is not None and force:
            return self.judge(obs, Decision(move(advice.hint), None, "followed the backtracking hint"))
        return PromptContext(**slots)

    def judge(self, obs: Observation, decision: Decision) -> Action:
        """After a decision (made here or in another process): remember it, then let the
        strategies judge it; a backtrack replaces it."""
        action = decision.action
        view = next((v for v in obs.views if v.index == action.index), None) if action.index is not None else None
        memo = StepMemo(obs.step, obs.node, obs.lat, obs.lon, obs.facing, "decide", action.index,
                        view.heading if view else None, view.relative.value if view else None,
                        decision.confidence, decision.rationale)
        self._remember(memo)
        if action.is_stop or view is None:
            return action
        for s in self.strategies:
            backtrack = s.after_decision(self.state, obs, decision)
            if backtrack is None:
                continue
            if self.state.backtracks >= self.max_backtracks:
                self.state.event(s.code, "capped", obs.step, limit=self.max_backtracks, reason=backtrack.reason)
                continue
            return self._start_backtrack(s, obs, backtrack)
        return action

    # -- backtracking --

    def _start_backtrack(self, strategy: Strategy, obs: Observation, backtrack: Backtrack) -> Action:
        goal = self._path[backtrack.to_step]
        plan = self._route_back(goal)
        if not plan:
            self.state.event(strategy.code, "backtrack-failed", obs.step, to=goal, reason=backtrack.reason)
            return move(self.state.steps[-1].action)  # type: ignore[arg-type]
        self.state.backtracks += 1
        self.state.event(strategy.code, "backtrack", obs.step, to=goal, to_step=backtrack.to_step,
                         hops=len(plan), reason=backtrack.reason, **{"from": obs.node})
        self._mark_undone(plan)
        for s in self.strategies:
            s.after_backtrack(self.state, backtrack)
        self._plan, self.phase = plan, Phase.RETRACING
        return self._retrace_hop(obs)

    def _route_back(self, goal: str) -> list[str]:
        """Fewest hops back to `goal` over hops already made, each walked against its direction."""
        here = self._path[-1]
        came_from: dict[str, set[str]] = {}
        for a, b in zip(self._path, self._path[1:]):
            came_from.setdefault(b, set()).add(a)
        parent: dict[str, Optional[str]] = {here: None}
        queue = deque([here])
        while queue and goal not in parent:
            v = queue.popleft()
            for w in sorted(came_from.get(v, ())):
                if w not in parent:
                    parent[w] = v
                    queue.append(w)
        if goal not in parent or goal == here:
            return []
        plan, node = [], goal
        while node != here:
            plan.append(node)
            node = parent[node]  # type: ignore[assignment]
        return plan[::-1]

    def _mark_undone(self, plan: list[str]) -> None:
        """The hops a backtrack walks back over were wrong turns: remember them as such."""
        steps, here = [], self._path[-1]
        for node in plan:
            made = [i for i, (a, b) in enumerate(zip(self._path, self._path[1:])) if a == node and b == here]
            steps.append(made[-1])
            here = node
        self.memory.mark_edges(self.state.key, self._round, steps, "backtracked")

    def _retrace_hop(self, obs: Observation) -> Action:
        node = self._plan.pop(0)
        self._remember(StepMemo(obs.step, obs.node, obs.lat, obs.lon, obs.facing, "retrace"))
        return retrace(node)

    # -- memory --

    def _arrive(self, obs: Observation) -> None:
        """A new step (not a retry of a rejected action): a visit, and the hop that led here."""
        if len(self._path) > obs.step:
            return
        if self._path:
            last = self.state.steps[-1]
            self.memory.add_edge(self.state.key, EdgeMemory(self._round, last.step, last.node, obs.node,
                                                            last.heading))
        self._path.append(obs.node)
        self.memory.add_visit(self.state.key, Visit(self._round, obs.step, obs.node, obs.lat, obs.lon, obs.facing))

    def _remember(self, memo: StepMemo) -> None:
        self.state.steps.append(memo)
        self.memory.add_decision(self.state.key, DecisionMemory(
            self._round, memo.step, memo.node, memo.action, memo.heading, memo.relative, memo.confidence,
            memo.rationale, memo.kind))
