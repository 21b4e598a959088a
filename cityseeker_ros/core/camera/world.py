"""Sources that draw on a view source instead of a camera: "replay" (the world's imagery at the
localised node: a synthetic camera for tests and demos) and "airsim" (the simulated vehicle
turns in place to each walkable heading at the vehicle's own position)."""
from __future__ import annotations

from typing import Any, Optional

from cityseeker_ros.core.camera.source import FRAME_SOURCES, FrameError, FrameSource, facing_of, make_views
from cityseeker_ros.core.environment import View
from cityseeker_ros.core.episode import World
from cityseeker_ros.core.errors import ConfigError
from cityseeker_ros.core.graph import Node
from cityseeker_ros.core.localisation import Localisation
from cityseeker_ros.core.views import make_view_source
from cityseeker_ros.core.views.source import ViewSource


def _node(source: str, world: World, loc: Localisation) -> Node:
    if loc.node_id is None or loc.node_id not in world.graph.nodes:
        raise FrameError(f"frame source '{source}': node {loc.node_id!r} is not in street graph {world.city!r}")
    return world.graph.nodes[loc.node_id]


class _ViewSourceFrames(FrameSource):
    """Delegates to a core.views ViewSource; keeps the world for node lookups and labels."""

    def __init__(self, world: Optional[World], view_source: ViewSource) -> None:
        self.world, self.view_source = world, view_source
        self.synthetic = view_source.synthetic

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "views": self.view_source.describe()}

    def close(self) -> None:
        self.view_source.close()


@FRAME_SOURCES.register("replay")
class ReplayFrameSource(_ViewSourceFrames):
    """`views`: a view source name (rendered, panorama-folder...), `view_params` its settings."""

    name = "replay"

    def __init__(self, world: Optional[World] = None, views: str = "rendered",
                 view_params: Optional[dict[str, Any]] = None) -> None:
        if world is None:
            raise ConfigError("frame source 'replay' needs a world: set parameter data")
        if not isinstance(view_params or {}, dict):
            raise ConfigError(f"frame source 'replay': parameter view_params must be an object, got {view_params!r}")
        super().__init__(world, make_view_source(str(views), world, view_params or {}))

    def views(self, loc: Localisation) -> list[View]:
        assert self.world is not None
        node = _node(self.name, self.world, loc)
        images = self.view_source.images(node, [w.heading_deg for w in loc.walkable])
        return make_views(loc, images, facing_of(loc, self.world))


@FRAME_SOURCES.register("airsim")
class AirSimFrameSource(_ViewSourceFrames):
    """Every setting of view source "airsim" (anchor, host, port, motion, camera...)."""

    name = "airsim"

    def __init__(self, world: Optional[World] = None, **params: Any) -> None:
        from cityseeker_ros.core.graph import StreetGraph

        host_world = world if world is not None else World("airsim", StreetGraph([], []), [], {})
        super().__init__(world, make_view_source("airsim", host_world, params))

    def views(self, loc: Localisation) -> list[View]:
        """Turn in place where the vehicle is (its fix), not at the node's surveyed position:
        a live vehicle is never exactly on the node and must not be flown there to look."""
        if loc.lat is None or loc.lon is None:
            raise FrameError("frame source 'airsim': no vehicle position to turn at")
        known = self.world.graph.nodes.get(loc.node_id) if self.world is not None and loc.node_id else None
        here = Node(loc.node_id or "vehicle", float(loc.lat), float(loc.lon),
                    known.heading if known is not None else 0.0, tuple(w.heading_deg for w in loc.walkable))
        images = self.view_source.images(here, [w.heading_deg for w in loc.walkable])
        return make_views(loc, images, facing_of(loc, self.world))
