"""A protocol fake of AirSim's RPC server, not the simulator.

It speaks AirSim's real wire protocol (msgpack-rpc over TCP: request [0, msgid, method, params],
response [1, msgid, error, result]) with AirSim's method names and the exact field names of its
msgpack structs (Vector3r x_val.., Quaternionr w_val.., Pose, KinematicsState, MultirotorState,
ImageResponse), so the real client library connects to it unmodified. Behind the protocol there
is only a pose that the motion calls update and a camera that "sees" its compass heading.
"""
from __future__ import annotations

import io
import math
import socket
import threading
from typing import Any

import msgpack
import numpy as np
from PIL import Image

WIDTH, HEIGHT = 8, 6


def vec(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> dict[str, float]:
    return {"x_val": float(x), "y_val": float(y), "z_val": float(z)}


def quat_yaw(yaw_rad: float) -> dict[str, float]:
    return {"w_val": math.cos(yaw_rad / 2), "x_val": 0.0, "y_val": 0.0, "z_val": math.sin(yaw_rad / 2)}


def yaw_of(q: dict[str, float]) -> float:
    w, x, y, z = q["w_val"], q["x_val"], q["y_val"], q["z_val"]
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


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
        self.position = vec(0.0, 0.0, 0.0)
        self.orientation = quat_yaw(0.0)
        self.velocity = vec(0.0, 0.0, 0.0)
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
                    self.calls.append((method, list(params)))
                    error, result = None, None
                    handler = getattr(self, f"rpc_{method}", None)
                    if handler is None:
                        error = f"rpclib: server could not find function '{method}' with argument count {len(params)}."
                    elif method in self.fail:
                        error = f"{method} failed on purpose"
                    else:
                        result = handler(*params)
                    conn.sendall(msgpack.packb([1, msgid, error, result], use_bin_type=True))

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

    def rpc_simGetImages(self, requests: list[dict[str, Any]], vehicle_name: str, *external: Any) -> list[dict]:
        return [self._image(r) for r in requests]

    def _image(self, request: dict[str, Any]) -> dict[str, Any]:
        rgb = camera_image(yaw_of(self.orientation))
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
                "camera_position": dict(self.position), "camera_orientation": dict(self.orientation),
                "time_stamp": self.timestamp_ns, "message": "", "pixels_as_float": request["pixels_as_float"],
                "compress": request["compress"], "width": WIDTH, "height": HEIGHT,
                "image_type": request["image_type"]}
