"""A protocol fake of AirSim's RPC server, not the simulator.

It speaks AirSim's real wire protocol (msgpack-rpc over TCP: request [0, msgid, method, params],
response [1, msgid, error, result]) with AirSim's method names and the exact field names of its
msgpack structs (Vector3r x_val.., Quaternionr w_val.., Pose, KinematicsState, MultirotorState,
ImageResponse, CameraInfo), so the real client library connects to it unmodified. Behind the
protocol there is only a vehicle pose that the motion calls update, and cameras mounted on it
(simSetCameraPose sets a camera's pose relative to the body, as AirSim does) that "see" their
own compass heading in the world.
"""
from __future__ import annotations

import io
import math
import socket
import threading
from collections import Counter
from typing import Any

import msgpack
import numpy as np
from PIL import Image

WIDTH, HEIGHT = 8, 6
MOUNT = {"position": {"x_val": 0.30, "y_val": 0.0, "z_val": 0.0},  # sim/airsim/settings.json's "front"
         "orientation": {"w_val": 1.0, "x_val": 0.0, "y_val": 0.0, "z_val": 0.0}}
# AirSim RPCs that move, pose or arm the vehicle (method names as they travel on the wire).
VEHICLE_CALLS = frozenset({"simSetVehiclePose", "enableApiControl", "armDisarm", "takeoff", "land", "goHome",
                           "hover", "cancelLastTask", "simSetKinematics", "simSetObjectPose"})


def moves_vehicle(method: str) -> bool:
    """Whether a call moves, poses or arms the vehicle: every move*/rotate* task and VEHICLE_CALLS."""
    return method in VEHICLE_CALLS or method.startswith(("move", "rotate"))


