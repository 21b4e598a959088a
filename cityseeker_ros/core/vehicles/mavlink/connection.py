"""One MAVLink 2 connection: framing, a reader thread, the ground station's own heartbeat, who has been
heard, the latest message of each kind from the chosen vehicle, and inboxes that a request waits on.

It knows nothing of modes or motion; the link decides what to send and routes motion through its one
gated send method.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Optional, TypeVar

from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.link import Heard
from cityseeker_ros.core.vehicles.mavlink.flavours import autopilot_name, vehicle_type_name
from cityseeker_ros.core.vehicles.mavlink.transport import Endpoint, Transport, open_transport

Message = Any  # a pymavlink MAVLink_message
T = TypeVar("T")
READ_SLICE_S = 0.05  # how long the reader blocks, so heartbeats and close() are never later than this


@dataclass
class _Source:
    autopilot: int
    mav_type: int
    heartbeats: int = 0
    last: Message = None


class Inbox:
    """Messages of some types from the vehicle, queued from the moment the inbox opens, so an answer
    that arrives before the request's send() returns is not missed."""

    def __init__(self, types: tuple[str, ...]) -> None:
        self.types = frozenset(types)
        self._queue: queue.Queue[Message] = queue.Queue()
        self.passed: list[Message] = []  # taken off the queue but not matched: STATUSTEXT reasons and the like

    def put(self, msg: Message) -> None:
        self._queue.put(msg)

    def wait(self, match: Callable[[Message], bool], timeout_s: float) -> Optional[Message]:
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while True:
            remaining = deadline - time.monotonic()
            try:
                msg = self._queue.get(timeout=max(remaining, 0.0)) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                return None
            if match(msg):
                return msg
            self.passed.append(msg)

    def texts(self) -> list[str]:
        return [m.text for m in self.passed if m.get_type() == "STATUSTEXT"]


