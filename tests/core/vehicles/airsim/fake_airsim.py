"""A protocol fake of AirSim's RPC server, not the simulator: AirSim cannot run here.

What is real: the wire protocol (msgpack-rpc over TCP: request [0, msgid, method, params],
response [1, msgid, error, result]), AirSim's method names and the exact field names of its
msgpack structs (Vector3r x_val.., Quaternionr w_val.., Pose, KinematicsState, MultirotorState,
ImageResponse, CameraInfo), so the real client library connects to it unmodified; and the task
rule of AirSim's multirotor API (MultirotorApiBase's SingleTaskCall): the vehicle runs one task at
a time, every task call (move*, rotate*, hover, takeoff, land, goHome) and cancelLastTask cancel
the running one, and a cancelled call answers at once, without an error, with False.

What is faked: behind the protocol there is only a vehicle pose that a task sets when it ends
(no dynamics: a task "flies" for `task_s` seconds, then the vehicle is there), and cameras mounted
on it (simSetCameraPose sets a camera's pose relative to the body, as AirSim does) that "see"
their own compass heading in the world.

Ordering: one thread reads every connection and hands requests to the vehicle in the order they
reached its sockets (on loopback, the order the clients wrote them), one at a time; `calls` keeps
them in that order with a time.monotonic() stamp (`seen()`). `latency_s > 0` delays each request a
random 0..latency_s before the vehicle takes it, in order per connection, so requests on two
connections may overtake each other as they may on a real network; `delay[method]` holds that
method (and what follows it on its connection) that long, to make one overtake on purpose;
`arrived` lists what reached the sockets, before any delay. time.monotonic is
CLOCK_MONOTONIC, one clock for every process on the host: a driver process's stamps compare.
"""
from __future__ import annotations

import io
import math
import queue
import random
import select
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import msgpack
import numpy as np
from PIL import Image

WIDTH, HEIGHT = 8, 6
MOUNT = {"position": {"x_val": 0.30, "y_val": 0.0, "z_val": 0.0},  # sim/airsim/settings.json's "front"
         "orientation": {"w_val": 1.0, "x_val": 0.0, "y_val": 0.0, "z_val": 0.0}}
# AirSim RPCs that move, pose or arm the vehicle (method names as they travel on the wire).
VEHICLE_CALLS = frozenset({"simSetVehiclePose", "enableApiControl", "armDisarm", "takeoff", "land", "goHome",
                           "hover", "cancelLastTask", "simSetKinematics", "simSetObjectPose"})
# Calls that start the vehicle moving (a hold must never be followed by one): every move*/rotate*
# task, takeoff, goHome, a teleport, and taking control (arming).
STARTS_MOTION = frozenset({"takeoff", "goHome", "simSetVehiclePose", "enableApiControl", "armDisarm"})
STOPS = frozenset({"hover", "land", "cancelLastTask"})  # what a hold may send


def moves_vehicle(method: str) -> bool:
    """Whether a call moves, poses or arms the vehicle: every move*/rotate* task and VEHICLE_CALLS."""
    return method in VEHICLE_CALLS or method.startswith(("move", "rotate"))


def starts_motion(method: str) -> bool:
    """Whether a call may set the vehicle moving (moves_vehicle less the stops: hover, land, cancel)."""
    return method in STARTS_MOTION or method.startswith(("move", "rotate"))


def is_task(method: str) -> bool:
    """AirSim runs it as the vehicle's one task (MultirotorApiBase: SingleTaskCall)."""
    return method in ("takeoff", "land", "goHome", "hover") or method.startswith(("move", "rotate"))


class Call(NamedTuple):
    """One request as the vehicle took it."""

    t: float  # time.monotonic() when the vehicle took it
    name: str  # the method as it travels on the wire ("moveToPosition", "hover"...)
    args: list[Any]  # its parameters, as sent (vehicle_name last)


