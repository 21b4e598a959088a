"""RViz / Foxglove markers of an episode: the street graph, the walked path, start and target.
Pure message builders (no rclpy); positions are east/north metres of the graph's map frame,
the same frame as the replay's pose topics."""
from __future__ import annotations

from collections.abc import Sequence

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from cityseeker_ros.core.tasks.episode import Episode, World

GRAPH, PATH, START, TARGET = range(4)
COLOURS = {GRAPH: (0.6, 0.6, 0.6, 0.6), PATH: (0.1, 0.5, 1.0, 1.0), START: (0.2, 0.8, 0.2, 1.0),
           TARGET: (1.0, 0.3, 0.1, 1.0)}


def _points(world: World, nodes: Sequence[str]) -> list[Point]:
    if not nodes:
        return []
    xy = world.graph.frame.to_xy([world.graph.nodes[n].lat for n in nodes], [world.graph.nodes[n].lon for n in nodes])
    return [Point(x=float(x), y=float(y), z=0.0) for x, y in xy.reshape(-1, 2)]


def _marker(kind: int, marker_type: int, header: Header, scale: float, points: list[Point]) -> Marker:
    marker = Marker(header=header, ns=("graph", "path", "start", "target")[kind], id=kind, type=marker_type,
                    action=Marker.ADD, points=points, color=ColorRGBA(**dict(zip("rgba", map(float, COLOURS[kind])))))
    marker.pose.orientation.w = 1.0
    marker.scale.x = marker.scale.y = marker.scale.z = scale
    return marker


def graph_markers(world: World, stamp: Time, frame_id: str) -> MarkerArray:
    """The street graph, once per world (tens of milliseconds for a city): latch it."""
    pairs = sorted({tuple(sorted((e.source, e.target))) for n in world.graph.nodes for e in world.graph.out_edges(n)})
    points = _points(world, [n for pair in pairs for n in pair])
    return MarkerArray(markers=[_marker(GRAPH, Marker.LINE_LIST, Header(stamp=stamp, frame_id=frame_id), 0.5, points)])


def episode_markers(world: World, episode: Episode, path: Sequence[str], stamp: Time, frame_id: str) -> MarkerArray:
    header = Header(stamp=stamp, frame_id=frame_id)
    return MarkerArray(markers=[
        _marker(PATH, Marker.LINE_STRIP, header, 2.0, _points(world, list(path))),
        _marker(START, Marker.SPHERE_LIST, header, 6.0, _points(world, [episode.start])),
        _marker(TARGET, Marker.SPHERE_LIST, header, 6.0, _points(world, [episode.target] if episode.target else [])),
    ])
