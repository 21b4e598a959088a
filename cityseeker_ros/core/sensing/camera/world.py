"""Sources that draw on a view source instead of a camera: "replay" (the world's imagery at the
localised node: a synthetic camera for tests and demos) and "airsim" (the simulated vehicle's
camera turns on its mount to each walkable heading; the vehicle itself never moves for a view)."""
from __future__ import annotations

from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.camera.source import FRAME_SOURCES, FrameError, FrameSource, facing_of, make_views
from cityseeker_ros.core.sensing.localisation import Localisation
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.sensing.views.source import ViewSource
from cityseeker_ros.core.streets.graph import Node
from cityseeker_ros.core.tasks.environment import View
from cityseeker_ros.core.tasks.episode import World
from cityseeker_ros.core.vehicles.airsim.views import AirSimViewSource


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
    """Every setting of view source "airsim" (anchor, host, port, camera, settle_s...)."""

    name = "airsim"

    def __init__(self, world: Optional[World] = None, **params: Any) -> None:
        from cityseeker_ros.core.streets.graph import StreetGraph

        host_world = world if world is not None else World("airsim", StreetGraph([], []), [], {})
        source = make_view_source("airsim", host_world, params)
        assert isinstance(source, AirSimViewSource)
        super().__init__(world, source)
        self.airsim = source

    def views(self, loc: Localisation) -> list[View]:
        """Turn the vehicle's camera on its mount where the vehicle is, not at the node's surveyed
        position: a live vehicle is never exactly on the node, and only the bridge moves it."""
        images = self.airsim.images_here([w.heading_deg for w in loc.walkable])
        return make_views(loc, images, facing_of(loc, self.world))
