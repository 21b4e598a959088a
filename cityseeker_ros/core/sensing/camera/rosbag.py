"""Frames from a recorded rosbag2 (MCAP or sqlite3), read with the `rosbags` library: ROS's own
bag tools are not on PyPI, and this reads the same files without a ROS install.

Frames come in time order (header stamp, or the bag's receive time with time="bag"); the frame
for time t is the newest one at or before t, so a replayed drive and its fixes line up.
"""
from __future__ import annotations

import bisect
import io
from pathlib import Path
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.sensing.camera.source import FRAME_SOURCES, CameraSource, FrameError
from cityseeker_ros.core.tasks.episode import World

IMAGE_TYPES = ("sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage")
# sensor_msgs/Image encodings read without cv_bridge: channels and the order to RGB.
ENCODINGS = {"rgb8": (3, [0, 1, 2]), "bgr8": (3, [2, 1, 0]), "rgba8": (4, [0, 1, 2]), "bgra8": (4, [2, 1, 0]),
             "mono8": (1, [0, 0, 0])}


def image_to_rgb(msg: Any, msgtype: str) -> np.ndarray:
    """RGB uint8 from a deserialised sensor_msgs Image or CompressedImage."""
    if msgtype.endswith("CompressedImage"):
        from PIL import Image

        with Image.open(io.BytesIO(bytes(msg.data))) as image:
            return np.asarray(image.convert("RGB"))
    if msg.encoding not in ENCODINGS:
        raise ValueError(f"image encoding {msg.encoding!r} is not one of {sorted(ENCODINGS)}")
    channels, order = ENCODINGS[msg.encoding]
    data = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.step)[:, :msg.width * channels]
    return np.ascontiguousarray(data.reshape(msg.height, msg.width, channels)[:, :, order])


@FRAME_SOURCES.register("rosbag")
class RosbagFrameSource(CameraSource):
    """`path`: the bag folder (or .mcap/.db3 file); `topic`: an Image or CompressedImage topic."""

    name = "rosbag"

    def __init__(self, world: Optional[World] = None, path: str = "", topic: str = "", time: str = "header",
                 yaw_deg: float = 0.0, fov_deg: float = 90.0) -> None:
        super().__init__(yaw_deg, fov_deg)
        from rosbags.highlevel import AnyReader
        from rosbags.typesys import Stores, get_typestore

        if not path or not Path(path).expanduser().exists():
            raise ConfigError(f"frame source 'rosbag': parameter path: no such bag {path!r}")
        if time not in ("header", "bag"):
            raise ConfigError(f"frame source 'rosbag': parameter time must be 'header' or 'bag', got {time!r}")
        self.path, self.topic, self.time = Path(path).expanduser(), str(topic), time
        try:
            self._reader = AnyReader([self.path], default_typestore=get_typestore(Stores.ROS2_JAZZY))
            self._reader.open()
        except Exception as exc:  # rosbags raises its own error types per storage format
            raise DataError(self.path, f"not a readable rosbag2: {exc}") from None
        found = {c.topic: c.msgtype for c in self._reader.connections}
        images = sorted(t for t, m in found.items() if m in IMAGE_TYPES)
        if self.topic not in found or found[self.topic] not in IMAGE_TYPES:
            self._reader.close()
            raise ConfigError(f"frame source 'rosbag': parameter topic {self.topic!r} is not an image topic of "
                              f"{self.path}; image topics: {', '.join(images) or '(none)'}")
        self._connections = [c for c in self._reader.connections if c.topic == self.topic]
        self._msgtype = found[self.topic]
        self._index: list[tuple[float, int]] = []  # (time s, order) sorted; frames decoded on demand
        self._raw: list[tuple[Any, bytes]] = []
        for connection, bag_ns, raw in self._reader.messages(connections=self._connections):
            stamp = bag_ns * 1e-9
            if self.time == "header":
                header = self._reader.deserialize(raw, connection.msgtype).header.stamp
                stamp = header.sec + header.nanosec * 1e-9
            self._index.append((stamp, len(self._raw)))
            self._raw.append((connection, raw))
        self._index.sort()
        self._times = [t for t, _ in self._index]
        self._next = 0  # the frame stamp=None returns next

    def __len__(self) -> int:
        return len(self._index)

    @property
    def stamps(self) -> list[float]:
        return list(self._times)

    def _decode(self, position: int) -> np.ndarray:
        connection, raw = self._raw[self._index[position][1]]
        try:
            return image_to_rgb(self._reader.deserialize(raw, connection.msgtype), self._msgtype)
        except (ValueError, OSError) as exc:
            raise DataError(self.path, f"topic {self.topic} frame {position}: {exc}") from None

    def frame(self, stamp: Optional[float] = None) -> np.ndarray:
        if stamp is None:
            position = self._next
        else:
            position = bisect.bisect_right(self._times, float(stamp)) - 1
            if position < 0:
                raise FrameError(f"frame source 'rosbag': no frame on {self.topic} at or before t={stamp:.3f} s "
                                 f"(the first is at {self._times[0]:.3f} s)" if self._times else
                                 f"frame source 'rosbag': topic {self.topic} has no frames")
        if position >= len(self._index):
            raise FrameError(f"frame source 'rosbag': topic {self.topic} has no more frames ({len(self)} in all)")
        self._next = position + 1
        return self._decode(position)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": str(self.path), "topic": self.topic, "time": self.time,
                "frames": len(self)}

    def close(self) -> None:
        self._reader.close()
