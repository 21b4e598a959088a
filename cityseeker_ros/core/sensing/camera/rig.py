"""A multi-camera rig: N cameras fixed to the vehicle at known yaws. Each walkable heading gets
the whole frame of the camera that looks nearest to it, which is how a rig without a stitcher
answers "what is down that street"."""
from __future__ import annotations

from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.camera.source import (
    FRAME_SOURCES,
    CameraSource,
    FrameSource,
    make_nested,
    make_views,
    number,
    require_heading,
)
from cityseeker_ros.core.sensing.localisation import Localisation
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.tasks.environment import View
from cityseeker_ros.core.tasks.episode import World


@FRAME_SOURCES.register("rig")
class RigFrameSource(FrameSource):
    """`cameras`: [{"yaw_deg": 0, "frames": {"source": "video", "uri": ...}}, ...], yaw clockwise of
    the vehicle heading. A heading farther than `max_offset_deg` from every camera gets no image."""

    name = "rig"

    def __init__(self, world: Optional[World] = None, cameras: Any = None, max_offset_deg: float = 180.0) -> None:
        if not isinstance(cameras, list) or not cameras:
            raise ConfigError("frame source 'rig': parameter cameras must be a non-empty list of "
                              '{"yaw_deg": ..., "frames": {"source": ...}}')
        self.max_offset_deg = number(self.name, "max_offset_deg", max_offset_deg, low=0.0, high=180.0)
        self.rig: list[tuple[float, CameraSource]] = []
        try:
            for i, spec in enumerate(cameras):
                if not isinstance(spec, dict) or set(spec) - {"yaw_deg", "frames"} or "frames" not in spec:
                    raise ConfigError(f"frame source 'rig': parameter cameras[{i}] must be "
                                      f'{{"yaw_deg": ..., "frames": {{"source": ...}}}}, got {spec!r}')
                yaw = number(self.name, f"cameras[{i}].yaw_deg", spec.get("yaw_deg", 0.0))
                camera = make_nested(self.name, f"cameras[{i}].frames", spec["frames"], world)
                if not isinstance(camera, CameraSource):
                    camera.close()
                    raise ConfigError(f"frame source 'rig': parameter cameras[{i}].frames must name a camera "
                                      f"(video, rosbag, topic), got '{spec['frames'].get('source')}'")
                self.rig.append((yaw, camera))
        except Exception:
            self.close()
            raise

    def camera_for(self, heading_deg: float, vehicle_heading_deg: float) -> Optional[int]:
        """Index of the camera looking nearest to `heading_deg`, None when none is within reach."""
        offsets = [abs(circular_difference(heading_deg, vehicle_heading_deg + yaw)) for yaw, _ in self.rig]
        best = min(range(len(offsets)), key=offsets.__getitem__)
        return best if offsets[best] <= self.max_offset_deg else None

    def views(self, loc: Localisation) -> list[View]:
        facing = require_heading(self.name, loc)
        chosen = [self.camera_for(w.heading_deg, facing) for w in loc.walkable]
        frames = {i: self.rig[i][1].frame(loc.stamp) for i in set(chosen) if i is not None}
        return make_views(loc, [None if i is None else frames[i] for i in chosen])

    def cameras(self) -> list[CameraSource]:
        return [c for _, camera in self.rig for c in camera.cameras()]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "max_offset_deg": self.max_offset_deg,
                "cameras": [{"yaw_deg": yaw, "frames": camera.describe()} for yaw, camera in self.rig]}

    def close(self) -> None:
        for _, camera in self.rig:
            camera.close()
