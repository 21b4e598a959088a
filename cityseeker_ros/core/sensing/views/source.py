"""View sources: where the image for each walkable heading at a node comes from.

Every policy sees the same Observation; a view source only fills `View.image` with an RGB
uint8 array (height x width x 3). Sources are chosen by name from config, like policies.
"""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.core.streets.graph import Node
from cityseeker_ros.core.tasks.episode import World


class ViewSource(ABC):
    """Perspective images at a graph node, one per requested absolute heading."""

    name: str = ""
    synthetic: bool = False  # rendered imagery, to be labelled as such in every result

    @abstractmethod
    def images(self, node: Node, headings: Sequence[float]) -> list[np.ndarray]:
        """RGB uint8 arrays, one per heading (degrees clockwise from north)."""

    def panorama_view(self, node: Node, facing: float) -> Optional[np.ndarray]:
        """The node's whole surroundings for the stop decision: an equirectangular RGB uint8
        image (width = 2 x height) whose centre column looks along `facing` (degrees clockwise
        from north), longitude growing clockwise to the right. None where the source has none;
        the stop prompt then shows the per-heading views."""
        return None

    def describe(self) -> dict[str, Any]:
        """Settings that define the pixels, written next to results."""
        return {"name": self.name, "synthetic": self.synthetic}

    def close(self) -> None:  # noqa: B027 - most sources hold nothing to release
        """Release files or caches; sources are cheap to keep open."""


ViewSourceFactory = Callable[..., ViewSource]  # factory(world, **params)
VIEW_SOURCES: Registry[ViewSourceFactory] = Registry("view source")


def make_view_source(name: str, world: World, params: dict[str, Any] | None = None) -> ViewSource:
    return VIEW_SOURCES.create(name, world, **(params or {}))


class PanoramaRef:
    """A node's panorama for one observation, made on first use: only a policy that shows it
    (the VLM's stop prompt) pays for reading or rendering it, once per observation."""

    def __init__(self, source: ViewSource, node: Node, facing: float) -> None:
        self.source, self.node, self.facing = source, node, float(facing)
        self._image: Optional[np.ndarray] = None
        self._made = False
        self._lock = threading.Lock()

    def get(self) -> Optional[np.ndarray]:
        with self._lock:
            if not self._made:
                self._image = self.source.panorama_view(self.node, self.facing)
                self._made = True
            return self._image

    def __repr__(self) -> str:
        return f"PanoramaRef({self.source.name!r}, {self.node.id!r}, facing={self.facing:g})"


def recentre(pano: np.ndarray, looks_along: float, facing: float, half_pixel: bool = False) -> np.ndarray:
    """Roll an equirectangular image whose centre column looks along `looks_along` so that it
    looks along `facing`: a whole-column shift, exact to half a column. `half_pixel`: the
    image's column c looks at (c + 0.5) rather than c columns from its left edge (the renderer)."""
    width = pano.shape[1]
    shift = (float(facing) - float(looks_along)) % 360.0 * width / 360.0 - (0.5 if half_pixel else 0.0)
    return np.roll(pano, -int(round(shift)) % width, axis=1)
