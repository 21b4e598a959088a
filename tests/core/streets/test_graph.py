import pytest

from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from tests.conftest import M_PER_DEG


def line_graph(n=5, spacing=20.0):
    nodes = [Node(str(i), 0.0, i * spacing / M_PER_DEG, 90.0, (90.0, 270.0)) for i in range(n)]
    edges = [Edge(str(i), str(i + 1), 90.0, spacing) for i in range(n - 1)]
    edges += [Edge(str(i + 1), str(i), 270.0, spacing) for i in range(n - 1)]
    return StreetGraph(nodes, edges, name="line")


def test_nearest_nodes_and_radius_queries():
    g = line_graph()
    assert g.nearest_node(0.0, 41 / M_PER_DEG) == "2"
    (first, d1), (second, d2) = g.nearest_nodes(0.0, 41 / M_PER_DEG, k=2)
    assert (first, second) == ("2", "3") and d1 == pytest.approx(1.0, abs=0.01) and d2 == pytest.approx(19, abs=.01)
    assert sorted(g.nodes_within(0.0, 40 / M_PER_DEG, 20.5)) == ["1", "2", "3"]


def test_shortest_path_is_metric_and_cached():
    g = line_graph()
    assert g.shortest_path("0", "3") == ("0", "1", "2", "3")
    assert g.shortest_path("0", "3") is g.shortest_path("0", "3")
    assert g.distance_m("0", "4") == pytest.approx(80.0, abs=1e-6)


def test_edges_must_join_known_nodes():
    with pytest.raises(ValueError, match="not in the graph"):
        StreetGraph([Node("a", 0, 0, 0, ())], [Edge("a", "b", 0, 1)])


def test_a_node_or_edge_given_twice_is_refused_not_dropped():
    g = line_graph()
    nodes, edges = list(g.nodes.values()), list(g.edges)
    with pytest.raises(ValueError, match="edge 0->1 given twice"):
        StreetGraph(nodes, edges + [Edge("0", "1", 95.0, 20.0)])  # another azimuth: one would be lost
    with pytest.raises(ValueError, match="edge 0->1 given twice"):
        StreetGraph(nodes, edges + [edges[0]])  # the same: out_edges would hold it twice
    with pytest.raises(ValueError, match="node 2 given twice"):
        StreetGraph(nodes + [Node("2", 1.0, 1.0, 0.0, ())], edges)
