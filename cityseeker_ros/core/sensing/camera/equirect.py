"""A 360° camera: another source's frames are 2:1 equirectangular panoramas, cut into one
perspective view per walkable heading with the panorama cutter the replay uses."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.camera.source import (
    FRAME_SOURCES,
    CameraSource,
    FrameError,
    FrameSource,
    make_nested,
    make_views,
    number,
    require_heading,
)
from cityseeker_ros.core.sensing.localisation import Localisation
from cityseeker_ros.core.sensing.views.panorama import ASPECT_TOLERANCE, PanoramaCutter
from cityseeker_ros.core.tasks.environment import View
from cityseeker_ros.core.tasks.episode import World


@FRAME_SOURCES.register("equirect")
class EquirectFrameSource(FrameSource):
    """`frames`: the camera, e.g. {"source": "video", "uri": "drive.avi"}. The panorama's centre
    column looks `yaw_offset_deg` clockwise of the vehicle heading (0 for a camera mounted facing
    forward), so the view for absolute heading h is cut at yaw h - heading - yaw_offset_deg."""

    name = "equirect"

    def __init__(self, world: Optional[World] = None, frames: Any = None, yaw_offset_deg: float = 0.0,
                 fov_deg: float = 90.0, width: int = 640, height: int = 480) -> None:
        if frames is None:
            raise ConfigError("frame source 'equirect': parameter frames is required, e.g. "
                              '{"source": "video", "uri": "drive.avi"}')
        self.yaw_offset_deg = number(self.name, "yaw_offset_deg", yaw_offset_deg)
        try:
            self.cutter = PanoramaCutter(fov_deg, width, height)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"frame source 'equirect': parameters fov_deg/width/height: {exc}") from None
        inner = make_nested(self.name, "frames", frames, world)
        if not isinstance(inner, CameraSource):
            inner.close()
            raise ConfigError(f"frame source 'equirect': parameter frames must name a camera (video, rosbag, "
                              f"topic), got '{frames.get('source')}'")
        self.inner = inner
        self.synthetic = inner.synthetic

    def views(self, loc: Localisation) -> list[View]:
        facing = require_heading(self.name, loc)
        pano = self.inner.frame(loc.stamp)
        check_equirect(pano)
        base = facing + self.yaw_offset_deg
        return make_views(loc, [self.cutter.cut(pano, w.heading_deg - base) for w in loc.walkable])

    def cameras(self) -> list[CameraSource]:
        return self.inner.cameras()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "frames": self.inner.describe(), "yaw_offset_deg": self.yaw_offset_deg,
                "fov_deg": self.cutter.fov_deg, "width": self.cutter.width, "height": self.cutter.height}

    def close(self) -> None:
        self.inner.close()
        self.cutter.clear()


def check_equirect(frame: np.ndarray) -> None:
    """A camera that is not 360° would be cut into nonsense: say so instead."""
    h, w = frame.shape[:2]
    if abs(w / h - 2.0) > ASPECT_TOLERANCE:
        raise FrameError(f"frame source 'equirect': frame of {w}x{h} pixels is not a 2:1 equirectangular panorama")
