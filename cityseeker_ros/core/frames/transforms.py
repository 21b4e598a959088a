"""Rigid transforms between named frames and a small tree of them (what tf2's buffer does for a
reader): compose, invert, and look up a chain such as map -> odom -> base_link.

Quaternions are (x, y, z, w), as geometry_msgs orders them."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Vector = tuple[float, float, float]
Quaternion = tuple[float, float, float, float]
IDENTITY: Quaternion = (0.0, 0.0, 0.0, 1.0)


def yaw_quaternion(yaw_rad: float) -> Quaternion:
    """A rotation about +z (counter-clockwise from east in ENU)."""
    return 0.0, 0.0, math.sin(yaw_rad / 2.0), math.cos(yaw_rad / 2.0)


def rpy_quaternion(roll_rad: float, pitch_rad: float, yaw_rad: float) -> Quaternion:
    """Fixed-axis roll, pitch, yaw (REP 103), as tf2's setRPY."""
    cr, sr = math.cos(roll_rad / 2), math.sin(roll_rad / 2)
    cp, sp = math.cos(pitch_rad / 2), math.sin(pitch_rad / 2)
    cy, sy = math.cos(yaw_rad / 2), math.sin(yaw_rad / 2)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


def quaternion_yaw(q: Quaternion) -> float:
    x, y, z, w = q
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _normalised(q: Quaternion) -> Quaternion:
    norm = math.sqrt(sum(c * c for c in q))
    if not math.isfinite(norm) or norm < 1e-9:
        raise ValueError(f"rotation {q!r} is not a quaternion (norm {norm})")
    return tuple(float(c) / norm for c in q)  # type: ignore[return-value]


def _multiply(a: Quaternion, b: Quaternion) -> Quaternion:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def _rotate(q: Quaternion, v: Vector) -> Vector:
    x, y, z, w = q
    u = np.array([x, y, z])
    vec = np.asarray(v, dtype=float)
    out = 2.0 * np.dot(u, vec) * u + (w * w - np.dot(u, u)) * vec + 2.0 * w * np.cross(u, vec)
    return float(out[0]), float(out[1]), float(out[2])


@dataclass(frozen=True)
class Transform:
    """The pose of `child` in `parent`: a point p in child is rotation*p + translation in parent."""

    parent: str
    child: str
    translation: Vector = (0.0, 0.0, 0.0)
    rotation: Quaternion = IDENTITY
    stamp_ns: int = 0

    def __post_init__(self) -> None:
        if not self.parent or not self.child or self.parent == self.child:
            raise ValueError(f"a transform needs two different frame names, got {self.parent!r} -> {self.child!r}")
        if not all(math.isfinite(float(c)) for c in self.translation):
            raise ValueError(f"transform {self.parent} -> {self.child}: translation {self.translation!r} is not finite")
        object.__setattr__(self, "translation", tuple(float(c) for c in self.translation))
        object.__setattr__(self, "rotation", _normalised(self.rotation))

    def apply(self, point: Vector) -> Vector:
        rotated = _rotate(self.rotation, point)
        return tuple(r + t for r, t in zip(rotated, self.translation))  # type: ignore[return-value]

    def then(self, other: Transform) -> Transform:
        """parent->child followed by child->other.child: parent->other.child."""
        if other.parent != self.child:
            raise ValueError(f"cannot chain {self.parent}->{self.child} with {other.parent}->{other.child}")
        return Transform(self.parent, other.child, self.apply(other.translation),
                         _multiply(self.rotation, other.rotation), max(self.stamp_ns, other.stamp_ns))

    def inverse(self) -> Transform:
        x, y, z, w = self.rotation
        conjugate = (-x, -y, -z, w)
        moved = _rotate(conjugate, self.translation)
        return Transform(self.child, self.parent, (-moved[0], -moved[1], -moved[2]), conjugate, self.stamp_ns)

    @property
    def yaw(self) -> float:
        return quaternion_yaw(self.rotation)


class TransformTree:
    """The newest transform of each child frame (a frame has one parent, as in tf2) and lookups
    along the tree. A child that changes its parent is refused: two sources disagree on the tree."""

    def __init__(self) -> None:
        self._by_child: dict[str, Transform] = {}

    def set(self, transform: Transform) -> None:
        known = self._by_child.get(transform.child)
        if known is not None and known.parent != transform.parent:
            raise ValueError(f"frame {transform.child!r} already has parent {known.parent!r}, "
                             f"refused a second parent {transform.parent!r}")
        if known is None or transform.stamp_ns >= known.stamp_ns:
            self._by_child[transform.child] = transform

    def frames(self) -> set[str]:
        return set(self._by_child) | {t.parent for t in self._by_child.values()}

    def _to_root(self, frame: str) -> list[Transform]:
        chain: list[Transform] = []
        seen = {frame}
        while frame in self._by_child:
            step = self._by_child[frame]
            chain.append(step)
            frame = step.parent
            if frame in seen:
                raise ValueError(f"the frames form a loop through {frame!r}")
            seen.add(frame)
        return chain

    def lookup(self, target: str, source: str) -> Transform:
        """The pose of `source` in `target` (tf2's lookupTransform(target, source))."""
        if target == source:
            raise ValueError(f"lookup of {target!r} in itself: nothing to transform")
        up_source, up_target = self._to_root(source), self._to_root(target)
        root_s = up_source[-1].parent if up_source else source
        root_t = up_target[-1].parent if up_target else target
        if root_s != root_t:
            raise LookupError(f"no chain from {target!r} to {source!r}: they are in unconnected trees "
                              f"(known frames: {', '.join(sorted(self.frames())) or 'none'})")
        # root -> target and root -> source, then target -> source = inverse(root->target) then root->source
        root_to_source = _chain_from_root(root_s, up_source)
        root_to_target = _chain_from_root(root_t, up_target)
        if root_to_target is None:
            return root_to_source  # type: ignore[return-value]
        if root_to_source is None:
            return root_to_target.inverse()
        return root_to_target.inverse().then(root_to_source)


def _chain_from_root(root: str, up: list[Transform]):
    """The composed transform root -> the first frame of `up` (a child-to-root list), or None for
    the root itself."""
    if not up:
        return None
    composed = up[-1]
    for step in reversed(up[:-1]):
        composed = composed.then(step)
    return composed
