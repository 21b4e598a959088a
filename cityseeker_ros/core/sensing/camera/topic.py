"""Frames pushed in by the node from a live ROS image topic (subscribed with qos.CAMERA,
keep-last 1): only the newest frame is kept, since a slow decision wants what is seen now."""
from __future__ import annotations

import threading
import time
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.sensing.camera.source import FRAME_SOURCES, CameraSource, FrameError, number
from cityseeker_ros.core.tasks.episode import World


@FRAME_SOURCES.register("topic")
class TopicFrameSource(CameraSource):
    """A frame older than `max_age_s` (by its stamp, against the time asked for) is refused."""

    name = "topic"

    def __init__(self, world: Optional[World] = None, max_age_s: float = 1.0, yaw_deg: float = 0.0,
                 fov_deg: float = 90.0) -> None:
        super().__init__(yaw_deg, fov_deg)
        self.max_age_s = number(self.name, "max_age_s", max_age_s, low=0.0)
        self._lock = threading.Lock()
        self._frame: Optional[tuple[float, np.ndarray]] = None
        self.received = 0

    def push(self, rgb: np.ndarray, stamp: Optional[float] = None) -> None:
        """Called by whoever receives the frames (the node's subscription)."""
        with self._lock:
            self._frame = (time.time() if stamp is None else float(stamp), rgb)
            self.received += 1

    def frame(self, stamp: Optional[float] = None) -> np.ndarray:
        with self._lock:
            held = self._frame
        if held is None:
            raise FrameError("frame source 'topic': no camera frame received yet")
        frame_stamp, rgb = held
        if stamp is not None and abs(float(stamp) - frame_stamp) > self.max_age_s:
            raise FrameError(f"frame source 'topic': the newest frame is {abs(float(stamp) - frame_stamp):.2f} s "
                             f"from the fix (max_age_s {self.max_age_s:g})")
        return rgb

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "max_age_s": self.max_age_s}
