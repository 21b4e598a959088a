"""Where the vehicle went, bounded: a live run of hours must not grow a Path message without end.

A pose closer than `min_spacing_m` to the last kept one replaces it (a vehicle holding in place
adds nothing); past `max_poses` the oldest poses go."""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from cityseeker_ros.core.frames.transforms import Quaternion, Vector

_NO_NEWS = object()  # no run news heard yet (a key may be None: the world is idle)


@dataclass(frozen=True)
class PathPose:
    stamp_ns: int
    position: Vector
    rotation: Quaternion


class PathHistory:
    def __init__(self, max_poses: int = 2000, min_spacing_m: float = 0.5) -> None:
        if isinstance(max_poses, bool) or not isinstance(max_poses, int) or max_poses < 2:
            raise ValueError(f"path max_poses must be an integer of at least 2, got {max_poses!r}")
        if not isinstance(min_spacing_m, (int, float)) or not 0.0 <= min_spacing_m < math.inf:
            raise ValueError(f"path min_spacing_m must be a finite number >= 0, got {min_spacing_m!r}")
        self.max_poses, self.min_spacing_m = max_poses, float(min_spacing_m)
        self._poses: deque[PathPose] = deque(maxlen=max_poses)
        self._run_key: Any = _NO_NEWS

    def on_run(self, key: Any, stamp_ns: int) -> bool:
        """A run's news, stamped `stamp_ns`: True when it is a new run (its key changed). A new
        run's path starts at the news, except for the first news ever heard: a listener that joined
        late gets the latest state (step k, stamped k steps in), and the poses before it are this
        very run's."""
        if key == self._run_key:
            return False
        if self._run_key is not _NO_NEWS:
            self.drop_before(stamp_ns)
        self._run_key = key
        return True

    def add(self, pose: PathPose) -> bool:
        """True when the pose was kept as a new point (False: it replaced the last, or it was older)."""
        if not all(math.isfinite(c) for c in pose.position):
            raise ValueError(f"path pose position {pose.position!r} is not finite")
        if self._poses:
            last = self._poses[-1]
            if pose.stamp_ns < last.stamp_ns:
                return False  # out of order: the path only goes forward in time
            if math.dist(last.position, pose.position) < self.min_spacing_m and len(self._poses) > 1:
                self._poses[-1] = pose
                return False
        self._poses.append(pose)
        return True

    def clear(self) -> None:
        self._poses.clear()

    def drop_before(self, stamp_ns: int) -> int:
        """Forget the poses older than `stamp_ns` (a new run began then); how many went. Poses of
        the new run that arrived before the news of it stay."""
        kept = [p for p in self._poses if p.stamp_ns >= stamp_ns]
        dropped = len(self._poses) - len(kept)
        self._poses = deque(kept, maxlen=self.max_poses)
        return dropped

    def poses(self) -> list[PathPose]:
        return list(self._poses)

    def __len__(self) -> int:
        return len(self._poses)
