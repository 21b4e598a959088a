"""View sources: where the image for each walkable heading at a node comes from.

Every policy sees the same Observation; a view source only fills `View.image` with an RGB
uint8 array (height x width x 3). Sources are chosen by name from config, like policies.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cityseeker_ros.core.episode import World
from cityseeker_ros.core.graph import Node
from cityseeker_ros.core.registry import Registry


class ViewSource(ABC):
    """Perspective images at a graph node, one per requested absolute heading."""

    name: str = ""
    synthetic: bool = False  # rendered imagery, to be labelled as such in every result

    @abstractmethod
    def images(self, node: Node, headings: Sequence[float]) -> list[np.ndarray]:
        """RGB uint8 arrays, one per heading (degrees clockwise from north)."""

    def describe(self) -> dict[str, Any]:
        """Settings that define the pixels, written next to results."""
        return {"name": self.name, "synthetic": self.synthetic}

    def close(self) -> None:  # noqa: B027 - most sources hold nothing to release
        """Release files or caches; sources are cheap to keep open."""


ViewSourceFactory = Callable[..., ViewSource]  # factory(world, **params)
VIEW_SOURCES: Registry[ViewSourceFactory] = Registry("view source")


def make_view_source(name: str, world: World, params: dict[str, Any] | None = None) -> ViewSource:
    return VIEW_SOURCES.create(name, world, **(params or {}))
