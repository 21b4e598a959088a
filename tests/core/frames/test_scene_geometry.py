import math

import pytest

from cityseeker_ros.core.frames.geo_origin import MapFrame
from cityseeker_ros.core.frames.scene_geometry import graph_segments, node_position, target_area


def test_every_street_once(tiny_world):
    frame = MapFrame.of_graph(tiny_world.graph)
    segments = graph_segments(tiny_world.graph, frame)
    assert len(segments) == 4  # A-B, B-C, C-D, B-E: each edge and its reverse are one street
    lengths = sorted(round(math.dist(a, b), 1) for a, b in segments)
    assert lengths == [20.0, 20.0, 20.0, 20.0]
    assert len({frozenset(s) for s in segments}) == 4


def test_target_area_is_centred_on_the_target_with_the_satisfying_nodes(tiny_world):
    frame = MapFrame.of_graph(tiny_world.graph)
    episode = tiny_world.episodes[0]  # A -> D, a convenience store at D
    area = target_area(tiny_world, episode, frame, radius_m=10.0, ring_points=8)
    assert area.target == pytest.approx(node_position(tiny_world.graph, frame, "00000003"))
    assert len(area.ring) == 9 and area.ring[0] == pytest.approx(area.ring[-1])  # closed
    assert all(math.dist(p, area.target) == pytest.approx(10.0) for p in area.ring)
    assert area.satisfying == ()  # D is the only store: the target itself is not repeated
    wider = target_area(tiny_world, episode, frame, satisfying=frozenset({"00000003", "00000004", "nowhere"}))
    assert wider.satisfying == (pytest.approx(node_position(tiny_world.graph, frame, "00000004")),)


def test_bad_target_area_inputs(tiny_world):
    frame = MapFrame.of_graph(tiny_world.graph)
    with pytest.raises(ValueError, match="radius_m"):
        target_area(tiny_world, tiny_world.episodes[0], frame, radius_m=0.0)
    with pytest.raises(ValueError, match="ring_points"):
        target_area(tiny_world, tiny_world.episodes[0], frame, ring_points=2)
    with pytest.raises(KeyError, match="not in the street graph"):
        node_position(tiny_world.graph, frame, "missing")
