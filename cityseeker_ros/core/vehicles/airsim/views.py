"""The "look around" view set from AirSim: the CAMERA turns to each walkable heading, never the
vehicle, and is put back on its mount afterwards.

Only the bridge may move the vehicle, through its safety gate and motion door: a
view source that set the vehicle's pose to look around would ignore every hold and e-stop, and
would yaw a flying drone. So the camera is posed with simSetCameraPose, which AirSim applies
relative to the vehicle body: the vehicle pose is read once per view set and each heading becomes
a camera orientation relative to it. The view source's link refuses every motion call, so even a
mistaken one from here raises instead of reaching the vehicle.

Registered as view source "airsim". The AirSim client library is loaded only when a source is
made, so listing sources never needs it installed.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.views.source import VIEW_SOURCES, ViewSource
from cityseeker_ros.core.streets.graph import Node
from cityseeker_ros.core.tasks.episode import World
from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.client import AirSimLink, _quat, _vec
from cityseeker_ros.core.vehicles.airsim.frames import (
    Quaternion,
    quat_from_yaw,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    yaw_from_quat,
)


@dataclass(frozen=True)
class CameraPose:
    """A camera pose relative to the vehicle body (FRD metres, FRD-in-body attitude): what
    simSetCameraPose takes."""

    position: tuple[float, float, float]
    orientation: Quaternion


def _conj(q: Quaternion) -> Quaternion:
    return Quaternion(q.w, -q.x, -q.y, -q.z)


def camera_pose_for(heading_yaw: float, vehicle_position: Sequence[float], vehicle_q: Quaternion,
                    mount: CameraPose, at: Optional[Sequence[float]] = None) -> CameraPose:
    """The body-relative camera pose that looks along AirSim yaw `heading_yaw` (map NED radians).

    The camera keeps its mount's pitch and roll against the horizon and turns about the world's
    vertical: its world attitude is yaw(heading) * yaw(-mount yaw) * mount, expressed in the body
    (conj(vehicle) * world). For a level vehicle this is a pure yaw of heading minus the body
    yaw. `at` (map NED) moves the camera there, else it stays at its mount position."""
    level_mount = quat_multiply(quat_from_yaw(-yaw_from_quat(mount.orientation)), mount.orientation)
    world = quat_multiply(quat_from_yaw(heading_yaw), level_mount)
    relative = quat_normalize(quat_multiply(_conj(vehicle_q), world))
    if at is None:
        position = mount.position
    else:  # world offset -> body frame: R(vehicle)^T (at - vehicle)
        offset = quat_to_matrix(vehicle_q).T @ (np.asarray(at, float) - np.asarray(vehicle_position, float))
        position = tuple(float(c) for c in offset)
    return CameraPose(position, relative)


class CameraLink(AirSimLink):
    """AirSimLink plus the camera-pose calls; no call that moves the vehicle passes it
    (AirSimLink._move refuses with MotionRefused)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refuse_motion = True

    def vehicle_pose(self) -> tuple[np.ndarray, Quaternion]:
        """Map-NED position and FRD-in-NED attitude, from simGetVehiclePose (every SimMode)."""
        pose = self._call("simGetVehiclePose", vehicle_name=self.vehicle)
        return np.array(_vec(pose.position)), _quat(pose.orientation)

    def camera_world_pose(self, camera: str) -> tuple[np.ndarray, Quaternion]:
        """The camera's map-NED position and attitude (simGetCameraInfo reports them in the world)."""
        info = self._call("simGetCameraInfo", str(camera), vehicle_name=self.vehicle)
        return np.array(_vec(info.pose.position)), _quat(info.pose.orientation)

    def set_camera_pose(self, camera: str, pose: CameraPose) -> None:
        """simSetCameraPose(camera_name, pose, vehicle_name): relative to the vehicle body. The
        same in `airsim` 1.8 (which adds external=False) and `cosysairsim` 3.5."""
        q = pose.orientation
        self._call("simSetCameraPose", str(camera),
                   self.lib.Pose(self.lib.Vector3r(*pose.position),
                                 self.lib.Quaternionr(w_val=q.w, x_val=q.x, y_val=q.y, z_val=q.z)),
                   vehicle_name=self.vehicle)


