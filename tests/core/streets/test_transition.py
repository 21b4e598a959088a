"""The paper's action model on the tiny city, where every heading's outcome is known."""
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel


def test_headings_take_the_circularly_closest_edge(tiny_world):
    a = tiny_world.actions
    # B's headings are [270, 90, 0]: west to A, east to C, north to E, in that order.
    assert [m.edge.target for m in a.moves("00000001")] == ["00000000", "00000002", "00000004"]
    assert a.next_node("00000002", 0) == "00000001"  # -90 normalised to 270 points west


def test_wraparound_is_respected():
    """A heading of 355 must pick the edge at 5 degrees, not the one at 300 (the reference
    compares azimuths without wrap-around)."""
    nodes = [Node("o", 0, 0, 0, (355.0,)), Node("n", 0.001, 0, 0, ()), Node("w", 0, -0.001, 0, ())]
    g = StreetGraph(nodes, [Edge("o", "n", 5.0, 1), Edge("o", "w", 300.0, 1)])
    assert ActionModel(g).next_node("o", 0) == "n"


def test_unreachable_edges_and_executable_routes():
    # Both headings point east-ish, so the westward edge can never be taken.
    nodes = [Node("o", 0, 0, 0, (80.0, 100.0)), Node("e", 0, 0.001, 0, (270.0,)), Node("w", 0, -0.001, 0, (90.0,))]
    edges = [Edge("o", "e", 90.0, 1), Edge("o", "w", 270.0, 1), Edge("e", "o", 270.0, 1), Edge("w", "o", 90.0, 1)]
    a = ActionModel(StreetGraph(nodes, edges))
    assert a.successors("o") == ["e"]
    assert a.route_executable(["w", "o", "e"]) and not a.route_executable(["e", "o", "w"])
    assert a.hops_from("e") == {"e": 0, "o": 1}
    assert a.action_path("e", "w") is None and a.action_path("w", "e") == [0, 0]


def test_hops_via_waypoints(tiny_world):
    a = tiny_world.actions
    assert a.hops_via("00000000", ["00000002", "00000004"]) == 4
    assert a.hops_via("00000000", ["00000003"]) == 3


def _grid(side: int) -> StreetGraph:
    """A side x side street grid, 4 ways at every inner node."""
    ids = {(r, c): f"{r}_{c}" for r in range(side) for c in range(side)}
    nodes, edges = [], []
    for (r, c), nid in ids.items():
        out = [(az, ids[rr, cc]) for az, rr, cc in ((0.0, r + 1, c), (90.0, r, c + 1), (180.0, r - 1, c),
                                                     (270.0, r, c - 1)) if (rr, cc) in ids]
        nodes.append(Node(nid, r * 1e-4, c * 1e-4, 0.0, tuple(az for az, _ in out)))
        edges += [Edge(nid, t, az, 11.0) for az, t in out]
    return StreetGraph(nodes, edges)


def test_a_budget_bounds_the_search_not_the_answer(hk6_world):
    """Within the budget the bounded search agrees with the whole-graph one, node for node, and
    which episodes are solvable does not change at any budget."""
    whole = ActionModel(hk6_world.graph)
    for ep in hk6_world.episodes:
        everything = whole.hops_from(ep.start)
        for budget in (0, 3, 12, 35):
            bounded = hk6_world.actions.hops_from(ep.start, budget)
            assert bounded == {n: d for n, d in everything.items() if d <= budget}
            assert hk6_world.solvable(ep, budget) == (everything.get(ep.target, budget + 1) <= budget)
        hops = whole.hops_via(ep.start, ep.waypoints)
        for budget in (5, 35):
            assert hk6_world.actions.hops_via(ep.start, ep.waypoints, budget) == (
                hops if hops is not None and hops <= budget else None)


def test_the_search_grows_with_the_budget_not_with_the_city():
    """A 25-step search visits the same nodes in a 60 x 60 grid as in a 160 x 160 one."""
    small, large = ActionModel(_grid(60)), ActionModel(_grid(160))
    for start in ("30_30", "0_0", "30_0"):
        assert len(small.hops_from(start, 25)) == len(large.hops_from(start, 25)) < 60 * 60 / 2


def test_the_search_cache_is_bounded_and_keeps_the_latest(monkeypatch):
    from cityseeker_ros.core.streets import transition

    monkeypatch.setattr(transition, "HOPS_CACHE_ENTRIES", 1000)
    a = ActionModel(_grid(40))
    starts = [f"{r}_{c}" for r in range(0, 40, 4) for c in range(0, 40, 4)]
    for start in starts:
        a.hops_from(start, 8)
        assert sum(map(len, a._hops.values())) == a._hops_entries <= 1000
    assert len(a._hops) < len(starts) and list(a._hops)[-1] == (starts[-1], 8)
    first = a.hops_from(starts[-1], 8)
    assert a.hops_from(starts[-1], 8) is first  # a hit, not a new search
    whole = a.hops_from("0_0")  # one search bigger than the bound is kept alone, until the next
    assert len(whole) == 1600 and list(a._hops) == [("0_0", None)]
