"""The "yaw in place" view set from AirSim: at a graph node the vehicle turns to each walkable
heading and the front camera takes one perspective view per heading.

Registered as view source "airsim". The AirSim client library is loaded only when a source is
made, so listing sources never needs it installed.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from cityseeker_ros.core.airsim.anchor import Anchor
from cityseeker_ros.core.airsim.client import AirSimLink
from cityseeker_ros.core.airsim.motion import Goal, make_motion_mode
from cityseeker_ros.core.episode import World
from cityseeker_ros.core.errors import ConfigError
from cityseeker_ros.core.graph import Node
from cityseeker_ros.core.views.source import VIEW_SOURCES, ViewSource


@VIEW_SOURCES.register("airsim")
class AirSimViewSource(ViewSource):
    """Views from a live AirSim camera. `anchor` places the AirSim origin on the Earth (see
    Anchor.from_config); `motion` is 'teleport' (reproducible, the default) or 'fly'."""

    name = "airsim"
    synthetic = True  # Unreal-rendered, not street-view photographs

    def __init__(self, world: World, anchor: Mapping[str, Any] | None = None, host: str = "127.0.0.1",
                 port: int = 41451, client: str = "auto", vehicle: str = "", camera: str = "front",
                 motion: str = "teleport", motion_params: Mapping[str, Any] | None = None,
                 altitude_m: float = 2.5, settle_s: float = 0.05, compress: bool = True,
                 raw_channel_order: str = "bgr", timeout_s: float = 600.0) -> None:
        if anchor is None:
            raise ConfigError("view source 'airsim' needs anchor={\"lat\": ..., \"lon\": ..., \"alt\": ...} "
                              "(the geographic position of the AirSim origin)")
        for field, value in (("settle_s", settle_s), ("altitude_m", altitude_m)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ConfigError(f"view source 'airsim': '{field}' must be a number >= 0; got {value!r}")
        self.anchor = Anchor.from_config(anchor)
        self.camera, self.compress, self.settle_s = str(camera), bool(compress), float(settle_s)
        self.altitude_m = float(altitude_m)  # eye height above the AirSim origin
        self.link = AirSimLink(host, port, client=client, vehicle=vehicle, timeout_s=timeout_s,
                               raw_channel_order=raw_channel_order).connect()
        self.motion = make_motion_mode(motion, self.link, self.anchor, **dict(motion_params or {}))
        height = self.motion.altitude_m if self.motion.altitude_m is not None else self.altitude_m
        self._describe = {**self.motion.describe(), "name": self.name, "synthetic": True,
                          "client": self.link.lib.__name__, "camera": self.camera, "anchor": asdict(self.anchor),
                          "altitude_m": height}

    def images(self, node: Node, headings: Sequence[float]) -> list[np.ndarray]:
        """Go to the node once, then turn in place for each heading; the first heading is where
        go_to already faces."""
        if not headings:
            return []
        self.motion.go_to(Goal(node.lat, node.lon, self.anchor.alt + self.altitude_m, float(headings[0])))
        views = []
        for i, heading in enumerate(headings):
            if i:
                self.motion.turn_to(heading)
            if self.settle_s:
                time.sleep(self.settle_s)  # let the renderer draw a frame at the new pose
            views.append(self.link.grab(self.camera, compress=self.compress).rgb)
        return views

    def describe(self) -> dict[str, Any]:
        return dict(self._describe)

    def close(self) -> None:
        self.link.close()