class CallLog(list):
    """(method, params) of every request in the order the vehicle took it, with the time beside
    each (`times`); `lock` is the vehicle's: taking a request is one step under it."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []
        self.lock = threading.RLock()

    def append(self, item: Any) -> None:
        with self.lock:
            self.times.append(time.monotonic())
            super().append(item)


@dataclass
class Task:
    method: str
    start: float
    end: Optional[float] = None  # None while it runs
    cancelled: bool = False


class _Connection:
    """One client connection: its unpacker, what it sent, and one writer at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.unpacker = msgpack.Unpacker(raw=False)
        self.sent: list[str] = []
        self.write_lock = threading.Lock()
        self.delayed: Optional[queue.Queue] = None  # requests waiting out their latency, in order

    def reply(self, msgid: int, error: Any, result: Any) -> None:
        data = memoryview(msgpack.packb([1, msgid, error, result], use_bin_type=True))
        with self.write_lock:
            try:
                while data:  # the socket is non-blocking (the reader's): wait whenever it is full
                    try:
                        data = data[self.sock.send(data):]
                    except BlockingIOError:
                        select.select([], [self.sock], [], 1.0)
            except OSError:  # the client hung up while its call ran
                pass


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
    """Runs on 127.0.0.1 and a free port. `task_s > 0`: each motion task (moveTo*, moveByVelocity,
    rotate*) runs that long before it answers, unless a later task or cancelLastTask cancels it;
    a hover answers at once. `latency_s` and the order of `calls`: see the module docstring."""

    def __init__(self, raw_order: str = "bgr", channels: int = 3, task_s: float = 0.0, latency_s: float = 0.0,
                 seed: Optional[int] = None) -> None:
        self.raw_order, self.channels = raw_order, channels
        self.task_s, self.latency_s = float(task_s), float(latency_s)  # may change between calls
        self.delay: dict[str, float] = {}  # method -> seconds the vehicle takes it late (see the module docstring)
        self.arrived: list[tuple[float, str]] = []  # (time.monotonic(), method) as requests reached the sockets
        self.calls = CallLog()
        self.tasks: list[Task] = []  # every task's span, in the order they started
        self._running: Optional[tuple[Task, threading.Event]] = None
        self._rng = random.Random(seed)
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
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._open: list[_Connection] = []
        self._reader = threading.Thread(target=self._read_all, name="fake-airsim", daemon=True)
        self._reader.start()

    def close(self) -> None:
        self._stop.set()
        self._reader.join(timeout=2.0)
        with self.calls.lock:
            if self._running is not None:
                self._running[1].set()
        for conn in self._open:
            try:
                conn.sock.close()
            except OSError:
                pass
        self._sock.close()

    # -- what the vehicle saw --------------------------------------------------------------------

    def seen(self, after: float = -math.inf) -> list[Call]:
        """Every request the vehicle took after time.monotonic() `after`, in the order it took them."""
        with self.calls.lock:
            rows = list(zip(self.calls.times, self.calls))
        return [Call(t, name, params) for t, (name, params) in rows if t > after]

    def timed(self, method: Optional[str] = None, after: float = -1.0) -> list[tuple[float, str, list[Any]]]:
        """(time, method, params) of the calls named `method` (all if None) that came after `after`."""
        return [tuple(c) for c in self.seen(after) if method is None or c.name == method]

    def methods(self) -> list[str]:
        return [name for name, _ in list(self.calls)]

    def params(self, method: str) -> list[list[Any]]:
        return [p for name, p in list(self.calls) if name == method]

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

    # -- msgpack-rpc framing: one reader, the vehicle takes requests in the order they arrived ----

    def _read_all(self) -> None:
        """Edge-triggered epoll (Linux): a connection joins the ready list when data reaches it and
        leaves it when reported, so connections come back in the order their requests arrived (a
        level-triggered poll re-queues each reported connection, and a stale entry would jump the
        queue). Each connection is drained before its requests are taken, so a client that waits
        for its answers never leaves a stale entry behind."""
        poller = select.epoll()
        poller.register(self._sock.fileno(), select.EPOLLIN)
        conns: dict[int, _Connection] = {}
        try:
            while not self._stop.is_set():
                for fd, _ in poller.poll(0.05):
                    if fd == self._sock.fileno():
                        self._accept(poller, conns)
                    elif fd in conns:
                        self._read(poller, conns, conns[fd])
        finally:
            poller.close()

    def _accept(self, poller: select.epoll, conns: dict[int, _Connection]) -> None:
        try:
            sock, _ = self._sock.accept()
        except OSError:
            return
        sock.setblocking(False)
        conn = _Connection(sock)
        self._open.append(conn)
        self.connections.append(conn.sent)
        conns[sock.fileno()] = conn
        poller.register(sock.fileno(), select.EPOLLIN | select.EPOLLET)

    def _read(self, poller: select.epoll, conns: dict[int, _Connection], conn: _Connection) -> None:
        closed = False
        while True:  # edge-triggered: read until the socket is empty
            try:
                data = conn.sock.recv(65536)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                closed = True
                break
            conn.unpacker.feed(data)
        for message in conn.unpacker:
            if message[0] != 0:  # notifications need no answer
                continue
            _, msgid, method, params = message
            self.arrived.append((time.monotonic(), method))
            if conn.delayed is None and (self.latency_s > 0 or self.delay):
                conn.delayed = queue.Queue()
                threading.Thread(target=self._deliver_late, args=(conn,), daemon=True).start()
            if conn.delayed is not None:
                conn.delayed.put((msgid, method, list(params)))
            else:
                self._take(conn, msgid, method, list(params))
        if closed:
            fd = conn.sock.fileno()
            poller.unregister(fd)
            del conns[fd]
            conn.sock.close()

    def _deliver_late(self, conn: _Connection) -> None:
        assert conn.delayed is not None
        while not self._stop.is_set():
            try:
                msgid, method, params = conn.delayed.get(timeout=0.1)
            except queue.Empty:
                continue
            late = self.delay.get(method, self._rng.uniform(0.0, self.latency_s) if self.latency_s > 0 else 0.0)
            time.sleep(late)
            self._take(conn, msgid, method, params)

    def _take(self, conn: _Connection, msgid: int, method: str, params: list[Any]) -> None:
        """The vehicle takes one request: logged, and a task call cancels the running task and
        becomes the running one, as one step."""
        task = cancel = None
        with self.calls.lock:
            self.calls.append((method, params))
            conn.sent.append(method)
            if (is_task(method) or method == "cancelLastTask") and self._running is not None:
                self._running[0].cancelled = True
                self._running[1].set()
                self._running = None
            if is_task(method):
                task, cancel = Task(method, time.monotonic()), threading.Event()
                self._running = (task, cancel)
                self.tasks.append(task)
        if task is not None and method != "hover" and self.task_s > 0 and method not in self.fail:
            threading.Thread(target=self._run_task, args=(conn, msgid, method, params, task, cancel),
                             daemon=True).start()
            return
        error, result = self._handle(method, params)
        if task is not None:
            self._end(task)
        conn.reply(msgid, error, result)

    def _run_task(self, conn: _Connection, msgid: int, method: str, params: list[Any], task: Task,
                  cancel: threading.Event) -> None:
        if cancel.wait(self.task_s):
            error, result = None, False  # cancelled: back at once, no error, and it never got there
        else:
            error, result = self._handle(method, params)
        self._end(task)
        conn.reply(msgid, error, result)

    def _end(self, task: Task) -> None:
        with self.calls.lock:
            task.end = time.monotonic()
            if self._running is not None and self._running[0] is task:
                self._running = None

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

    def rpc_moveByVelocity(self, vx, vy, vz, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        self.velocity = vec(vx, vy, vz)
        return True

    def rpc_hover(self, vehicle_name: str) -> bool:
        self.velocity = vec()
        return True

    def rpc_cancelLastTask(self, vehicle_name: str) -> None:
        return None

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
