"""`cityseeker monitor`: the flight rules checked passively on a MAVLink stream that carries both
directions (a router's copy of the stack's link, a second telemetry output), so a field team can check
any flight, this stack's or not. It only listens: its socket never sends a byte, not even a heartbeat.

Exit status: 0 no violation, 1 violations found, 2 bad input (one line naming it), 3 no vehicle was
heard (nothing was judged).
"""
from __future__ import annotations

import argparse
import re
import select
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.files import write_json_atomic

_CONNECTION = re.compile(r"^(?:udp|udpin)://(?P<host>[^:/]*):(?P<port>\d{1,5})$")
READ_SLICE_S = 0.2


def add_parser(sub: Any) -> None:
    m = sub.add_parser("monitor", help="check the flight rules passively on a MAVLink stream (a router's or a "
                       "second telemetry output), print each violation, and report (docs/vehicles.md)",
                       description="Listen on a MAVLink stream that carries both what a ground station or "
                       "companion computer sends and what the vehicle reports, check the flight rules against "
                       "the safety file, print one line per violation as it happens and a summary at the end "
                       "(--duration or Ctrl-C). Never sends anything. Exit status: 0 no violation, 1 "
                       "violations, 2 bad input, 3 no vehicle heard (nothing judged).")
    m.add_argument("--connection", required=True, metavar="udp://HOST:PORT",
                   help="where to listen for the stream, e.g. udp://0.0.0.0:14550 or udp://:14550")
    m.add_argument("--safety", required=True, type=Path, metavar="FILE",
                   help="the safety file (YAML or JSON) whose fence, floor, ceiling and speeds the flight is "
                   "judged against")
    m.add_argument("--duration", type=float, default=0.0, metavar="S", help="stop after S seconds (default 0: "
                   "until Ctrl-C)")
    m.add_argument("--report", type=Path, metavar="OUT.json", help="also write the verdict as JSON (atomically)")
    m.add_argument("--stack-system", type=int, default=255, metavar="ID", help="the MAVLink system id of the "
                   "stack whose commands are judged (default 255)")
    m.add_argument("--flavour", choices=("auto", "px4", "ardupilot"), default="auto",
                   help="the autopilot's mode numbers (default: from its heartbeat)")


def parse_connection(text: str) -> tuple[str, int]:
    match = _CONNECTION.match(str(text))
    if not match or int(match["port"]) > 65535:
        raise ConfigError(f"--connection {text!r}: expected udp://HOST:PORT to listen on (e.g. udp://:14550); "
                          "the monitor only listens, so udpout, tcp and serial are not offered")
    return match["host"] or "0.0.0.0", int(match["port"])


def run(args: argparse.Namespace) -> int:
    host, port = parse_connection(args.connection)
    from cityseeker_ros.core.vehicles.monitor.limits import load_limits

    limits = load_limits(args.safety)
    if not args.duration >= 0:
        raise ConfigError(f"--duration must be 0 (until Ctrl-C) or a positive number of seconds, got {args.duration}")
    if args.report is not None and not args.report.parent.is_dir():
        raise ConfigError(f"--report {args.report}: no folder {args.report.parent}")
    if not 0 < args.stack_system < 256:
        raise ConfigError(f"--stack-system must be a MAVLink system id 1..255, got {args.stack_system}")
    try:
        from pymavlink.dialects.v20 import ardupilotmega as mavlink
    except ImportError:
        raise ConfigError("cityseeker monitor needs pymavlink: pip install 'cityseeker_ros[mavlink]'") from None
    from cityseeker_ros.core.vehicles.monitor.mavlink_wire import MavlinkObserver
    from cityseeker_ros.core.vehicles.monitor.monitor import FlightMonitor
    from cityseeker_ros.core.vehicles.monitor.report import monitor_report, summary_lines

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"--connection {args.connection}: cannot listen ({exc.strerror or exc})") from None
    parser = mavlink.MAVLink(None)  # decodes only; it is never given a file to send on
    parser.robust_parsing = True
    observer = MavlinkObserver(None if args.flavour == "auto" else args.flavour, stack_system=args.stack_system)
    monitor = FlightMonitor(limits, passive=True)
    print(f"monitor: listening on udp://{host}:{port} (passive: nothing is sent); safety file {args.safety}",
          flush=True)
    started = time.monotonic()
    previous = signal.signal(signal.SIGTERM, _interrupt) if _main_thread() else None
    poller = select.poll()  # not select(): it cannot watch a descriptor numbered 1024 or more
    poller.register(sock.fileno(), select.POLLIN)
    try:
        while not args.duration or time.monotonic() - started < args.duration:
            wait = READ_SLICE_S if not args.duration else max(0.0, min(READ_SLICE_S, started + args.duration
                                                                        - time.monotonic()))
            if not poller.poll(wait * 1000.0):
                continue
            data = sock.recv(65535)
            t = time.monotonic() - started
            try:
                msgs = parser.parse_buffer(data) or []
            except mavlink.MAVError:
                observer.counts["bad data"] += 1
                continue
            for msg in msgs:
                for obs in observer.observe(msg, t):
                    for violation in monitor.feed(obs):
                        print(f"VIOLATION {violation}", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    elapsed = time.monotonic() - started
    for violation in monitor.finish(elapsed):
        print(f"VIOLATION {violation}", flush=True)
    report = monitor_report(monitor, observer.counts, connection=f"udp://{host}:{port}", safety=str(args.safety),
                            duration_s=round(elapsed, 3), flavour=observer.flavour or "unknown",
                            stack_system=args.stack_system)
    print(f"monitor: stopped after {elapsed:.1f} s", flush=True)
    for line in summary_lines(report):
        print(line, flush=True)
    if args.report is not None:
        write_json_atomic(args.report, report)
        print(f"report: {args.report}", flush=True)
    return {"violations": 1, "clean": 0, "nothing_heard": 3}[report["verdict"]]


def _interrupt(signum: int, frame: Optional[Any]) -> None:
    raise KeyboardInterrupt


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
