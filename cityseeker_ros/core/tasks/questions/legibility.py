"""Which signs an agent can read where: the renderer's visible-sign lists for the very views the
environment shows at a node (one perspective view per walkable heading), so "legible within the
budget" means legible in a view some episode can actually be shown."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from cityseeker_ros.core.render import Renderer, RenderSettings, VisibleSign
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.worlds.scene import Scene

MIN_VISIBLE = 0.5  # a board less than half in sight is not read (as sign-oracle's default)
# The rendered view source's defaults (sensing/views/rendered.py): what a benchmark run shows.
VIEW_DEFAULTS: dict[str, Any] = {"fov_deg": 90.0, "width": 640, "height": 480}


@dataclass(frozen=True)
class Sighting:
    """One legible board in one view: which view, the board, and the heading it was seen along."""

    node: str
    heading: float
    sign: VisibleSign


@dataclass
class SignSight:
    """Legible boards per node, rendered once per node and kept. `view` holds the view source's
    fov_deg, width and height, `settings` RenderSettings fields (unsigned_fraction, min_text_px...)."""

    scene: Scene
    graph: StreetGraph
    view: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    min_visible: float = MIN_VISIBLE
    actions: Optional[ActionModel] = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.view) - set(VIEW_DEFAULTS))
        if unknown:
            raise ValueError(f"view parameters {unknown} are not view sizes; known: {', '.join(VIEW_DEFAULTS)} "
                             "(renderer knobs go in `settings`)")
        self.view = {**VIEW_DEFAULTS, **self.view}
        self.renderer = Renderer(self.scene, self.graph, RenderSettings.from_mapping(dict(self.settings),
                                                                                   "question legibility"))
        self.actions = self.actions or ActionModel(self.graph)
        self._seen: dict[str, tuple[Sighting, ...]] = {}

    def at(self, node: str) -> tuple[Sighting, ...]:
        """Every legible board in the views at `node`, nearest first within each view."""
        seen = self._seen.get(node)
        if seen is None:
            found = []
            for m in self.actions.moves(node):
                view = self.renderer.perspective(node, m.heading, fov_deg=float(self.view["fov_deg"]),
                                                 width=int(self.view["width"]), height=int(self.view["height"]))
                found += [Sighting(node, m.heading, s) for s in view.signs
                          if s.legible and s.visible_fraction >= self.min_visible]
            seen = self._seen[node] = tuple(found)
        return seen

    def legible_ids(self, node: str) -> frozenset[str]:
        return frozenset(s.sign.poi_id for s in self.at(node))

    def legible_from(self, poi_id: str, nodes: tuple[str, ...]) -> tuple[str, ...]:
        """The nodes among `nodes` whose views show the POI's board legibly, in the given order."""
        return tuple(n for n in nodes if n in self.graph and poi_id in self.legible_ids(n))

    def describe(self) -> dict[str, Any]:
        return {"view": dict(self.view), "settings": dict(self.settings), "min_visible": self.min_visible}