@VIEW_SOURCES.register("airsim")
class AirSimViewSource(ViewSource):
    """Views from a live AirSim camera. `anchor` places the AirSim origin on the Earth (see
    Anchor.from_config); `altitude_m` is the eye height above it for views at a graph node."""

    name = "airsim"
    synthetic = True  # Unreal-rendered, not street-view photographs

    def __init__(self, world: World, anchor: Mapping[str, Any] | None = None, host: str = "127.0.0.1",
                 port: int = 41451, client: str = "auto", vehicle: str = "", camera: str = "front",
                 altitude_m: float = 2.5, settle_s: float = 0.05, compress: bool = True,
                 raw_channel_order: str = "bgr", timeout_s: float = 600.0, **moved: Any) -> None:
        if moved.keys() & {"motion", "motion_params"}:
            raise ConfigError("view source 'airsim': parameters 'motion'/'motion_params' are gone: the view source "
                              "turns the camera and never moves the vehicle (only airsim_bridge does, behind its "
                              "safety gate)")
        if moved:
            raise ConfigError(f"view source 'airsim': bad parameters: unknown {', '.join(sorted(moved))}")
        if anchor is None:
            raise ConfigError("view source 'airsim' needs anchor={\"lat\": ..., \"lon\": ..., \"alt\": ...} "
                              "(the geographic position of the AirSim origin)")
        for field, value in (("settle_s", settle_s), ("altitude_m", altitude_m)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ConfigError(f"view source 'airsim': '{field}' must be a number >= 0; got {value!r}")
        self.anchor = Anchor.from_config(anchor)
        self.camera, self.compress, self.settle_s = str(camera), bool(compress), float(settle_s)
        self.altitude_m = float(altitude_m)  # eye height above the AirSim origin, for views at a node
        self.link = CameraLink(host, port, client=client, vehicle=vehicle, timeout_s=timeout_s,
                               raw_channel_order=raw_channel_order).connect()
        self._mount: Optional[CameraPose] = None
        self._describe = {"name": self.name, "synthetic": True, "client": self.link.lib.__name__,
                          "camera": self.camera, "anchor": asdict(self.anchor), "altitude_m": self.altitude_m,
                          "moves": "camera"}

    def mount(self) -> CameraPose:
        """The camera's own pose on the vehicle, read once (before this source ever turned it), so
        a view set that failed half-way cannot make a turned pose the one restored."""
        if self._mount is None:
            cam_xyz, cam_q = self.link.camera_world_pose(self.camera)
            xyz, q = self.link.vehicle_pose()
            self._mount = CameraPose(tuple(float(c) for c in quat_to_matrix(q).T @ (cam_xyz - xyz)),
                                     quat_normalize(quat_multiply(_conj(q), cam_q)))
        return self._mount

    def images(self, node: Node, headings: Sequence[float]) -> list[np.ndarray]:
        """The views from the node's position at eye height: the camera is placed there (relative
        to wherever the vehicle is) and turned; the vehicle does not move."""
        at = self.anchor.geo_to_airsim(node.lat, node.lon, self.anchor.alt + self.altitude_m)
        return self._look(headings, at)

    def images_here(self, headings: Sequence[float]) -> list[np.ndarray]:
        """The views from the vehicle's own camera mount: what a live vehicle sees where it is."""
        return self._look(headings, None)

    def _look(self, headings: Sequence[float], at: Optional[Sequence[float]]) -> list[np.ndarray]:
        if not headings:
            return []
        mount = self.mount()
        xyz, q = self.link.vehicle_pose()  # once per view set: the vehicle holds still meanwhile
        views = []
        try:
            for heading in headings:
                yaw = self.anchor.heading_to_yaw(float(heading))
                self.link.set_camera_pose(self.camera, camera_pose_for(yaw, xyz, q, mount, at))
                if self.settle_s:
                    time.sleep(self.settle_s)  # let the renderer draw a frame at the new pose
                views.append(self.link.grab(self.camera, compress=self.compress).rgb)
        finally:
            self.link.set_camera_pose(self.camera, mount)
        return views

    def describe(self) -> dict[str, Any]:
        return dict(self._describe)

    def close(self) -> None:
        self.link.close()

