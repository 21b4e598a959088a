"""OpenCV capture: a video file, a camera device index or a network stream (rtsp://, http://).

Files are played against the fixes' clock: frame i shows time start_stamp + i / fps, so a
recorded drive and its GNSS log line up. Devices and streams are live: a grabber thread keeps
only the newest frame (keep-last-1, like qos.CAMERA), because a slow decision wants what the
camera sees now, not the backlog OpenCV buffers.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Optional

import cv2
import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.camera.source import FRAME_SOURCES, CameraSource, FrameError, number
from cityseeker_ros.core.tasks.episode import World

STREAM_SCHEMES = ("rtsp://", "rtsps://", "http://", "https://", "udp://", "tcp://")


def _to_rgb(bgr: np.ndarray) -> np.ndarray:
    if bgr.ndim == 2:
        return np.ascontiguousarray(np.repeat(bgr[:, :, None], 3, axis=2))
    return np.ascontiguousarray(cv2.cvtColor(bgr, cv2.COLOR_BGRA2RGB if bgr.shape[2] == 4 else cv2.COLOR_BGR2RGB))


@FRAME_SOURCES.register("video")
class VideoFrameSource(CameraSource):
    """`uri`: a file path, a device index (0, "0") or a stream URL. `fps` overrides the file's
    rate; `start_stamp` is the time of a file's first frame (default: the first time asked for)."""

    name = "video"

    def __init__(self, world: Optional[World] = None, uri: Any = None, fps: Optional[float] = None,
                 start_stamp: Optional[float] = None, loop: bool = False, open_timeout_s: float = 10.0,
                 yaw_deg: float = 0.0, fov_deg: float = 90.0) -> None:
        super().__init__(yaw_deg, fov_deg)
        if uri is None or uri == "":
            raise ConfigError("frame source 'video': parameter uri is required (a file, a device index or a URL)")
        if isinstance(uri, bool) or not isinstance(uri, (int, str)):
            raise ConfigError(f"frame source 'video': parameter uri must be a path, device index or URL, got {uri!r}")
        self.live = isinstance(uri, int) or uri.isdigit() or uri.lower().startswith(STREAM_SCHEMES)
        if self.live:
            self.uri: Any = int(uri) if str(uri).isdigit() else uri
        else:
            self.uri = str(Path(uri).expanduser())
            if not Path(self.uri).is_file():
                raise ConfigError(f"frame source 'video': parameter uri: no such video file {uri}")
        self.loop = bool(loop)
        self.open_timeout_s = number(self.name, "open_timeout_s", open_timeout_s, low=0.0)
        self.start_stamp = None if start_stamp is None else number(self.name, "start_stamp", start_stamp)
        self._capture = cv2.VideoCapture(self.uri)
        if not self._capture.isOpened():
            raise ConfigError(f"frame source 'video': parameter uri: OpenCV cannot open {self.uri!r}")
        file_fps = float(self._capture.get(cv2.CAP_PROP_FPS) or 0.0)
        self.fps = number(self.name, "fps", fps, low=1e-3) if fps is not None else file_fps
        if not self.live and not self.fps > 0:
            raise ConfigError(f"frame source 'video': {self.uri} reports no frame rate; give parameter fps")
        self._index = -1  # index of the frame in _current (files)
        self._current: Optional[np.ndarray] = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._grabber: Optional[threading.Thread] = None
        if self.live:
            self._grabber = threading.Thread(target=self._grab_loop, name="video-grabber", daemon=True)
            self._grabber.start()

    # -- live ----------------------------------------------------------------------------------

    def _grab_loop(self) -> None:
        while not self._stop.is_set():
            ok, bgr = self._capture.read()
            if not ok:
                time.sleep(0.01)
                continue
            with self._lock:
                self._current, self._index = _to_rgb(bgr), self._index + 1

    def _newest(self) -> np.ndarray:
        deadline = time.monotonic() + self.open_timeout_s
        while True:
            with self._lock:
                if self._current is not None:
                    return self._current
            if time.monotonic() >= deadline:
                raise FrameError(f"frame source 'video': no frame from {self.uri!r} within {self.open_timeout_s:g} s")
            time.sleep(0.01)

    # -- files ---------------------------------------------------------------------------------

    def _read_next(self) -> bool:
        ok, bgr = self._capture.read()
        if not ok and self.loop and self._index >= 0:
            self._capture.set(cv2.CAP_PROP_POS_FRAMES, 0)
            ok, bgr = self._capture.read()
        if not ok:
            return False
        self._current, self._index = _to_rgb(bgr), self._index + 1
        return True

    def _file_frame(self, stamp: Optional[float]) -> np.ndarray:
        if stamp is None:
            wanted = self._index + 1
        else:
            if self.start_stamp is None:
                self.start_stamp = float(stamp)
            wanted = max(0, int(round((float(stamp) - self.start_stamp) * self.fps)))
        if wanted < self._index:  # time went back (a replayed log): start over
            self._capture.set(cv2.CAP_PROP_POS_FRAMES, 0)
            self._index, self._current = -1, None
        while self._index < wanted:
            if not self._read_next():
                break
        if self._current is None:
            raise FrameError(f"frame source 'video': {self.uri} has no frame {wanted}")
        return self._current

    def frame(self, stamp: Optional[float] = None) -> np.ndarray:
        if self.live:
            return self._newest()
        with self._lock:
            return self._file_frame(stamp)

    @property
    def frame_index(self) -> int:
        """Index of the last frame read (-1 before the first)."""
        return self._index

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "uri": str(self.uri), "live": self.live, "fps": self.fps}

    def close(self) -> None:
        self._stop.set()
        if self._grabber is not None:
            self._grabber.join(timeout=2.0)
        self._capture.release()