class MavlinkConnection:
    def __init__(self, endpoint: Endpoint, source_system: int = 255, source_component: int = 190,
                 heartbeat_hz: float = 1.0) -> None:
        self.endpoint = endpoint
        self.source_system, self.source_component = source_system, source_component
        self._packer = mavlink.MAVLink(None, srcSystem=source_system, srcComponent=source_component)
        self._parser = mavlink.MAVLink(None)
        self._parser.robust_parsing = True
        self._heartbeat_period = 1.0 / heartbeat_hz
        self._transport: Optional[Transport] = None
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._send_lock = threading.Lock()
        self._lock = threading.Condition()
        self._inboxes: set[Inbox] = set()
        self._sources: dict[tuple[int, int], _Source] = {}
        self.target: Optional[tuple[int, int]] = None
        self.latest: dict[str, Message] = {}  # from the target, by message type
        self.target_heartbeats = 0
        self.last_heartbeat_t: Optional[float] = None  # monotonic, from the target component
        self.last_message_t: Optional[float] = None  # monotonic, anything from the target system
        self.protocol = 0
        self.sent: Counter[str] = Counter()
        # Called on the reader thread while the connection's lock is held: quick, and never blocking.
        self.on_message: Optional[Callable[[Message], None]] = None
        # An observer of the wire (the flight monitor): ("out", msg, t) for each message sent, on the sending
        # thread, once written; ("in", msg, t) for each one decoded, on the reader thread, once the link has
        # seen it (so a mode change the link reacts to is known to the link first); t is time.monotonic().
        # Outside every lock: quick, never blocking; what it raises is ignored.
        self.on_wire: Optional[Callable[[str, Message, float], None]] = None

    # -- life ------------------------------------------------------------------------------------------
    def open(self, timeout_s: float) -> None:
        self._transport = open_transport(self.endpoint, timeout_s)
        self._thread = threading.Thread(target=self._read_loop, name=f"mavlink-reader {self.endpoint.describe()}",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    # -- sending ---------------------------------------------------------------------------------------
    def send(self, msg: Message) -> None:
        transport = self._transport
        if transport is None:
            return
        with self._send_lock:
            buf = msg.pack(self._packer)
            self._packer.seq = (self._packer.seq + 1) % 256
            self.sent[msg.get_type()] += 1
        transport.write(bytes(buf))
        self._tell_wire("out", msg)

    def _tell_wire(self, direction: str, msg: Message) -> None:
        hook = self.on_wire
        if hook is None:
            return
        try:
            hook(direction, msg, time.monotonic())
        except Exception:  # noqa: BLE001 - an observer never breaks the link
            pass

    def _send_heartbeat(self) -> None:
        self.send(mavlink.MAVLink_heartbeat_message(mavlink.MAV_TYPE_GCS, mavlink.MAV_AUTOPILOT_INVALID, 0, 0,
                                                    mavlink.MAV_STATE_ACTIVE, 3))

    # -- receiving -------------------------------------------------------------------------------------
    def _read_loop(self) -> None:
        next_heartbeat = 0.0
        while not self._stop.is_set():
            transport = self._transport
            if transport is None:
                return
            now = time.monotonic()
            if now >= next_heartbeat:
                self._send_heartbeat()  # a ground station announces itself; udpin peers learn our address
                next_heartbeat = now + self._heartbeat_period
            try:
                data = transport.read(READ_SLICE_S)
            except (OSError, ValueError):
                if self._stop.is_set():
                    return
                time.sleep(READ_SLICE_S)
                continue
            if not data:
                continue
            try:
                msgs = self._parser.parse_buffer(data) or []
            except mavlink.MAVError:
                continue
            for msg in msgs:
                if msg.get_type() != "BAD_DATA":
                    self._dispatch(msg, time.monotonic())
                    self._tell_wire("in", msg)

    def _dispatch(self, msg: Message, now: float) -> None:
        kind = msg.get_type()
        src = (msg.get_srcSystem(), msg.get_srcComponent())
        with self._lock:
            if kind == "HEARTBEAT":
                source = self._sources.setdefault(src, _Source(msg.autopilot, msg.type))
                source.autopilot, source.mav_type = msg.autopilot, msg.type
                source.heartbeats += 1
                source.last = msg
                self._lock.notify_all()
            if self.target is None or src[0] != self.target[0]:
                return
            addressed = getattr(msg, "target_system", 0)
            if addressed not in (0, self.source_system):
                return  # an answer to another ground station
            self.last_message_t = now
            if kind == "HEARTBEAT":
                if src != self.target:
                    return  # a camera or gimbal of the same system: not the autopilot's mode
                self.last_heartbeat_t = now
                self.target_heartbeats += 1
                self.protocol = 2 if msg.get_msgbuf()[0] == mavlink.PROTOCOL_MARKER_V2 else 1
            self.latest[kind] = msg
            hook = self.on_message
            if hook is not None:
                hook(msg)  # inside the lock: a snapshot never shows a new mode without the link's verdict on it
            boxes = [box for box in self._inboxes if kind in box.types]
        for box in boxes:
            box.put(msg)

    @contextmanager
    def inbox(self, *types: str) -> Iterator[Inbox]:
        box = Inbox(types)
        with self._lock:
            self._inboxes.add(box)
        try:
            yield box
        finally:
            with self._lock:
                self._inboxes.discard(box)

    # -- who is there ----------------------------------------------------------------------------------
    def heard(self) -> tuple[Heard, ...]:
        with self._lock:
            return tuple(Heard(s, c, autopilot_name(src.autopilot), vehicle_type_name(src.mav_type), src.heartbeats)
                         for (s, c), src in sorted(self._sources.items()))

    def wait_for_autopilot(self, timeout_s: float, system_id: Optional[int],
                           component_id: Optional[int]) -> Optional[tuple[int, int, int]]:
        """The first autopilot heard that matches the wanted ids: (system, component, MAV_AUTOPILOT)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                for (s, c), src in sorted(self._sources.items()):
                    if src.autopilot == mavlink.MAV_AUTOPILOT_INVALID:
                        continue  # ground stations, cameras, companion computers
                    if (system_id is None or s == system_id) and (component_id is None or c == component_id):
                        return s, c, src.autopilot
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._lock.wait(min(remaining, 0.1))

    def choose(self, system_id: int, component_id: int) -> None:
        with self._lock:
            self.target = (system_id, component_id)
            source = self._sources[(system_id, component_id)]
            self.target_heartbeats = source.heartbeats
            self.latest["HEARTBEAT"] = source.last
            self.protocol = 2 if source.last.get_msgbuf()[0] == mavlink.PROTOCOL_MARKER_V2 else 1
            self.last_heartbeat_t = self.last_message_t = time.monotonic()

    def snapshot(self) -> tuple[dict[str, Message], Optional[float], Optional[float]]:
        with self._lock:
            return dict(self.latest), self.last_heartbeat_t, self.last_message_t

    def snapshot_with(self, probe: Callable[[], T]) -> tuple[dict[str, Message], Optional[float], Optional[float], T]:
        """A snapshot and `probe()` taken together, so what `on_message` decided matches the messages."""
        with self._lock:
            return dict(self.latest), self.last_heartbeat_t, self.last_message_t, probe()