def vec(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> dict[str, float]:
    return {"x_val": float(x), "y_val": float(y), "z_val": float(z)}


def quat_yaw(yaw_rad: float) -> dict[str, float]:
    return {"w_val": math.cos(yaw_rad / 2), "x_val": 0.0, "y_val": 0.0, "z_val": math.sin(yaw_rad / 2)}


def yaw_of(q: dict[str, float]) -> float:
    w, x, y, z = q["w_val"], q["x_val"], q["y_val"], q["z_val"]
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def qmul(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """Hamilton product a * b of msgpack quaternions (the fake's own, not the package's frames.py)."""
    aw, ax, ay, az = a["w_val"], a["x_val"], a["y_val"], a["z_val"]
    bw, bx, by, bz = b["w_val"], b["x_val"], b["y_val"], b["z_val"]
    return {"w_val": aw * bw - ax * bx - ay * by - az * bz, "x_val": aw * bx + ax * bw + ay * bz - az * by,
            "y_val": aw * by - ax * bz + ay * bw + az * bx, "z_val": aw * bz + ax * by - ay * bx + az * bw}


def rotate(q: dict[str, float], v: dict[str, float]) -> dict[str, float]:
    """Vector v turned by q (q v q*)."""
    p = qmul(qmul(q, {"w_val": 0.0, **v}), {"w_val": q["w_val"], "x_val": -q["x_val"], "y_val": -q["y_val"],
                                           "z_val": -q["z_val"]})
    return vec(p["x_val"], p["y_val"], p["z_val"])


def camera_image(yaw_rad: float) -> np.ndarray:
    """RGB pixels that encode the heading in red (degrees / 2) and differ in every channel, so a
    red/blue swap cannot pass unnoticed."""
    img = np.zeros((HEIGHT, WIDTH, 3), np.uint8)
    img[..., 0] = round((math.degrees(yaw_rad) % 360.0) / 2.0) % 180
    img[..., 1] = np.arange(WIDTH, dtype=np.uint8)[None, :] * 20 + 30
    img[..., 2] = np.arange(HEIGHT, dtype=np.uint8)[:, None] * 10 + 200
    return img


class FakeAirSim:
    """Runs on 127.0.0.1 and a free port; `calls` records (method, params) in arrival order."""

    def __init__(self, raw_order: str = "bgr", channels: int = 3) -> None:
        self.raw_order, self.channels = raw_order, channels
        self.calls: list[tuple[str, list[Any]]] = []
        self.connections: list[list[str]] = []  # the methods each client connection sent, in order
        self.position = vec(0.0, 0.0, 0.0)
        self.orientation = quat_yaw(0.0)
        self.velocity = vec(0.0, 0.0, 0.0)
        self.cameras: dict[str, dict[str, Any]] = {}  # name -> pose relative to the body (MOUNT until set)
        self.shots: list[tuple[str, dict[str, Any]]] = []  # (camera, world pose) of each Scene image
        self.timestamp_ns = 1_700_000_000_123_456_789
        self.fail: set[str] = set()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()

    def methods(self) -> list[str]:
        return [name for name, _ in self.calls]

    def params(self, method: str) -> list[list[Any]]:
        return [p for name, p in self.calls if name == method]

    def vehicle_calls_on_links(self, sent: str, never: str = "") -> list[str]:
        """Vehicle calls (moves_vehicle) sent on each connection that sent `sent` and never `never`,
        e.g. the camera source's links in a run: they grab images and, unlike the bridge's control
        link, never read the multirotor state."""
        return [m for calls in list(self.connections) if sent in calls and never not in calls
                for m in calls if moves_vehicle(m)]

    def connection_summary(self) -> str:
        """How many calls of each method every connection sent, for assertion messages."""
        return " | ".join(str(dict(Counter(calls))) for calls in list(self.connections))

    def vehicle_calls(self) -> list[str]:
        """Every call so far that moved, posed or armed the vehicle (moves_vehicle), in order."""
        return [name for name in self.methods() if moves_vehicle(name)]

    # -- msgpack-rpc framing -------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        unpacker = msgpack.Unpacker(raw=False)
        sent: list[str] = []
        self.connections.append(sent)
        with conn:
            while not self._stop.is_set():
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                unpacker.feed(data)
                for message in unpacker:
                    if message[0] != 0:  # notifications need no answer
                        continue
                    _, msgid, method, params = message
                    sent.append(method)
                    error, result = self._dispatch(method, list(params))
                    try:
                        conn.sendall(msgpack.packb([1, msgid, error, result], use_bin_type=True))
                    except OSError:  # the client hung up while its call ran
                        return

    def _dispatch(self, method: str, params: list[Any]) -> tuple[Any, Any]:
        """One request, in the order it arrived on its connection: (error, result)."""
        self.calls.append((method, params))
        return self._handle(method, params)

    def _handle(self, method: str, params: list[Any]) -> tuple[Any, Any]:
        handler = getattr(self, f"rpc_{method}", None)
        if handler is None:
            return f"rpclib: server could not find function '{method}' with argument count {len(params)}.", None
        if method in self.fail:
            return f"{method} failed on purpose", None
        return None, handler(*params)

    # -- AirSim's methods (params as the client sends them) -------------------------------------

    def rpc_ping(self) -> bool:
        return True

    def rpc_enableApiControl(self, is_enabled: bool, vehicle_name: str) -> None:
        return None

    def rpc_armDisarm(self, arm: bool, vehicle_name: str) -> bool:
        return True

    def _pose(self) -> dict[str, Any]:
        return {"position": dict(self.position), "orientation": dict(self.orientation)}

    def rpc_simGetVehiclePose(self, vehicle_name: str) -> dict[str, Any]:
        return self._pose()

    def rpc_simSetVehiclePose(self, pose: dict[str, Any], ignore_collision: bool, vehicle_name: str) -> None:
        self.position, self.orientation = pose["position"], pose["orientation"]

    def rpc_getMultirotorState(self, vehicle_name: str) -> dict[str, Any]:
        kinematics = {**self._pose(), "linear_velocity": dict(self.velocity), "angular_velocity": vec(),
                      "linear_acceleration": vec(), "angular_acceleration": vec()}
        collision = {"has_collided": False, "normal": vec(), "impact_point": vec(), "position": vec(),
                     "penetration_depth": 0.0, "time_stamp": 0, "object_name": "", "object_id": -1}
        rc = {"timestamp": 0, "pitch": 0.0, "roll": 0.0, "throttle": 0.0, "yaw": 0.0, "left_z": 0.0,
              "right_z": 0.0, "switches": 0, "vendor_id": "", "is_initialized": False, "is_valid": False}
        return {"collision": collision, "kinematics_estimated": kinematics,
                "gps_location": {"latitude": 47.641468, "longitude": -122.140165, "altitude": 122.0},
                "timestamp": self.timestamp_ns, "landed_state": 1, "rc_data": rc, "ready": True,
                "ready_message": "", "can_arm": True}

    def rpc_moveToPosition(self, x, y, z, velocity, timeout_sec, drivetrain, yaw_mode, lookahead,
                           adaptive_lookahead, vehicle_name) -> bool:
        self.position = vec(x, y, z)
        return True

    def rpc_rotateByYawRate(self, yaw_rate, duration, vehicle_name) -> bool:
        self.orientation = quat_yaw(yaw_of(self.orientation) + math.radians(yaw_rate * duration))
        return True

    def rpc_rotateToYaw(self, yaw_deg, timeout_sec, margin, vehicle_name) -> bool:
        self.orientation = quat_yaw(math.radians(yaw_deg))
        return True

    def _mount(self, camera_name: str) -> dict[str, Any]:
        return self.cameras.setdefault(str(camera_name), {k: dict(v) for k, v in MOUNT.items()})

    def camera_world(self, camera_name: str) -> dict[str, Any]:
        """A camera's pose in the world: the vehicle's pose composed with the camera's relative one."""
        rel = self._mount(camera_name)
        offset = rotate(self.orientation, rel["position"])
        return {"position": vec(*(self.position[k] + offset[k] for k in ("x_val", "y_val", "z_val"))),
                "orientation": qmul(self.orientation, rel["orientation"])}

    def rpc_simSetCameraPose(self, camera_name: str, pose: dict[str, Any], vehicle_name: str, *external: Any) -> None:
        """Relative to the vehicle body, as AirSim's APIPCamera::setCameraPose; `external` is
        what the `airsim` client adds (cosysairsim sends three parameters)."""
        self.cameras[str(camera_name)] = {"position": dict(pose["position"]), "orientation": dict(pose["orientation"])}

    def rpc_simGetCameraInfo(self, camera_name: str, vehicle_name: str, *external: Any) -> dict[str, Any]:
        """The camera's world pose (AirSim reports the actor's world transform), fov and projection."""
        return {"pose": self.camera_world(camera_name), "fov": 90.0,
                "proj_mat": {"matrix": [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0],
                                        [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]}}

    def rpc_simGetImages(self, requests: list[dict[str, Any]], vehicle_name: str, *external: Any) -> list[dict]:
        return [self._image(r) for r in requests]

    def _image(self, request: dict[str, Any]) -> dict[str, Any]:
        world = self.camera_world(request["camera_name"])
        if request["image_type"] == 0:
            self.shots.append((str(request["camera_name"]), world))
        rgb = camera_image(yaw_of(world["orientation"]))
        uint8, floats = b"", []
        if request["image_type"] == 2:  # DepthPerspective, as floats
            floats = [float(v) for v in np.linspace(1.0, 50.0, WIDTH * HEIGHT)]
        elif request["compress"]:
            buf = io.BytesIO()
            Image.fromarray(np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)])).save(buf, "PNG")  # RGBA
            uint8 = buf.getvalue()
        else:
            raw = rgb[..., ::-1] if self.raw_order == "bgr" else rgb
            if self.channels == 4:
                raw = np.dstack([raw, np.full(rgb.shape[:2], 255, np.uint8)])
            uint8 = np.ascontiguousarray(raw).tobytes()
        return {"image_data_uint8": uint8, "image_data_float": floats, "camera_name": request["camera_name"],
                "camera_position": world["position"], "camera_orientation": world["orientation"],
                "time_stamp": self.timestamp_ns, "message": "", "pixels_as_float": request["pixels_as_float"],
                "compress": request["compress"], "width": WIDTH, "height": HEIGHT,
                "image_type": request["image_type"]}
