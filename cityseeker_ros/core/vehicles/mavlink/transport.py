"""Bytes to and from a vehicle: the endpoint forms a user writes and the socket or serial port behind each.

- `udp://HOST:PORT` (or `udpin://`) listens on HOST:PORT and answers whoever sent last: the vehicle
  pushes to this port, as PX4 SITL does to 14540 for offboard APIs and MAVProxy/mavlink-router
  outputs do. `udp://:14540` listens on every interface.
- `udpout://HOST:PORT` sends to HOST:PORT first (the vehicle or a router listens there, e.g. a
  companion computer's mavlink-router UDP server) and reads the answers on its own ephemeral port.
- `tcp://HOST:PORT` connects (ArduPilot SITL serves 5760; PX4 SITL 4560 is the simulator port, not this).
- `serial:///dev/ttyUSB0:57600` opens a serial port at a baud rate (57600 when left out); needs pyserial.
"""
from __future__ import annotations

import errno
import os
import re
import select
import socket
import time
from dataclasses import dataclass
from typing import Any, Optional

from cityseeker_ros.core.vehicles.link import LinkError

FORMS = "udp://HOST:PORT (listen), udpout://HOST:PORT (send first), tcp://HOST:PORT, serial:///dev/ttyX[:BAUD]"
DEFAULT_BAUD = 57600
_HOST_PORT = re.compile(r"^(?P<host>[^:/]*):(?P<port>\d{1,5})$")


@dataclass(frozen=True)
class Endpoint:
    scheme: str  # "udpin", "udpout", "tcp" or "serial"
    host: str = ""
    port: int = 0
    device: str = ""
    baud: int = DEFAULT_BAUD

    def describe(self) -> str:
        if self.scheme == "serial":
            return f"serial://{self.device}:{self.baud}"
        name = {"udpin": "udp", "udpout": "udpout", "tcp": "tcp"}[self.scheme]
        role = {"udpin": " (listening)", "udpout": " (sending first)", "tcp": ""}[self.scheme]
        return f"{name}://{self.host or '0.0.0.0'}:{self.port}{role}"


def parse_endpoint(url: str) -> Endpoint:
    scheme, sep, rest = str(url).partition("://")
    if not sep:
        raise LinkError(f"vehicle endpoint {url!r} has no scheme; use one of {FORMS}")
    scheme = scheme.lower()
    if scheme == "serial":
        device, baud = rest, DEFAULT_BAUD
        head, colon, tail = rest.rpartition(":")
        if colon and tail.isdigit():
            device, baud = head, int(tail)
        if not device:
            raise LinkError(f"vehicle endpoint {url!r} names no serial device; e.g. serial:///dev/ttyUSB0:57600")
        return Endpoint("serial", device=device, baud=baud)
    kinds = {"udp": "udpin", "udpin": "udpin", "udpout": "udpout", "tcp": "tcp"}
    if scheme not in kinds:
        raise LinkError(f"vehicle endpoint {url!r}: unknown scheme {scheme!r}; use one of {FORMS}")
    match = _HOST_PORT.match(rest)
    if not match or int(match["port"]) > 65535:
        raise LinkError(f"vehicle endpoint {url!r} needs HOST:PORT after {scheme}://; use one of {FORMS}")
    host, port = match["host"], int(match["port"])
    if kinds[scheme] != "udpin" and not host:
        raise LinkError(f"vehicle endpoint {url!r} needs a host to reach")
    return Endpoint(kinds[scheme], host=host, port=port)


def readable(source: Any, timeout_s: float) -> bool:
    """Whether `source` (a socket, a serial port: anything with fileno()) has bytes to read, after at
    most `timeout_s`. poll(), not select(): select cannot watch a descriptor numbered 1024 or more,
    and a long-lived process (a node beside many connections, a soak) gets there."""
    poller = select.poll()
    poller.register(source.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(max(timeout_s, 0.0) * 1000.0))


