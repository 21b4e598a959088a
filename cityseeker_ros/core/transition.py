"""The paper's action model: a walkable heading moves along the circularly closest out-edge.

Walkable headings come from the street-view provider and do not always line up with the
graph's edges, so some edges can never be taken and some routes cannot be executed hop by
hop. Everything that asks "can an agent get there?" goes through this module.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from cityseeker_ros.core.geodesy import circular_difference
from cityseeker_ros.core.graph import Edge, StreetGraph


@dataclass(frozen=True)
class Move:
    """What choosing walkable heading `index` at a node does."""

    index: int
    heading: float
    edge: Edge


class ActionModel:
    def __init__(self, graph: StreetGraph) -> None:
        self.graph = graph
        self._moves = {nid: self._resolve(nid) for nid in graph.nodes}
        self._hops: dict[str, dict[str, int]] = {}

    def _resolve(self, node_id: str) -> tuple[Move, ...]:
        out = self.graph.out_edges(node_id)
        if not out:
            return ()
        moves = []
        for i, h in enumerate(self.graph.nodes[node_id].walkable_headings):
            # min() keeps the first edge on ties, so the choice is deterministic.
            edge = min(out, key=lambda e: abs(circular_difference(e.azimuth, h)))
            moves.append(Move(i, h, edge))
        return tuple(moves)

    def moves(self, node_id: str) -> tuple[Move, ...]:
        return self._moves[node_id]

    def next_node(self, node_id: str, index: int) -> str:
        return self._moves[node_id][index].edge.target

    def successors(self, node_id: str) -> list[str]:
        """Distinct nodes one action away, in heading order."""
        seen: list[str] = []
        for m in self._moves[node_id]:
            if m.edge.target not in seen:
                seen.append(m.edge.target)
        return seen

    def hops_from(self, start: str) -> dict[str, int]:
        """Fewest actions from `start` to every node an agent can reach (BFS, cached)."""
        if start not in self._hops:
            dist = {start: 0}
            queue = deque([start])
            while queue:
                v = queue.popleft()
                for w in self.successors(v):
                    if w not in dist:
                        dist[w] = dist[v] + 1
                        queue.append(w)
            self._hops[start] = dist
        return self._hops[start]

    def action_path(self, start: str, goal: str) -> list[int] | None:
        """Heading indices of a fewest-actions route from start to goal, or None if unreachable."""
        parent: dict[str, tuple[str, int] | None] = {start: None}
        queue = deque([start])
        while queue:
            v = queue.popleft()
            if v == goal:
                break
            for m in self._moves[v]:
                w = m.edge.target
                if w not in parent:
                    parent[w] = (v, m.index)
                    queue.append(w)
        if goal not in parent:
            return None
        actions: list[int] = []
        node = goal
        while parent[node] is not None:
            prev, idx = parent[node]
            actions.append(idx)
            node = prev
        return actions[::-1]

    def hops_via(self, start: str, waypoints: Sequence[str]) -> int | None:
        """Fewest actions to visit `waypoints` in order from `start`; None if impossible."""
        total, here = 0, start
        for w in waypoints:
            d = self.hops_from(here).get(w)
            if d is None:
                return None
            total, here = total + d, w
        return total

    def route_executable(self, route: Sequence[str]) -> bool:
        """True if every hop of `route` is the result of some action."""
        return all(b in self.successors(a) for a, b in zip(route, route[1:]))
