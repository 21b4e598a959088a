"""The paper's spatial cognition enrichment (C1 topology graph, C2 relative position map;
appendix E.2): a map of streets already walked, written into the prompt at every decision.

The material is explored-graph memory: earlier rounds of this episode, and trajectories of
earlier benchmark runs given as episodes.jsonl files (their records of the same episode). The
map is made once per round; an optional summariser (any registered VLM backend) rewrites it the
way the paper had GPT-4.1 do.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.strategies.base import STRATEGIES, Advice, EpisodeState, Strategy
from cityseeker_ros.core.strategies.phrasing import offset
from cityseeker_ros.core.tasks.environment import BACK, Observation

C1_SUMMARY = ("Given the following trajectories with the same starting point for the same question, connect "
              "them and represent the relationships between the nodes in a graph format.")
C2_SUMMARY = ("Given the following trajectories with the same starting point for the same question, describe the "
              "spatial relationships between the key nodes. Emphasize the relative directional orientation "
              "(front, back, left, right, slightly left, slightly right) and relative distances.")


@dataclass(frozen=True)
class Walk:
    """One earlier walk of this episode: nodes, the action taken at each, and coordinates when known."""

    source: str  # "round 0", or the file it came from
    path: tuple[str, ...]
    actions: tuple[Any, ...]
    latlon: tuple[Optional[tuple[float, float]], ...]
    end_reason: str


def walks_from_files(files: list[str], episode_id: str) -> list[Walk]:
    """Every record of `episode_id` in the given episodes.jsonl files (any seed)."""
    walks = []
    for name in files:
        path = Path(name)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read trajectories ({exc.strerror})") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise DataError(f"{path}:{number}: not a JSON record") from None
            if record.get("episode_id") != episode_id:
                continue
            latlon = record.get("path_latlon") or [None] * len(record.get("path", []))
            walks.append(Walk(f"{path.name} seed {record.get('seed')}", tuple(record.get("path", [])),
                              tuple(record.get("actions", [])), tuple(tuple(p) if p else None for p in latlon),
                              str(record.get("end_reason", ""))))
    return walks


def walks_from_memory(state: EpisodeState) -> list[Walk]:
    """Earlier rounds of this episode, with coordinates from the visits remembered."""
    earlier = list(range(state.round))
    if not earlier:
        return []
    where = {v.node: (v.lat, v.lon) for v in state.memory.visits(state.key, earlier)}
    return [Walk(f"round {r.round}", tuple(r.path), tuple(r.actions), tuple(where.get(n) for n in r.path),
                 r.end_reason) for r in state.memory.finished_rounds(state.key) if r.round < state.round]


class _MapStrategy(Strategy):
    summary_prompt = ""

    def __init__(self, trajectories: Optional[list[str]] = None, max_lines: int = 30,
                 summariser: Optional[dict[str, Any]] = None) -> None:
        if trajectories is not None and not (isinstance(trajectories, list)
                                             and all(isinstance(t, str) for t in trajectories)):
            raise ConfigError(f"strategy {self.code}: trajectories must be a list of episodes.jsonl paths")
        for name in trajectories or []:
            if not Path(name).is_file():
                raise ConfigError(f"strategy {self.code}: trajectories file {name} does not exist")
        if not isinstance(max_lines, int) or max_lines < 1:
            raise ConfigError(f"strategy {self.code}: max_lines must be an integer >= 1, got {max_lines!r}")
        if summariser is not None and not (isinstance(summariser, dict) and "backend" in summariser):
            raise ConfigError(f"strategy {self.code}: summariser must be a mapping with a backend name")
        self.trajectories = list(trajectories or [])
        self.max_lines = max_lines
        self.summariser = summariser
        self._text: Optional[str] = None
        self._made = False

    def start(self, state: EpisodeState) -> None:
        self._text, self._made = None, False

    def advise(self, state: EpisodeState, obs: Observation, advice: Advice) -> None:
        if not self._made:  # once per round, at its first decision (C2 needs the start's facing)
            self._made = True
            walks = walks_from_memory(state) + walks_from_files(self.trajectories, state.episode.episode_id)
            text = self.describe_walks(walks, state, obs) if walks else ""
            if text and self.summariser:
                text = summarise(self.summariser, self.summary_prompt, text)
            self._text = text or None
            if text:
                state.event(self.code, "map", obs.step, walks=len(walks), chars=len(text))
        if self._text:
            advice.slots["surroundings"].append(self._text)

    def describe_walks(self, walks: list[Walk], state: EpisodeState, obs: Observation) -> str:
        raise NotImplementedError


@STRATEGIES.register("C1")
class TopologyMap(_MapStrategy):
    """C1: which action at which node led where, over all earlier walks (the paper's
    "node -> action i -> node" graph)."""

    code = "C1"
    summary_prompt = C1_SUMMARY

    def describe_walks(self, walks: list[Walk], state: EpisodeState, obs: Observation) -> str:
        links: dict[str, list[str]] = {}
        for walk in walks:
            for a, b, act in zip(walk.path, walk.path[1:], walk.actions):
                label = "walking back" if act == BACK else f"action {act}"
                entry = f"{label} -> {b}"
                if entry not in links.setdefault(a, []):
                    links[a].append(entry)
        start = state.episode.start
        order = [start] + sorted(n for n in links if n != start)
        lines = [f"{n}{' (start)' if n == start else ''}: " + "; ".join(links[n]) for n in order if n in links]
        return "Streets walked before (node: action -> node): " + " | ".join(lines[: self.max_lines])


@STRATEGIES.register("C2")
class RelativePositionMap(_MapStrategy):
    """C2: where the key places of earlier walks lie from the start (direction words and
    distance bands), without connectivity: where walks ended and the most visited nodes."""

    code = "C2"
    summary_prompt = C2_SUMMARY

    def describe_walks(self, walks: list[Walk], state: EpisodeState, obs: Observation) -> str:
        """Relative to where and how the agent stands now (the start, in a round's first decision)."""
        start = state.episode.start
        where = {n: ll for w in walks for n, ll in zip(w.path, w.latlon) if ll is not None}
        lat, lon, facing = obs.lat, obs.lon, obs.facing
        counts: dict[str, int] = {}
        for w in walks:
            for n in w.path:
                counts[n] = counts.get(n, 0) + 1
        ends = {w.path[-1]: w for w in walks if w.path}
        key = list(dict.fromkeys(list(ends) + sorted(counts, key=lambda n: (-counts[n], n))))
        lines = []
        for node in key:
            if node == obs.node or node not in where:
                continue
            note = f"a walk ended here ({ends[node].end_reason.replace('_', ' ')})" if node in ends else ""
            seen = f"walked through {counts[node]} time(s)"
            lines.append(f"{node}: {offset(lat, lon, facing, *where[node])}, {seen}" + (f", {note}" if note else ""))
            if len(lines) >= self.max_lines:
                break
        here = "the start" if obs.node == start else obs.node
        return f"From {here}, facing {facing:.0f}°: " + " | ".join(lines) if lines else ""


_SUMMARISERS: dict[str, Any] = {}


def summarise(spec: dict[str, Any], instruction: str, text: str) -> str:
    """Rewrite a map with a language model from the backend registry (text in, text out). The
    backend is made once per process and settings, like the VLM policy's."""
    from cityseeker_ros.core.agents.vlm.backend import GenerationRequest, Message, make_backend

    params = {k: v for k, v in spec.items() if k not in ("backend", "max_new_tokens")}
    key = json.dumps(spec, sort_keys=True, default=str)
    if key not in _SUMMARISERS:
        _SUMMARISERS[key] = make_backend(spec["backend"], **params)
    request = GenerationRequest((Message("user", (f"{instruction}\n\n{text}",)),),
                                max_new_tokens=int(spec.get("max_new_tokens", 512)))
    reply = _SUMMARISERS[key].generate([request])[0].text.strip()
    return reply or text