class Transport:
    """Datagrams or a byte stream; `read` waits at most `timeout_s` and returns b"" when nothing came."""

    def read(self, timeout_s: float) -> bytes:
        raise NotImplementedError

    def write(self, data: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class UdpTransport(Transport):
    def __init__(self, endpoint: Endpoint) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.peer: Optional[tuple[str, int]] = None
        try:
            if endpoint.scheme == "udpin":
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                self.sock.bind((endpoint.host or "0.0.0.0", endpoint.port))
            else:
                self.peer = (socket.gethostbyname(endpoint.host), endpoint.port)
                self.sock.bind(("0.0.0.0", 0))
        except OSError as exc:
            self.sock.close()
            raise LinkError(f"cannot open {endpoint.describe()}: {exc.strerror or exc}") from None
        self.sock.setblocking(False)
        self.listening = endpoint.scheme == "udpin"

    def read(self, timeout_s: float) -> bytes:
        if not readable(self.sock, timeout_s):
            return b""
        try:
            data, sender = self.sock.recvfrom(65535)
        except OSError as exc:  # ICMP port unreachable from a previous send, and the like
            if exc.errno in (errno.ECONNREFUSED, errno.EAGAIN, errno.EWOULDBLOCK):
                return b""
            raise
        if self.listening:
            self.peer = sender  # answer whoever spoke last, as PX4 and mavlink-router do
        return data

    def write(self, data: bytes) -> None:
        if self.peer is None:
            return  # listening and nobody has spoken yet
        try:
            self.sock.sendto(data, self.peer)
        except OSError:
            pass  # a datagram lost is a datagram lost; link loss shows in the heartbeat age

    def close(self) -> None:
        self.sock.close()


class TcpTransport(Transport):
    def __init__(self, endpoint: Endpoint, timeout_s: float) -> None:
        try:
            self.sock = socket.create_connection((endpoint.host, endpoint.port), timeout=max(timeout_s, 0.1))
        except OSError as exc:
            reason = "timed out" if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
            raise LinkError(f"cannot reach {endpoint.describe()}: {reason}") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.describe = endpoint.describe()
        self.closed_by_peer = False

    def read(self, timeout_s: float) -> bytes:
        if self.closed_by_peer:
            return b""
        if not readable(self.sock, timeout_s):
            return b""
        try:
            data = self.sock.recv(65535)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError:
            data = b""
        if not data:
            self.closed_by_peer = True  # shows as link loss; the owner decides whether to reconnect
        return data

    def write(self, data: bytes) -> None:
        if self.closed_by_peer:
            return
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed_by_peer = True

    def close(self) -> None:
        self.sock.close()


WRITE_TIMEOUT_S = 1.0


class SerialTransport(Transport):
    def __init__(self, endpoint: Endpoint) -> None:
        try:
            import serial  # pyserial, in the mavlink extra
        except ImportError:
            raise LinkError("serial endpoints need pyserial: pip install 'cityseeker_ros[mavlink]'") from None
        try:
            self.port = serial.Serial(endpoint.device, endpoint.baud, timeout=0, write_timeout=WRITE_TIMEOUT_S)
            self.errors = (serial.SerialException, OSError)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise LinkError(f"cannot open {endpoint.describe()}: {exc}") from None

    # pyserial opens and configures the port; the bytes go through os.read and os.write on its
    # (non-blocking) descriptor, because pyserial's own read and write call select(), which fails
    # for a descriptor numbered 1024 or more.
    def read(self, timeout_s: float) -> bytes:
        if not readable(self.port, timeout_s):
            return b""
        try:
            return os.read(self.port.fileno(), max(self.port.in_waiting, 1))
        except BlockingIOError:
            return b""

    def write(self, data: bytes) -> None:
        """Within WRITE_TIMEOUT_S, else dropped: on a wedged radio, link loss shows in the heartbeat age."""
        fd, rest = self.port.fileno(), memoryview(data)
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        deadline = time.monotonic() + WRITE_TIMEOUT_S
        try:
            while rest:
                try:
                    rest = rest[os.write(fd, rest):]
                except BlockingIOError:
                    pass
                if rest and not poller.poll(max(0.0, deadline - time.monotonic()) * 1000.0):
                    return
        except self.errors:
            pass

    def close(self) -> None:
        self.port.close()


def open_transport(endpoint: Endpoint, timeout_s: float) -> Transport:
    if endpoint.scheme in ("udpin", "udpout"):
        return UdpTransport(endpoint)
    if endpoint.scheme == "tcp":
        return TcpTransport(endpoint, timeout_s)
    return SerialTransport(endpoint)
