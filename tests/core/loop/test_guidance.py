"""AR guidance on the tiny street of tests/conftest.py (A-B-C-D east every 20 m, E north of B)."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.guidance import guide, guide_action
from cityseeker_ros.core.tasks.environment import STOP, move, retrace


@pytest.fixture
def graph(tiny_world):
    return tiny_world.graph


def test_move_relative_to_where_the_device_points(graph):
    # at B (00000001) the user's phone points east (90); the policy picks north (0) towards E (00000004)
    g = guide(graph, "00000001", "move", 0.0, "00000004", device_heading_deg=90.0, reason="a cafe sign",
              confidence=0.8)
    assert (g.action, g.heading_deg, g.relative_deg, g.direction) == ("move", 0.0, -90.0, "LEFT")
    assert g.distance_m == pytest.approx(20.0, abs=0.2) and g.next_node == "00000004"
    assert g.text == "Turn left (-90°), 20 m to the next corner: a cafe sign" and g.confidence == 0.8
    right = guide(graph, "00000001", "move", 0.0, "00000004", device_heading_deg=300.0)
    assert (right.relative_deg, right.direction) == (60.0, "FRONT_RIGHT")  # positive is clockwise
    ahead = guide(graph, "00000001", "move", 90.0, None, device_heading_deg=100.0)
    assert (ahead.relative_deg, ahead.direction, ahead.distance_m) == (-10.0, "FRONT", None)


def test_without_a_device_heading_only_the_absolute_heading(graph):
    g = guide(graph, "00000001", "move", None, "00000002")
    assert g.heading_deg == pytest.approx(90.0, abs=1e-6) and g.relative_deg is None and g.direction is None
    assert g.text.startswith("Head 90° from north")


def test_stop_and_back(graph):
    stop = guide(graph, "00000003", "stop", reason="the store is here")
    assert (stop.action, stop.next_node, stop.distance_m, stop.relative_deg) == ("stop", None, 0.0, None)
    assert stop.text == "You have arrived: the store is here"
    back = guide(graph, "00000002", "back", next_node="00000001", device_heading_deg=90.0)
    assert back.heading_deg == pytest.approx(270.0, abs=1e-6) and back.direction == "BACK"
    assert back.text.startswith("Walk back to 00000001: turn around (+180°), 20 m")


def test_from_a_core_action(graph):
    g = guide_action(graph, "00000001", move(2), device_heading_deg=90.0, reason="r")
    assert (g.heading_deg, g.next_node, g.direction) == (0.0, "00000004", "LEFT")
    assert guide_action(graph, "00000001", STOP).action == "stop"
    assert guide_action(graph, "00000002", retrace("00000001")).next_node == "00000001"
    with pytest.raises(ConfigError, match="move index 5 is not a walkable heading"):
        guide_action(graph, "00000001", move(5))


def test_bad_input_is_named(graph):
    with pytest.raises(ConfigError, match="kind must be one of move, stop, back"):
        guide(graph, "00000001", "jump")
    with pytest.raises(ConfigError, match="next_node 'nowhere' is not in street graph"):
        guide(graph, "00000001", "move", 0.0, "nowhere")
    with pytest.raises(ConfigError, match="needs next_node"):
        guide(graph, "00000001", "back")
    with pytest.raises(ConfigError, match="needs action_heading_deg or next_node"):
        guide(graph, "00000001", "move")
