"""A thin link to a running AirSim: only the calls the stack uses, with NumPy images and a small
kinematics record instead of the client library's msgpack structs.

The client library (`airsim`, or the maintained fork's `cosysairsim`, which installs cleanly) is
imported when a link is made, so the rest of the stack imports without it. Both speak AirSim's
msgpack-rpc; the calls used here have the same names and arguments in both.

Every RPC that can move the vehicle, the hover included, leaves through one method, `_move`: it
asks the motion door's `motion_allowed()` and puts the request on the wire under `motion_lock`,
the lock every connection of one vehicle link shares, so a request of a call a hold superseded
is never written after that hold's hover (core/vehicles/motion_door.py says why).
"""
from __future__ import annotations

import asyncio
import importlib
import io
import math
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Optional

import numpy as np
from PIL import Image

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.errors import AirSimError, MotionRefused
from cityseeker_ros.core.vehicles.airsim.frames import Quaternion, yaw_from_quat
from cityseeker_ros.core.vehicles.motion_door import MotionDropped, motion_allowed

CLIENTS = ("airsim", "cosysairsim")  # "auto" tries them in this order
DEFAULT_PORT = 41451  # AirSim's ApiServerPort
SCENE, DEPTH_PERSPECTIVE = 0, 2  # ImageType values, the same in both libraries
WRITE_TIMEOUT_S = 0.5  # a motion request not on the wire by then is dropped: a hover waits behind no longer


def load_client_module(client: str = "auto") -> ModuleType:
    """The AirSim client library by name; 'auto' takes whichever is installed."""
    names = CLIENTS if client == "auto" else (client,)
    if client != "auto" and client not in CLIENTS:
        raise ConfigError(f"airsim client must be one of auto, {', '.join(CLIENTS)}; got {client!r}")
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ConfigError(f"AirSim client library {' or '.join(names)} is not installed: "
                      "pip install 'cityseeker_ros[airsim]' (installs cosysairsim)")


@dataclass(frozen=True)
class Kinematics:
    """Where the vehicle is, in the stack's terms: geographic, ROS ENU, compass."""

    lat: float
    lon: float
    alt: float
    position_enu: tuple[float, float, float]  # metres east, north, up of the anchor
    velocity_enu: tuple[float, float, float]  # m/s; zeros when read from a bare pose
    orientation_enu: Quaternion  # FLU body in ENU world (REP 103)
    heading_deg: float  # compass, degrees clockwise from true north
    timestamp_s: float  # simulator clock when AirSim gives one, else this machine's


@dataclass(frozen=True)
class CameraFrame:
    rgb: np.ndarray  # (H, W, 3) uint8, RGB order
    depth_m: np.ndarray | None  # (H, W) float32 metres along the ray (DepthPerspective), if asked
    timestamp_s: float


def decode_scene(response: Any, raw_channel_order: str = "bgr") -> np.ndarray:
    """An ImageResponse for a Scene image -> (H, W, 3) RGB uint8.

    Compressed responses are PNG files (true RGB). Uncompressed ones are raw rows whose channel
    order depends on AirSim's renderer: BGR (DirectX/OpenGL), RGB under Vulkan; old builds send a
    fourth (alpha) byte."""
    data = response.image_data_uint8
    if not isinstance(data, (bytes, bytearray)) or len(data) == 0:
        raise AirSimError(f"AirSim sent no image data for camera {getattr(response, 'camera_name', '?')!r}: "
                          f"{getattr(response, 'message', '') or 'empty response'}")
    if response.compress:
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    h, w = int(response.height), int(response.width)
    channels = len(data) // max(h * w, 1)
    if channels not in (3, 4) or h * w * channels != len(data):
        raise AirSimError(f"uncompressed image of {len(data)} bytes does not fit {w}x{h} pixels")
    pixels = np.frombuffer(data, dtype=np.uint8).reshape(h, w, channels)[..., :3]
    return np.ascontiguousarray(pixels[..., ::-1] if raw_channel_order == "bgr" else pixels)


