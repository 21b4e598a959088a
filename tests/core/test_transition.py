"""The paper's action model on the tiny city, where every heading's outcome is known."""
from cityseeker_ros.core.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.transition import ActionModel


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
