"""Views rendered from a world folder's scene: synthetic imagery that runs anywhere."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.views.source import VIEW_SOURCES, ViewSource, recentre
from cityseeker_ros.core.streets.graph import Node
from cityseeker_ros.core.tasks.episode import World


@VIEW_SOURCES.register("rendered")
class RenderedViewSource(ViewSource):
    """Perspective views from the CPU renderer; `settings` are RenderSettings fields (knobs)."""

    name = "rendered"
    synthetic = True

    def __init__(self, world: World, fov_deg: float = 90.0, width: int = 640, height: int = 480,
                 pano_width: int = 2048, **settings: Any) -> None:
        from cityseeker_ros.core.render import RENDERER_VERSION, Renderer, RenderSettings
        from cityseeker_ros.core.worlds.folder import load_scene

        if world.root is None or not (world.root / "scene.json").is_file():
            raise ConfigError(f"view source 'rendered' needs a world folder with scene.json; {world.city} has none "
                              "(build one with `cityseeker world build` or `cityseeker world dress`)")
        render_settings = RenderSettings.from_mapping(settings, "view source 'rendered'")
        self.renderer = Renderer(load_scene(world.root), world.graph, render_settings)
        if isinstance(pano_width, bool) or int(pano_width) != pano_width or pano_width < 2 or pano_width % 2:
            raise ConfigError(f"view source 'rendered': pano_width must be an even whole number >= 2, got {pano_width}")
        self.fov_deg, self.width, self.height = float(fov_deg), int(width), int(height)
        self.pano_width = int(pano_width)
        self._describe = {"name": self.name, "synthetic": True, "renderer_version": RENDERER_VERSION,
                          "fov_deg": self.fov_deg, "width": self.width, "height": self.height,
                          "pano_width": self.pano_width, **settings}

    def images(self, node: Node, headings: Sequence[float]) -> list[np.ndarray]:
        return [self.render(node.id, h).image for h in headings]

    def render(self, node_id: str, heading: float):
        """The full RenderedView, with the visible-sign ground truth."""
        return self.renderer.perspective(node_id, heading, fov_deg=self.fov_deg, width=self.width,
                                         height=self.height)

    def panorama_view(self, node: Node, facing: float) -> np.ndarray:
        """The rendered panorama (centred on the capture heading, columns at half-pixel
        centres) rolled so its centre looks along `facing`."""
        view = self.renderer.panorama(node.id, width=self.pano_width, height=self.pano_width // 2)
        return recentre(view.image, node.heading, facing, half_pixel=True)

    def describe(self) -> dict[str, Any]:
        return dict(self._describe)
