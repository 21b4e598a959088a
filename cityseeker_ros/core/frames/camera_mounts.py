"""Where the cameras sit on the vehicle: static base_link -> camera transforms, and each camera's
optical frame (z forward, x right, y down: REP 103's `_optical` convention) below it, which is
the frame_id a sensor_msgs/Image is stamped with."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cityseeker_ros.core.frames.transforms import Transform, rpy_quaternion

OPTICAL_FROM_BODY = rpy_quaternion(-math.pi / 2, 0.0, -math.pi / 2)  # x right, y down, z forward


@dataclass(frozen=True)
class CameraMount:
    frame_id: str
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy_deg: tuple[float, float, float] = (0.0, 0.0, 0.0)  # roll, pitch, yaw about base_link (FLU)

    def transforms(self, base_link: str) -> list[Transform]:
        r, p, y = (math.radians(v) for v in self.rpy_deg)
        mount = Transform(base_link, self.frame_id, self.xyz, rpy_quaternion(r, p, y))
        optical = Transform(self.frame_id, f"{self.frame_id}_optical", rotation=OPTICAL_FROM_BODY)
        return [mount, optical]


def parse_mounts(value: Any, parameter: str = "cameras") -> list[CameraMount]:
    """A list of {frame_id, xyz?, rpy_deg?} (a JSON parameter) -> mounts; a bad entry is one clear line."""
    if not isinstance(value, list):
        raise ValueError(f"parameter {parameter} must be a JSON list of camera mounts, got {type(value).__name__}")
    mounts, seen = [], set()
    for i, entry in enumerate(value):
        where = f"parameter {parameter}[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("frame_id"), str) or not entry["frame_id"]:
            raise ValueError(f"{where} needs a non-empty frame_id string, got {entry!r}")
        unknown = set(entry) - {"frame_id", "xyz", "rpy_deg"}
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)} (known: frame_id, xyz, rpy_deg)")
        vectors = {}
        for key in ("xyz", "rpy_deg"):
            v = entry.get(key, [0.0, 0.0, 0.0])
            if not isinstance(v, Sequence) or len(v) != 3 or not all(
                    isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) for c in v):
                raise ValueError(f"{where}.{key} must be three finite numbers, got {v!r}")
            vectors[key] = tuple(float(c) for c in v)
        if entry["frame_id"] in seen:
            raise ValueError(f"{where}: frame_id {entry['frame_id']!r} appears twice")
        seen.add(entry["frame_id"])
        mounts.append(CameraMount(entry["frame_id"], vectors["xyz"], vectors["rpy_deg"]))
    return mounts


def static_transforms(mounts: Sequence[CameraMount], base_link: str) -> list[Transform]:
    out: list[Transform] = []
    for mount in mounts:
        if mount.frame_id in (base_link, f"{base_link}_optical"):
            raise ValueError(f"camera frame_id {mount.frame_id!r} clashes with the body frame {base_link!r}")
        out.extend(mount.transforms(base_link))
    return out
