"""The paper's memory retrieval (R1, R2, R3; appendix E.3) as prompt text.

R1 and R2 recall earlier rounds of the same episode, and only in the final round, as in the
paper; R3 is the working memory of the current round and is given every step (the reference
code built it and never put it in the prompt).
"""
from __future__ import annotations

from collections import Counter, defaultdict, deque

from cityseeker_ros.core.agents.memory.store import DecisionMemory, EdgeMemory
from cityseeker_ros.core.agents.vlm.prompts import view_letter
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.strategies.base import STRATEGIES, Advice, EpisodeState, StepMemo, Strategy
from cityseeker_ros.core.strategies.phrasing import confidence_text, offset, trim
from cityseeker_ros.core.tasks.environment import Observation


def _positive_int(code: str, name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"strategy {code}: {name} must be an integer >= 1, got {value!r}")
    return value


def _choice(d: DecisionMemory) -> str:
    if d.kind == "retrace":
        return "walked back (a backtrack)"
    if d.action is None:
        return f"stopped ({confidence_text(d.confidence)})"
    why = f': "{trim(d.rationale)}"' if d.rationale else ""
    return f"took the {d.relative} view ({d.heading:.0f}°), {confidence_text(d.confidence)}{why}"


def _earlier_rounds(state: EpisodeState) -> list[int]:
    return list(range(state.round))


@STRATEGIES.register("R3")
class TrajectoryWindow(Strategy):
    """R3: the last `n` steps of this round (where, facing, what was chosen, how sure, why)."""

    code = "R3"

    def __init__(self, n: int = 3) -> None:
        self.n = _positive_int("R3", "n", n)

    def advise(self, state: EpisodeState, obs: Observation, advice: Advice) -> None:
        recent = state.steps[-self.n:]
        if not recent:
            return
        advice.slots["history"].append("; ".join(self.line(m) for m in recent))
        state.event(self.code, "retrieved", obs.step, items=len(recent))

    @staticmethod
    def line(m: StepMemo) -> str:
        where = f"step {m.step} at {m.node} ({m.lat:.5f}, {m.lon:.5f}) facing {m.facing:.0f}°"
        if m.kind == "retrace":
            return f"{where}: walked back (backtracking)"
        if m.action is None:
            return f"{where}: stopped"
        why = f' because "{trim(m.rationale, 100)}"' if m.rationale else ""
        return (f"{where}: chose view {view_letter(m.action)} ({m.relative}, {m.heading:.0f}°), "
                f"{confidence_text(m.confidence)}{why}")


@STRATEGIES.register("R1")
class TopologyRetrieval(Strategy):
    """R1: in the final round, the remembered street graph within `hops` hops of here: visit
    counts, what was decided at each node and how sure, and which hops were later walked back."""

    code = "R1"

    def __init__(self, hops: int = 2, max_nodes: int = 12, decisions_per_node: int = 2) -> None:
        self.hops = _positive_int("R1", "hops", hops)
        self.max_nodes = _positive_int("R1", "max_nodes", max_nodes)
        self.decisions_per_node = _positive_int("R1", "decisions_per_node", decisions_per_node)

    def advise(self, state: EpisodeState, obs: Observation, advice: Advice) -> None:
        if not state.final_round or state.round == 0:
            return
        rounds = _earlier_rounds(state)
        edges = state.memory.edges(state.key, rounds)
        near = self.neighbourhood(obs.node, edges)
        if not near:
            state.event(self.code, "retrieved", obs.step, items=0)
            return
        visits = Counter(v.node for v in state.memory.visits(state.key, rounds))
        decided: dict[str, list[DecisionMemory]] = defaultdict(list)
        for d in state.memory.decisions(state.key, rounds):
            if d.node in near:
                decided[d.node].append(d)
        lines = []
        for node, dist in sorted(near.items(), key=lambda kv: (kv[1], kv[0]))[: self.max_nodes]:
            where = "here" if dist == 0 else f"{dist} hop{'s' if dist > 1 else ''} away"
            choices = "; ".join(_choice(d) for d in decided[node][-self.decisions_per_node:])
            lines.append(f"{node} ({where}): visited {visits[node]} time(s)" + (f"; {choices}" if choices else ""))
        outcomes = Counter((e.source, e.target, e.outcome) for e in edges if e.source in near and e.target in near)
        hops = [f"{s} -> {t}: {'walked back' if o == 'backtracked' else 'taken'} {n}x"
                for (s, t, o), n in sorted(outcomes.items())]
        text = f"In earlier rounds, within {self.hops} hops of here: " + " | ".join(lines)
        if hops:
            text += ". Hops made: " + ", ".join(hops)
        advice.slots["surroundings"].append(text)
        state.event(self.code, "retrieved", obs.step, items=len(lines))

    def neighbourhood(self, node: str, edges: list[EdgeMemory]) -> dict[str, int]:
        """Remembered nodes within self.hops hops of `node` (streets walk both ways)."""
        adjacent: dict[str, set[str]] = defaultdict(set)
        for e in edges:
            adjacent[e.source].add(e.target)
            adjacent[e.target].add(e.source)
        if node not in adjacent:
            return {}
        dist = {node: 0}
        queue = deque([node])
        while queue:
            v = queue.popleft()
            if dist[v] < self.hops:
                for w in sorted(adjacent[v]):
                    if w not in dist:
                        dist[w] = dist[v] + 1
                        queue.append(w)
        return dist


@STRATEGIES.register("R2")
class SpatialRetrieval(Strategy):
    """R2: in the final round, places within `radius_m` of here visited in earlier rounds, with
    where they lie from here and what was decided there."""

    code = "R2"

    def __init__(self, radius_m: float = 50.0, max_nodes: int = 8) -> None:
        if not isinstance(radius_m, (int, float)) or isinstance(radius_m, bool) or radius_m <= 0:
            raise ConfigError(f"strategy R2: radius_m must be a positive number of metres, got {radius_m!r}")
        self.radius_m = float(radius_m)
        self.max_nodes = _positive_int("R2", "max_nodes", max_nodes)

    def advise(self, state: EpisodeState, obs: Observation, advice: Advice) -> None:
        if not state.final_round or state.round == 0:
            return
        rounds = _earlier_rounds(state)
        near = state.memory.visits_near(state.key, obs.lat, obs.lon, self.radius_m, rounds)
        counts = Counter(v.node for v in near)
        order = list(dict.fromkeys(v.node for v in near))[: self.max_nodes]
        if not order:
            state.event(self.code, "retrieved", obs.step, items=0)
            return
        last: dict[str, DecisionMemory] = {}
        for d in state.memory.decisions(state.key, rounds):
            if d.node in counts:
                last[d.node] = d
        where = {v.node: v for v in near}
        lines = []
        for node in order:
            v = where[node]
            line = f"{node} ({offset(obs.lat, obs.lon, obs.facing, v.lat, v.lon)}): visited {counts[node]} time(s)"
            if node in last:
                line += f"; last time {_choice(last[node])}"
            lines.append(line)
        advice.slots["surroundings"].append(
            f"In earlier rounds, within {self.radius_m:g} m of here: " + " | ".join(lines))
        state.event(self.code, "retrieved", obs.step, items=len(lines))
