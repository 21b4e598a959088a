"""The paper's action model: a walkable heading moves along the circularly closest out-edge.

Walkable headings come from the street-view provider and do not always line up with the
graph's edges, so some edges can never be taken and some routes cannot be executed hop by
hop. Everything that asks "can an agent get there?" goes through this module.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.streets.graph import Edge, StreetGraph

# Bound on the searches ActionModel keeps, in node entries summed over all of them. A search
# bounded by a 25-step budget holds ~1-2k entries in a street grid, so this keeps the last few
# hundred starts (tens of MB); whole-graph searches of a country-sized graph use it up in a few.
HOPS_CACHE_ENTRIES = 500_000


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
        self._successors = {nid: tuple(dict.fromkeys(m.edge.target for m in moves))
                            for nid, moves in self._moves.items()}
        # (start, limit) -> hops, least recently used first; at most HOPS_CACHE_ENTRIES entries in all.
        self._hops: OrderedDict[tuple[str, Optional[int]], dict[str, int]] = OrderedDict()
        self._hops_entries = 0

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
        return list(self._successors[node_id])

    def hops_from(self, start: str, limit: Optional[int] = None) -> dict[str, int]:
        """Fewest actions from `start` to every node an agent can reach in at most `limit` actions
        (every reachable node when `limit` is None). A step budget bounds the search, so its cost
        grows with the budget's reach, not with the city. Results are cached, least recently used
        first out, within HOPS_CACHE_ENTRIES node entries; callers must not change them."""
        key = (start, limit)
        cached = self._hops.get(key)
        if cached is not None:
            self._hops.move_to_end(key)
            return cached
        dist = {start: 0}
        queue = deque([start])
        successors = self._successors
        while queue:
            v = queue.popleft()
            d = dist[v] + 1
            if limit is not None and d > limit:
                continue
            for w in successors[v]:
                if w not in dist:
                    dist[w] = d
                    queue.append(w)
        self._hops[key] = dist
        self._hops_entries += len(dist)
        while self._hops_entries > HOPS_CACHE_ENTRIES and len(self._hops) > 1:
            _, old = self._hops.popitem(last=False)
            self._hops_entries -= len(old)
        return dist

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

    def hops_via(self, start: str, waypoints: Sequence[str], limit: Optional[int] = None) -> int | None:
        """Fewest actions to visit `waypoints` in order from `start`; None if impossible (or, with
        `limit`, if it takes more than `limit` actions)."""
        total, here = 0, start
        for w in waypoints:
            d = self.hops_from(here, None if limit is None else limit - total).get(w)
            if d is None:
                return None
            total, here = total + d, w
        return total

    def route_executable(self, route: Sequence[str]) -> bool:
        """True if every hop of `route` is the result of some action."""
        return all(b in self._successors[a] for a, b in zip(route, route[1:]))
