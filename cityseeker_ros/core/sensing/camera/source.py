"""Frame sources: where the per-direction views at the vehicle's current graph node come from.

A live vehicle is not a replay: its camera shows what is in front of it now. Every source answers
one question, `views(localisation)`: the view for each walkable heading of the node the vehicle
stands on, by cutting a 360° frame, by turning a camera, by picking a camera of a rig, or from
the world's view source. Sources are chosen by name from config, like view sources and policies.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.core.sensing.localisation import Localisation
from cityseeker_ros.core.streets.directions import relative_direction
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.tasks.environment import View
from cityseeker_ros.core.tasks.episode import World


class FrameError(RuntimeError):
    """A source could not give views now (no frame yet, unknown heading); the next fix may succeed."""


class FrameSource(ABC):
    """Per-direction views for the walkable headings of the localised node."""

    name: str = ""
    synthetic: bool = False  # rendered imagery, to be labelled as such in every result

    @abstractmethod
    def views(self, loc: Localisation) -> list[View]:
        """One View per walkable heading of `loc`, in heading order, with its image (or None
        where this source cannot see that way)."""

    def cameras(self) -> list[CameraSource]:
        """The cameras this source reads, so a node can feed frames it receives (the "topic" source)."""
        return []

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "synthetic": self.synthetic}

    def close(self) -> None:  # noqa: B027 - most sources hold nothing to release
        """Release devices and files."""


class CameraSource(FrameSource):
    """One physical camera: `frame(stamp)` gives its RGB frame at a time. Alone it is a fixed
    perspective camera looking `yaw_deg` clockwise of the vehicle heading: a walkable heading
    within half its field of view gets the frame, the others no image. Wrappers ("equirect",
    "rig") read the frames and make the views themselves."""

    def __init__(self, yaw_deg: float = 0.0, fov_deg: float = 90.0) -> None:
        self.yaw_deg = number(self.name, "yaw_deg", yaw_deg)
        self.fov_deg = number(self.name, "fov_deg", fov_deg, low=0.0, high=360.0)

    @abstractmethod
    def frame(self, stamp: Optional[float] = None) -> np.ndarray:
        """The RGB uint8 frame showing time `stamp` (seconds; None: the next or newest one).
        Raises FrameError when there is none."""

    def views(self, loc: Localisation) -> list[View]:
        facing = require_heading(self.name, loc)
        image = self.frame(loc.stamp)
        axis = facing + self.yaw_deg
        return make_views(loc, [image if abs(circular_difference(w.heading_deg, axis)) <= self.fov_deg / 2.0 else None
                                for w in loc.walkable])

    def cameras(self) -> list[CameraSource]:
        return [self]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "yaw_deg": self.yaw_deg, "fov_deg": self.fov_deg}


def number(source: str, field: str, value: Any, low: float = float("-inf"), high: float = float("inf")) -> float:
    """A finite number in [low, high] or a ConfigError naming the source and the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= float(value) <= high \
            or float(value) in (float("inf"), float("-inf")):
        raise ConfigError(f"frame source '{source}': parameter {field} must be a number in [{low:g}, {high:g}], "
                          f"got {value!r}")
    return float(value)


def require_heading(source: str, loc: Localisation) -> float:
    """The vehicle heading: a camera fixed to the vehicle cannot be oriented without it."""
    if loc.heading_deg is None:
        raise FrameError(f"frame source '{source}' needs the vehicle heading, which is not known yet "
                         "(no heading given and the vehicle has not moved)")
    return float(loc.heading_deg)


def facing_of(loc: Localisation, world: Optional[World] = None) -> float:
    """What view labels are relative to: the vehicle heading, else the node's capture heading."""
    if loc.heading_deg is not None:
        return float(loc.heading_deg)
    if world is not None and loc.node_id in world.graph.nodes:
        return float(world.graph.nodes[loc.node_id].heading)
    return 0.0


def make_views(loc: Localisation, images: Sequence[Optional[np.ndarray]], facing: Optional[float] = None) -> list[View]:
    """Views numbered like the node's walkable headings, labelled relative to `facing`."""
    facing = facing_of(loc) if facing is None else facing
    return [View(w.index, w.heading_deg, relative_direction(w.heading_deg, facing), image)
            for w, image in zip(loc.walkable, images)]


FrameSourceFactory = Callable[..., FrameSource]  # factory(world, **params); world may be None
FRAME_SOURCES: Registry[FrameSourceFactory] = Registry("frame source")


def make_frame_source(name: str, world: Optional[World] = None, params: Optional[dict[str, Any]] = None
                      ) -> FrameSource:
    if not isinstance(params or {}, dict):
        raise ConfigError(f"frame source '{name}': settings must be a JSON object, got {params!r}")
    return FRAME_SOURCES.create(name, world, **(params or {}))


def make_nested(owner: str, field: str, spec: Any, world: Optional[World]) -> FrameSource:
    """A source configured inside another: {"source": NAME, ...its settings}."""
    if not isinstance(spec, dict) or not isinstance(spec.get("source"), str):
        raise ConfigError(f"frame source '{owner}': parameter {field} must be an object "
                          f'{{"source": NAME, ...settings}}, got {spec!r}')
    params = {k: v for k, v in spec.items() if k != "source"}
    return make_frame_source(spec["source"], world, params)
