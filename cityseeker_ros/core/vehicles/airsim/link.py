"""An AirSim vehicle as a `VehicleLink` (registered as "airsim"), to run behind the generic bridge
(core/vehicles/bridge.py), which decides whether anything moves; this only translates.

Motion modes as before: `teleport` (simSetVehiclePose) or `fly` (moveToPosition + rate-limited yaw;
velocity in slices of `velocity_period_s`). AirSim's msgpack-rpc client runs its event loop in the
thread that made it and fails in any other, and a blocking move answers only when the vehicle
arrives; so every thread gets connections of its own, one per role ("motion": go_to and velocity,
long RPC timeout; "control": hold, state, images), made on the thread's first call after each
`connect()`. A hold therefore never waits behind a move or an image grab. Every hover goes out on
one thread of the link's own, whose connection `connect()` makes: a hold asked on any thread (an
e-stop's, an operator's) neither waits for a connection to be made nor leaves one behind.

All those connections share one `motion_lock`: each RPC that can move the vehicle, the hold's
hover included, is checked against the motion door (`motion_allowed()`) and written under it
(`AirSimLink._move`), so a goal a hold superseded sends nothing after the hover, not even the next
RPC of its sequence (take control, moveToPosition, rotateByYawRate, rotateToYaw).
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.client import AirSimLink, CameraFrame, Kinematics
from cityseeker_ros.core.vehicles.airsim.errors import AirSimError
from cityseeker_ros.core.vehicles.airsim.frames import enu_to_ned
from cityseeker_ros.core.vehicles.airsim.motion import MOTION_MODES, FlyMotion, GeoPose, MotionMode, make_motion_mode
from cityseeker_ros.core.vehicles.link import LINKS, Capabilities, ConnectReport, LinkError, VehicleLink, VehicleState
from cityseeker_ros.core.vehicles.safety.commands import Velocity


class BridgeLink(AirSimLink):
    """AirSimLink plus the multirotor calls only the vehicle link needs (hover, velocity)."""

    def hover(self) -> None:
        """Hold position; AirSim cancels the vehicle's running task (moveTo*, rotate*) first. Sent
        like every motion RPC (a hold runs outside any door call, so nothing refuses it)."""
        self._move("hoverAsync", vehicle_name=self.vehicle)

    def move_by_velocity(self, v_ned, duration_s: float, yaw_rate_dps: float = 0.0) -> None:
        """Map-NED velocity for duration_s (blocks that long); yaw rate clockwise-positive (NED)."""
        vx, vy, vz = (float(c) for c in v_ned)
        self._move("moveByVelocityAsync", vx, vy, vz, float(duration_s),
                   self.lib.DrivetrainType.MaxDegreeOfFreedom,
                   self.lib.YawMode(is_rate=True, yaw_or_rate=float(yaw_rate_dps)), vehicle_name=self.vehicle)


def enu_velocity_to_airsim(anchor: Anchor, velocity: Velocity) -> tuple[np.ndarray, float]:
    """ROS ENU velocity (REP 103, yaw rate counter-clockwise) -> AirSim map NED velocity and
    AirSim yaw rate (degrees/s, clockwise): the inverse of Anchor.airsim_to_enu."""
    ned_true = enu_to_ned([velocity.east_m_s, velocity.north_m_s, velocity.up_m_s])
    c, s = math.cos(math.radians(anchor.yaw_offset_deg)), math.sin(math.radians(anchor.yaw_offset_deg))
    rotation = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])  # true NED -> map NED
    return rotation @ ned_true, -float(velocity.yaw_rate_deg_s)


ConnectionFactory = Callable[[str], BridgeLink]  # role "control" or "motion" -> a connected BridgeLink


class AirSimVehicleLink(VehicleLink):
    name = "airsim"
    velocity_blocks = True  # a velocity call lasts one slice: the bridge re-sends it at once

    def __init__(self, anchor: Anchor, connection_factory: ConnectionFactory, motion: str = "teleport",
                 motion_params: Optional[Mapping[str, Any]] = None, velocity_period_s: float = 0.5,
                 state_from_pose: bool = False) -> None:
        MOTION_MODES.get(motion)  # an unknown mode fails now, listing the known ones
        self.anchor, self.factory = anchor, connection_factory
        self.motion, self.motion_params = motion, dict(motion_params or {})
        self.velocity_period_s, self.state_from_pose = float(velocity_period_s), bool(state_from_pose)
        self._generation = 0
        self._local = threading.local()
        self._all: list[BridgeLink] = []
        self._lock = threading.Lock()
        self._motion_lock = threading.Lock()  # every connection's motion_lock: a check and a write at a time
        self._failed: Optional[str] = None
        self._holder: Optional[ThreadPoolExecutor] = None  # the one thread that sends hovers
        self.hold_timeout_s = 2.0
        self.kinematics: Optional[Kinematics] = None  # the last state read, in AirSim's terms

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(arm=self.motion == "fly", go_to=True, velocity=self.motion == "fly", hold=True)

    # -- connections, one per thread and role --------------------------------------------------

    def _conn(self, role: str) -> BridgeLink:
        made = getattr(self._local, "conns", None)
        if made is None:
            made = self._local.conns = {}
        entry = made.get(role)
        if entry is not None and entry[0] == self._generation:
            return entry[1]
        if entry is not None:
            _quietly_close(entry[1])
        generation = self._generation
        try:
            conn = self.factory(role)
        except AirSimError as exc:
            self._failed = str(exc)
            raise
        conn.motion_lock = self._motion_lock
        made[role] = (generation, conn)
        made.pop(f"{role}:mode", None)
        with self._lock:
            self._all.append(conn)
        return conn

    def _mode(self) -> MotionMode:
        conn = self._conn("motion")
        made = self._local.conns
        entry = made.get("motion:mode")
        if entry is None or entry[0] is not conn:
            entry = (conn, make_motion_mode(self.motion, conn, self.anchor, **self.motion_params))
            made["motion:mode"] = entry
        return entry[1]

    def _guard(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except AirSimError as exc:
            self._failed = str(exc)
            raise

    def connect(self, timeout_s: float = 3.0) -> ConnectReport:
        started = time.monotonic()
        with self._lock:
            self._generation += 1
            self._failed = None
        conn = self._conn("control")
        with self._lock:
            if self._holder is None:
                self._holder = ThreadPoolExecutor(1, thread_name_prefix="airsim-hold")
            holder = self._holder
        self._on_holder(holder, lambda: self._conn("control"), timeout_s)  # its connection, made now
        return ConnectReport(endpoint=conn.address, autopilot="airsim", system_id=0, component_id=0,
                             vehicle_type=conn.vehicle or "default", heartbeats=0, heard=(), protocol=0,
                             elapsed_s=time.monotonic() - started)

    def close(self) -> None:
        with self._lock:
            self._generation += 1
            conns, self._all = self._all, []
            holder, self._holder = self._holder, None
        for conn in conns:
            _quietly_close(conn)
        if holder is not None:
            holder.shutdown(wait=False)

    def _on_holder(self, holder: ThreadPoolExecutor, call: Callable[[], Any], timeout_s: float) -> Any:
        try:
            return holder.submit(call).result(timeout=timeout_s)
        except FutureTimeout:
            self._failed = f"no answer within {timeout_s:g} s on the hold connection"
            raise LinkError(f"AirSim: {self._failed}") from None
        except RuntimeError as exc:  # shut down by close() meanwhile
            raise LinkError(f"AirSim link closed: {exc}") from None

    @property
    def link_lost(self) -> bool:
        return self._failed is not None

    # -- state and images -----------------------------------------------------------------------

    def state(self) -> VehicleState:
        k = self._guard(lambda: self._conn("control").kinematics(self.anchor, from_pose=self.state_from_pose))
        self.kinematics = k
        return VehicleState(lat=k.lat, lon=k.lon, alt_m=k.alt - self.anchor.alt, heading_deg=k.heading_deg,
                            roll_deg=None, pitch_deg=None, yaw_deg=(90.0 - k.heading_deg) % 360.0,
                            velocity_enu=k.velocity_enu, armed=True, mode=self.motion, in_control=True,
                            battery_fraction=None, autopilot_time_s=k.timestamp_s, heartbeat_age_s=0.0,
                            link_lost=False)

    def grab(self, camera: str, depth: bool = False) -> CameraFrame:
        """One camera frame on this thread's control connection (never the safety thread's)."""
        return self._conn("control").grab(camera, depth=depth)

    # -- motion (called by the generic bridge only, through its door) ------------------------------

    def flown_altitude_m(self, alt_m: float) -> float:
        fixed = self.motion_params.get("altitude_m")
        return alt_m if fixed is None else float(fixed)

    def arm(self) -> None:
        self._guard(lambda: self._conn("motion").take_control())

    def takeoff(self, alt_m: Optional[float] = None, timeout_s: float = 30.0) -> None:
        raise LinkError("the airsim link has no takeoff: fly mode climbs to each goal's altitude")

    def go_to(self, lat: float, lon: float, alt_m: float, heading_deg: Optional[float] = None,
              speed_m_s: Optional[float] = None) -> None:
        def fly() -> None:
            mode = self._mode()
            heading = heading_deg
            if heading is None:  # keep facing where the vehicle faces now
                heading = self.anchor.yaw_to_heading(mode.link.pose_ned()[1])
            if isinstance(mode, FlyMotion) and speed_m_s is not None:
                mode.max_speed_mps = max(0.1, float(speed_m_s))
            mode.go_to(GeoPose(lat, lon, self.anchor.alt + alt_m, float(heading)))
        self._guard(fly)

    def velocity(self, east_m_s: float, north_m_s: float, up_m_s: float = 0.0,
                 yaw_rate_deg_s: float = 0.0) -> None:
        if self.motion != "fly":
            raise LinkError(f"velocity commands need motion mode 'fly' (this link runs '{self.motion}')")
        v_ned, yaw_rate = enu_velocity_to_airsim(self.anchor, Velocity(east_m_s, north_m_s, up_m_s, yaw_rate_deg_s))
        self._guard(lambda: self._conn("motion").move_by_velocity(v_ned, self.velocity_period_s, yaw_rate))

    def hold(self) -> None:
        """Hover (AirSim cancels the running task); a teleported vehicle has no task to stop."""
        if self.motion != "fly":
            return
        with self._lock:
            holder = self._holder
        if holder is None:
            raise LinkError("AirSim link not connected: call connect() first")
        self._on_holder(holder, lambda: self._guard(lambda: self._conn("control").hover()), self.hold_timeout_s)

    def land(self) -> None:
        raise LinkError("the airsim link has no land")

    def return_to_launch(self) -> None:
        raise LinkError("the airsim link has no return to launch")


def _quietly_close(conn: AirSimLink) -> None:
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - a connection of another thread may refuse to close here
        pass


@LINKS.register("airsim")
def make_airsim_link(**params: Any) -> VehicleLink:
    """`AirSimVehicleLink(**params)`: anchor (an Anchor or its mapping), connection_factory, motion..."""
    anchor = params.pop("anchor")
    if isinstance(anchor, Mapping):
        anchor = Anchor.from_config(anchor)
    return AirSimVehicleLink(anchor, **params)