def decode_depth(response: Any) -> np.ndarray:
    h, w = int(response.height), int(response.width)
    return np.asarray(response.image_data_float, dtype=np.float32).reshape(h, w)


def _vec(v: Any) -> tuple[float, float, float]:
    return float(v.x_val), float(v.y_val), float(v.z_val)


def _quat(q: Any) -> Quaternion:
    return Quaternion(float(q.w_val), float(q.x_val), float(q.y_val), float(q.z_val))


class AirSimLink:
    """One msgpack-rpc connection to AirSim. Positions and yaws given to it are in AirSim's map NED
    frame; the anchor and motion modes do the geography."""

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, client: str = "auto",
                 vehicle: str = "", timeout_s: float = 600.0, connect_timeout_s: float = 5.0,
                 raw_channel_order: str = "bgr") -> None:
        if raw_channel_order not in ("bgr", "rgb"):
            raise ConfigError(f"airsim raw_channel_order must be 'bgr' or 'rgb'; got {raw_channel_order!r}")
        self.host, self.port, self.vehicle = host, int(port), vehicle
        self.timeout_s, self.connect_timeout_s = float(timeout_s), float(connect_timeout_s)
        self.raw_channel_order = raw_channel_order
        self.lib = load_client_module(client)
        self._client: Any = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None  # the event loop the client runs on
        self.refuse_motion = False  # True on the view source's camera link: nothing that moves the vehicle passes
        # Held while a motion request is checked and written; AirSimVehicleLink gives all its connections one.
        self.motion_lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self) -> AirSimLink:
        """Open the connection and ping; a quick TCP probe first, because the client library would
        otherwise wait out its whole RPC timeout on an unreachable host."""
        try:
            socket.create_connection((self.host, self.port), timeout=self.connect_timeout_s).close()
        except OSError as exc:
            raise AirSimError(f"cannot reach AirSim at {self.address}: {exc}; is the simulator running "
                              "with its API server on that port (settings.json ApiServerPort)?") from None
        self._loop = _thread_loop_for_a_client()
        self._client = self.lib.MultirotorClient(ip=self.host, port=self.port, timeout_value=self.timeout_s)
        if not self.ping():
            raise AirSimError(f"AirSim at {self.address} answered ping with false")
        return self

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.client.close()
            finally:
                self._client = None
                _release_loop(self._loop)
                self._loop = None

    def __enter__(self) -> AirSimLink:
        return self.connect() if self._client is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Every call goes through here so a failure names the call and the address."""
        if self._client is None:
            raise AirSimError(f"AirSim link to {self.address} is not connected; call connect() first")
        try:
            result = getattr(self._client, method)(*args, **kwargs)
            return result.get() if method.endswith("Async") else result  # get() waits and raises
        except Exception as exc:  # msgpackrpc raises RPCError/TransportError, not our types
            raise AirSimError(f"AirSim {method} at {self.address} failed: {exc!r}") from exc

    def _move(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """The one sender of every RPC that can move the vehicle (hover included), then its answer.

        `motion_allowed()` is asked right before the request is written, both under `motion_lock`,
        which the hover takes too: a call whose job a hold superseded is refused (MotionDropped), or
        was on the wire before that hold's hover. Only the write is locked, never the wait for the
        answer (a move answers when the vehicle arrives). A camera-only link refuses every one."""
        if self.refuse_motion:
            raise MotionRefused(f"AirSim {method} refused: this link only poses the camera; only the vehicle "
                                "bridge moves the vehicle")
        with self.motion_lock:
            if not motion_allowed():
                raise MotionDropped(f"AirSim {method} not sent: a hold or a newer job came after its call was admitted")
            pending = self._request(method, *args, **kwargs)
        return self._answer(method, pending)

    def _request(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Write one request and return its pending answer (a msgpack-rpc future) without waiting
        for it. `...Async` methods go through the client library; any other name is sent as it
        travels on the wire, with its wire arguments in order (the library's own would wait)."""
        if self._client is None:
            raise AirSimError(f"AirSim link to {self.address} is not connected; call connect() first")
        if kwargs and not method.endswith("Async"):
            raise TypeError(f"AirSim {method} is sent with its wire arguments in order, not by keyword")
        try:
            if method.endswith("Async"):
                pending = getattr(self._client, method)(*args, **kwargs)
            else:
                pending = self._client.client.call_async(method, *args)
            _written(pending, WRITE_TIMEOUT_S)
        except Exception as exc:  # msgpackrpc raises RPCError/TransportError, asyncio its own
            raise AirSimError(f"AirSim {method} at {self.address} failed: {exc!r}") from exc
        return pending

    def _answer(self, method: str, pending: Any) -> Any:
        try:
            return pending.get()  # waits and raises
        except Exception as exc:
            raise AirSimError(f"AirSim {method} at {self.address} failed: {exc!r}") from exc

    def ping(self) -> bool:
        return bool(self._call("ping"))

    # -- sensing -------------------------------------------------------------------------------

    def grab(self, camera: str, depth: bool = False, compress: bool = True) -> CameraFrame:
        """One Scene image (and DepthPerspective from the same call when asked)."""
        requests = [self.lib.ImageRequest(camera, SCENE, False, compress)]
        if depth:
            requests.append(self.lib.ImageRequest(camera, DEPTH_PERSPECTIVE, True, False))
        responses = self._call("simGetImages", requests, vehicle_name=self.vehicle)
        if len(responses) != len(requests):
            raise AirSimError(f"AirSim simGetImages at {self.address} returned {len(responses)} images "
                              f"for {len(requests)} requests (is camera {camera!r} defined?)")
        stamp = int(getattr(responses[0], "time_stamp", 0) or 0)
        return CameraFrame(rgb=decode_scene(responses[0], self.raw_channel_order),
                           depth_m=decode_depth(responses[1]) if depth else None,
                           timestamp_s=stamp * 1e-9 if stamp else time.time())

    def pose_ned(self) -> tuple[np.ndarray, float]:
        """Current map-NED position and AirSim yaw (radians), from simGetVehiclePose."""
        pose = self._call("simGetVehiclePose", vehicle_name=self.vehicle)
        return np.array(_vec(pose.position)), yaw_from_quat(_quat(pose.orientation))

    def kinematics(self, anchor: Anchor, from_pose: bool = False) -> Kinematics:
        """State of a multirotor (getMultirotorState), or of any vehicle from its bare pose."""
        if from_pose:
            pose = self._call("simGetVehiclePose", vehicle_name=self.vehicle)
            position, orientation, velocity, stamp = pose.position, pose.orientation, None, 0
        else:
            state = self._call("getMultirotorState", vehicle_name=self.vehicle)
            k = state.kinematics_estimated
            position, orientation, velocity = k.position, k.orientation, k.linear_velocity
            stamp = int(state.timestamp or 0)
        xyz, q = _vec(position), _quat(orientation)
        lat, lon, alt = anchor.airsim_to_geo(*xyz)
        v_enu = anchor.airsim_to_enu(_vec(velocity)) if velocity is not None else np.zeros(3)
        return Kinematics(lat=lat, lon=lon, alt=alt,
                          position_enu=tuple(float(c) for c in anchor.airsim_to_enu(xyz)),
                          velocity_enu=tuple(float(c) for c in v_enu),
                          orientation_enu=anchor.airsim_quat_to_enu(q),
                          heading_deg=anchor.yaw_to_heading(yaw_from_quat(q)),
                          timestamp_s=stamp * 1e-9 if stamp else time.time())

    # -- motion (map NED metres, AirSim yaw radians) ---------------------------------------------

    def set_pose(self, xyz_ned, yaw_rad: float, ignore_collision: bool = True) -> None:
        """Teleport: reproducible, no dynamics."""
        x, y, z = (float(c) for c in xyz_ned)
        half = float(yaw_rad) / 2.0
        pose = self.lib.Pose(self.lib.Vector3r(x, y, z),
                             self.lib.Quaternionr(w_val=math.cos(half), x_val=0.0, y_val=0.0, z_val=math.sin(half)))
        self._move("simSetVehiclePose", pose, bool(ignore_collision), self.vehicle)

    def take_control(self) -> None:
        """API control and armed motors, which moveTo*/rotate* need on a multirotor."""
        self._move("enableApiControl", True, self.vehicle)
        self._move("armDisarm", True, self.vehicle)

    def move_to(self, xyz_ned, speed_mps: float, timeout_s: float) -> None:
        """Fly to a map-NED point at up to speed_mps, holding the current yaw (blocks until done)."""
        x, y, z = (float(c) for c in xyz_ned)
        self._move("moveToPositionAsync", x, y, z, float(speed_mps), timeout_sec=float(timeout_s),
                   vehicle_name=self.vehicle)

    def rotate_at_rate(self, rate_dps: float, duration_s: float) -> None:
        self._move("rotateByYawRateAsync", float(rate_dps), float(duration_s), vehicle_name=self.vehicle)

    def rotate_to(self, yaw_rad: float, timeout_s: float, margin_deg: float) -> None:
        """Closed-loop yaw to an absolute AirSim yaw (the library takes degrees)."""
        self._move("rotateToYawAsync", math.degrees(yaw_rad), timeout_sec=float(timeout_s),
                   margin=float(margin_deg), vehicle_name=self.vehicle)


