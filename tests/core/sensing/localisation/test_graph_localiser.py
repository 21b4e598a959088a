"""GraphLocaliser on the tiny city (A-B-C-D east along the equator every 20 m, E 20 m north of B)
and, for speed, on the real HongKong_6 graph."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.localisation import GraphLocaliser, LocalisationStatus
from cityseeker_ros.core.streets.directions import RelativeDirection as R
from tests.conftest import M_PER_DEG

NODE = {k: f"0000000{i}" for i, k in enumerate("ABCDE")}
LETTER = {v: k for k, v in NODE.items()}


def ll(x_east: float, y_north: float) -> tuple[float, float]:
    """Tiny-city metres (A at the origin) -> lat, lon, as the fixture lays the nodes out."""
    return y_north / 110574.3, x_east / M_PER_DEG


@pytest.fixture
def graph(tiny_world):
    return tiny_world.graph


def switches(nodes: list) -> int:
    return sum(a != b for a, b in zip(nodes, nodes[1:]))


def test_on_node_between_and_distance(graph):
    loc = GraphLocaliser(graph)
    here = loc.update(*ll(21.0, 1.0), stamp=5.0)
    assert here.status is LocalisationStatus.ON_NODE and here.on_graph
    assert here.node_id == NODE["B"] and here.distance_m == pytest.approx(math.sqrt(2), abs=0.01)
    assert here.stamp == 5.0 and "on-node" in here.reason
    between = loc.update(*ll(30.0, 12.0))  # 15.6 m from B and C, beyond the 15 m snap radius
    assert between.status is LocalisationStatus.BETWEEN and between.node_id == NODE["B"]
    assert between.distance_m == pytest.approx(math.hypot(10, 12), abs=0.01)


def test_off_graph_says_so_with_the_distance_and_resnaps_on_return(graph):
    loc = GraphLocaliser(graph, off_graph_m=30)
    loc.update(*ll(20.0, 0.0))
    off = loc.update(*ll(40.0, -50.0))
    assert off.status is LocalisationStatus.OFF_GRAPH and not off.on_graph
    assert off.node_id == NODE["C"] and off.distance_m == pytest.approx(50.0, abs=0.05)
    assert off.walkable == () and "off-graph: 50.0 m from the nearest node" in off.reason
    assert loc.update(*ll(41.0, 0.0)).node_id == NODE["C"]  # no hysteresis towards a node left behind


def test_a_jump_beyond_off_graph_distance_snaps_at_once(graph):
    loc = GraphLocaliser(graph)
    loc.update(*ll(0.0, 0.0))
    assert loc.update(*ll(60.0, 0.0)).node_id == NODE["D"]


@pytest.mark.parametrize("lat, lon", [(None, None), (float("nan"), 0.0), (0.0, float("inf"))])
def test_no_fix_reports_no_node_and_keeps_state_for_the_next_fix(graph, lat, lon):
    loc = GraphLocaliser(graph)
    loc.update(*ll(20.0, 0.0), heading_deg=90.0)
    gap = loc.update(lat, lon, heading_deg=45.0)
    assert gap.status is LocalisationStatus.NO_FIX and gap.node_id is None and gap.distance_m is None
    assert gap.heading_deg == 45.0 and gap.walkable == () and gap.reason == "no position fix"
    # Just past the B-C midpoint: C is closer, but not by the hysteresis margin, so B is kept.
    assert loc.update(*ll(31.0, 0.0)).node_id == NODE["B"]


def test_slow_crossing_under_noise_switches_once(graph):
    """B -> C at 0.1 m per fix with uniform +-3 m noise on both axes: one switch with the defaults;
    without hysteresis the same fixes flicker (the noise is real)."""
    for seed in range(20):
        rng = np.random.default_rng(seed)
        fixes = [ll(x + rng.uniform(-3, 3), rng.uniform(-3, 3)) for x in np.linspace(20, 40, 201)]
        steady = GraphLocaliser(graph)
        nodes = [steady.update(*f).node_id for f in fixes]
        assert switches(nodes) == 1 and nodes[0] == NODE["B"] and nodes[-1] == NODE["C"], seed
        jumpy = GraphLocaliser(graph, hysteresis_m=0, confirm_fixes=1)
        assert switches([jumpy.update(*f).node_id for f in fixes]) > 3


def test_margin_alone_holds_against_worst_case_noise_of_half_the_hysteresis(graph):
    """The documented guarantee: alternating +-3 m (the worst case) never flips back with a 6 m
    margin, even without confirmation; a 5 m margin alone does."""
    xs = [x + (3 if i % 2 else -3) for i, x in enumerate(np.linspace(20, 40, 401))]
    for margin, expected in ((6.0, 1), (5.0, None)):
        loc = GraphLocaliser(graph, hysteresis_m=margin, confirm_fixes=1)
        n = switches([loc.update(*ll(x, 0.0)).node_id for x in xs])
        assert n == expected if expected else n > 1


def test_relative_headings_turn_clockwise_to_the_right(graph):
    loc = GraphLocaliser(graph)
    facing_north = loc.update(*ll(20.0, 0.0), heading_deg=0.0)
    views = {LETTER[w.target]: w for w in facing_north.walkable}  # B's views: A (270), C (90), E (0)
    assert [w.heading_deg for w in facing_north.walkable] == [270.0, 90.0, 0.0]
    assert (views["C"].relative_deg, views["C"].direction) == (90.0, R.RIGHT)
    assert (views["A"].relative_deg, views["A"].direction) == (-90.0, R.LEFT)
    assert (views["E"].relative_deg, views["E"].direction) == (0.0, R.FRONT)
    facing_east = loc.update(*ll(20.0, 0.0), heading_deg=90.0)
    assert [w.direction for w in facing_east.walkable] == [R.BACK, R.FRONT, R.LEFT]
    at_c = GraphLocaliser(graph).update(*ll(40.0, 0.0), heading_deg=135.0)  # C lists -90, reported as 270
    assert [(w.heading_deg, w.direction) for w in at_c.walkable] == [(270.0, R.BACK_RIGHT), (90.0, R.FRONT_LEFT)]


def test_heading_from_motion_needs_real_displacement(graph):
    loc = GraphLocaliser(graph, min_motion_m=2.0)
    first = loc.update(*ll(0.0, 0.0))
    assert first.heading_deg is None and first.heading_source is None
    assert all(w.relative_deg is None and w.direction is None for w in first.walkable)
    assert loc.update(*ll(1.0, 0.5)).heading_deg is None  # jitter below 2 m: still unknown
    east = loc.update(*ll(3.0, 0.0))
    assert east.heading_source == "motion" and east.heading_deg == pytest.approx(90.0, abs=0.01)
    assert east.walkable[0].direction is R.FRONT  # A's only view points east
    assert loc.update(*ll(3.5, -1.0)).heading_deg == pytest.approx(90.0, abs=0.01)  # jitter keeps it
    for x in range(4, 21):  # on to B, a fix every metre
        loc.update(*ll(float(x), 0.0))
    for y in range(1, 7):  # then north
        north = loc.update(*ll(20.0, float(y)))
    assert north.heading_deg == pytest.approx(0.0, abs=0.01) and north.node_id == NODE["B"]
    assert loc.update(*ll(20.0, 6.0), heading_deg=200.0).heading_source == "given"


def test_odometry_in_enu_from_a_geographic_origin(graph):
    loc = GraphLocaliser(graph, origin=ll(0.0, 0.0))  # the odometry frame starts at A
    at_b = loc.update_local(20.0, 0.0, yaw_enu_rad=math.pi / 2, stamp=1.0)  # ENU yaw 90 deg = facing north
    assert at_b.node_id == NODE["B"] and at_b.distance_m < 0.01
    assert at_b.heading_deg == pytest.approx(0.0, abs=1e-9) and at_b.heading_source == "given"
    assert at_b.lat == pytest.approx(0.0, abs=1e-9) and at_b.lon == pytest.approx(20.0 / M_PER_DEG, abs=1e-9)
    for _ in range(loc.confirm_fixes):  # a 20 m hop: E must win on consecutive fixes
        at_e = loc.update_local(20.0, 20.0, yaw_enu_rad=0.0)  # facing east
    assert at_e.node_id == NODE["E"] and at_e.heading_deg == pytest.approx(90.0)
    assert at_e.walkable[0].direction is R.RIGHT  # E's view south, seen facing east
    assert loc.update_local(float("nan"), 0.0).status is LocalisationStatus.NO_FIX


def test_bad_settings_are_config_errors(graph):
    with pytest.raises(ConfigError, match="off_graph_m"):
        GraphLocaliser(graph, snap_radius_m=20, off_graph_m=10)
    with pytest.raises(ConfigError, match="hysteresis_m"):
        GraphLocaliser(graph, hysteresis_m=-1)
    with pytest.raises(ConfigError, match="confirm_fixes"):
        GraphLocaliser(graph, confirm_fixes=0)
    with pytest.raises(ConfigError, match="origin"):
        GraphLocaliser(graph).update_local(1.0, 2.0)


def test_update_on_hong_kong_is_well_under_a_millisecond(hk6_world):
    """Drive a noisy fix along a real route every metre; every fix stays on the graph."""
    graph = hk6_world.graph
    ids = list(graph.nodes)
    route = graph.shortest_path(ids[0], ids[len(ids) // 2])
    rng = np.random.default_rng(0)
    fixes = []
    for a, b in zip(route, route[1:]):
        (lat0, lon0), (lat1, lon1) = graph.latlon([a, b])
        for t in np.linspace(0.0, 1.0, max(2, int(graph.distance_m(a, b))), endpoint=False):
            fixes.append((lat0 + t * (lat1 - lat0) + rng.normal(0, 1e-5), lon0 + t * (lon1 - lon0)))
    loc = GraphLocaliser(graph, actions=hk6_world.actions)
    start = time.perf_counter()
    out = [loc.update(lat, lon) for lat, lon in fixes]
    per_update_ms = (time.perf_counter() - start) / len(fixes) * 1e3
    assert len(graph) > 3000 and len(fixes) > 200
    assert all(o.on_graph for o in out)
    assert per_update_ms < 1.0, f"{per_update_ms:.3f} ms per update"


# -- short edges: hysteresis must never make a node unreachable --------------------------------------


def short_graph(spacing_m: float):
    from tests.core.worlds.conftest import line_graph

    return line_graph(4, spacing_m)  # n00 - n01 - n02 - n03 east along the equator


def test_a_node_nearer_than_the_hysteresis_is_reached_without_a_goal():
    """3 m apart, 5 m hysteresis: standing on n01 must switch from n00 (the Monaco stall)."""
    graph = short_graph(3.0)
    loc = GraphLocaliser(graph)
    a, b = graph.nodes["n00"], graph.nodes["n01"]
    assert loc.update(a.lat, a.lon).node_id == "n00"
    assert loc.margin_m("n00", "n01") == pytest.approx(1.5, abs=1e-3)  # capped at half the 3 m
    nodes = [loc.update(b.lat, b.lon).node_id for _ in range(loc.confirm_fixes)]
    assert nodes == ["n00"] * (loc.confirm_fixes - 1) + ["n01"]
    # The cap still holds off flicker at the midpoint: +-0.7 m around it never switches back.
    xs = [1.5 + (0.7 if i % 2 else -0.7) for i in range(200)]
    steady = GraphLocaliser(graph, confirm_fixes=1)
    assert switches([steady.update(0.0, x / M_PER_DEG).node_id for x in xs]) == 0


def test_the_goal_takes_over_with_no_margin_and_then_holds():
    graph = short_graph(0.05)  # nodes 5 cm apart: only the goal can tell them apart under GNSS noise
    loc = GraphLocaliser(graph)
    loc.expect("n00")
    assert loc.update(0.0, 0.0).node_id == "n00"
    rng = np.random.default_rng(1)
    noisy = [ll(0.05 + rng.normal(0, 1.0), rng.normal(0, 1.0)) for _ in range(50)]
    assert {loc.update(*f).node_id for f in noisy} == {"n00"}  # the goal, held against its twins
    loc.expect("n01")
    nodes = [loc.update(*f).node_id for f in noisy]
    first = nodes.index("n01")
    assert first < 10 and set(nodes[first:]) == {"n01"}
    assert loc.margin_m("n01", "n02") == 5.0 and loc.margin_m("n02", "n01") == 0.0
    assert loc.margin_m("n02", "n03") == pytest.approx(0.025, abs=1e-4)


def test_goal_and_cap_settings_are_checked(graph):
    with pytest.raises(ConfigError, match="hysteresis_fraction"):
        GraphLocaliser(graph, hysteresis_fraction=1.0)
    with pytest.raises(ConfigError, match="arrival_radius_m"):
        GraphLocaliser(graph, arrival_radius_m=20.0)
    with pytest.raises(ConfigError, match="not in the street graph"):
        GraphLocaliser(graph).expect("nowhere")


def offset(lat: float, lon: float, east_m: float, north_m: float) -> tuple[float, float]:
    return lat + north_m / 110574.3, lon + east_m / (M_PER_DEG * math.cos(math.radians(lat)))


def clearance_m(graph, node_id: str) -> float:
    """Distance from a node to the nearest other node."""
    n = graph.nodes[node_id]
    return graph.nearest_nodes(n.lat, n.lon, 2)[1][1]


def walk_short_edges(graph, goal: bool, seed: int = 0) -> tuple[int, list[str]]:
    """Walk every directed edge shorter than the hysteresis from A to B: settle on A, cross in
    10 steps, dwell on B. Without a goal the GNSS noise is uniform in a disc of
    min(0.5 m, clearance / 8) (nodes closer than the noise cannot be told apart by position);
    with the goal it is 1 m per axis, Gaussian. B must be current at the end and, once current,
    never lost. Returns (edges walked, failures)."""
    rng = np.random.default_rng(seed)
    edges = [e for e in graph.edges if graph.distance_m(e.source, e.target) < 5.0]
    failures = []
    loc = GraphLocaliser(graph)  # one action model for all edges; reset per edge
    for e in edges:
        a, b = graph.nodes[e.source], graph.nodes[e.target]
        radius = None if goal else min(0.5, clearance_m(graph, a.id) / 8, clearance_m(graph, b.id) / 8)

        def noise(radius=radius) -> np.ndarray:
            if radius is None:
                return rng.normal(0, 1.0, 2)
            r, t = radius * math.sqrt(rng.uniform()), rng.uniform(0, 2 * math.pi)
            return np.array([r * math.cos(t), r * math.sin(t)])
        loc.reset()
        if goal:
            loc.expect(a.id)
        loc.update(a.lat, a.lon)
        fixes = [offset(a.lat, a.lon, *noise()) for _ in range(5)]
        if goal:
            for f in fixes:
                loc.update(*f)
            loc.expect(b.id)
            fixes = []
        fixes += [offset(a.lat + t * (b.lat - a.lat), a.lon + t * (b.lon - a.lon), *noise())
                  for t in np.linspace(0.1, 1.0, 10)]
        fixes += [offset(b.lat, b.lon, *noise()) for _ in range(30)]
        nodes = [loc.update(*f).node_id for f in fixes]
        if b.id not in nodes or set(nodes[nodes.index(b.id):]) != {b.id}:
            failures.append(f"{a.id}->{b.id} ({graph.distance_m(a.id, b.id):.2f} m): {nodes[-5:]}")
    return len(edges), failures


@pytest.mark.parametrize("goal", [False, True], ids=["position-only", "with-goal"])
def test_every_short_edge_of_hong_kong_is_walked_to_its_end(hk6_world, goal):
    walked, failures = walk_short_edges(hk6_world.graph, goal)
    assert walked > 1000  # 1,348 directed edges under 5 m, 392 under 1 m
    assert failures == [], f"{len(failures)} of {walked} short edges never reached B: {failures[:5]}"


@pytest.mark.parametrize("goal", [False, True], ids=["position-only", "with-goal"])
def test_every_short_edge_of_the_monaco_world_is_walked_to_its_end(monaco_dir, goal):
    from cityseeker_ros.core.datasets import load_dataset

    walked, failures = walk_short_edges(load_dataset(monaco_dir)[0].graph, goal)
    assert walked > 150  # 194 directed edges under 5 m in the builder-2 world (3.0 m the shortest)
    assert failures == [], f"{len(failures)} of {walked} short edges never reached B: {failures[:5]}"