# The client library runs each connection on the event loop of the thread that made it, and tornado
# keeps every such loop in a class-level map for ever: a process that makes connections on many
# threads (an e-stop's, each test's bridge) ran out of descriptors. A loop is closed when the last
# connection made on it closes, and a thread that connects again gets a new one.
_LOOP_USERS: Counter = Counter()
_LOOPS_LOCK = threading.Lock()


def _thread_loop_for_a_client() -> asyncio.AbstractEventLoop:
    """This thread's event loop, open (a loop closed with this thread's last connection is replaced),
    counted as used by one more connection."""
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # a thread that never had one
        loop = None
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
    with _LOOPS_LOCK:
        _LOOP_USERS[loop] += 1
    return loop


def _release_loop(loop: Optional[asyncio.AbstractEventLoop]) -> None:
    """One connection made on `loop` closed: close the loop (and tornado's wrapper of it, with its
    descriptors) when it was the last; a loop running a call now is left to its thread."""
    if loop is None:
        return
    with _LOOPS_LOCK:
        _LOOP_USERS[loop] -= 1
        if _LOOP_USERS[loop] > 0:
            return
        del _LOOP_USERS[loop]
    if loop.is_running() or loop.is_closed():
        return
    try:
        from tornado.ioloop import IOLoop

        wrapper = IOLoop._ioloop_for_asyncio.get(loop)
    except ImportError:  # a client library without tornado
        wrapper = None
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]  # writes on the closed streams
        for task in pending:
            task.cancel()
        if pending:  # no connection uses the loop now: it may run here, to let them end
            ended = asyncio.gather(*pending, return_exceptions=True)
            for _ in range(50):  # the library's answers stop the loop: each stop ends one run
                if ended.done():
                    break
                try:
                    loop.run_until_complete(ended)
                except RuntimeError:
                    if loop.is_running():
                        raise
        if wrapper is not None:
            wrapper.close(all_fds=True)
        else:
            loop.close()
    except RuntimeError:  # running on its thread meanwhile: that thread keeps it
        pass


def _written(pending: Any, timeout_s: float) -> None:
    """Return once `pending`'s request is on the socket. rpc_msgpack (cosysairsim's transport)
    writes from an asyncio task that runs only while the thread's loop runs, so it is run until the
    write is done; msgpack-rpc-python (airsim's) wrote it before returning the future."""
    task = getattr(pending, "task", None)
    if not isinstance(task, asyncio.Future):
        return
    deadline = time.monotonic() + timeout_s
    while not task.done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            task.cancel()
            raise AirSimError(f"request not written within {timeout_s:g} s")
        try:
            task.get_loop().run_until_complete(asyncio.wait([task], timeout=remaining))
        except RuntimeError:  # an answer that came meanwhile stopped the loop: run it again
            continue
    task.result()  # the write's own error, if it failed
