"""The browser pages' process, started beside the node set (a runner tool process): the AR phone
page (`cityseeker ar`) and, with --console-world, the operator console, on one site (ar/site.py:
one port, one token, one TLS context):

    python -m cityseeker_ros.ar.serve --origin LAT,LON --token-file F [--host H] [--port P]
        [--cert C --key K] [--min-accuracy-m M] [--run-max-steps N]
        [--console-world WORLD [--console-safety FILE]] [--no-phone]

--no-phone serves the console alone (no --origin then). The token is read from a file (0600, in a
private folder the command removes), never the command line, which every local user can read.
SIGTERM or SIGINT ends it."""
from __future__ import annotations

import argparse
import asyncio
import signal
import ssl
import sys
from pathlib import Path
from typing import Any, Optional

import rclpy
from aiohttp import web
from rclpy.signals import SignalHandlerOptions

from cityseeker_ros.ar.bridge import ArBridge, Spinner
from cityseeker_ros.ar.console_bridge import ConsoleBridge
from cityseeker_ros.ar.console_web import ConsoleServer
from cityseeker_ros.ar.site import site
from cityseeker_ros.ar.web import ArServer
from cityseeker_ros.core.ar.session import DEFAULT_MIN_ACCURACY_M, ArSession
from cityseeker_ros.core.console.session import ConsoleSession
from cityseeker_ros.core.console.state import Console
from cityseeker_ros.core.console.world_map import world_map
from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.ros.runner import CONFIG_ERROR_EXIT


def origin_argument(text: str) -> tuple[float, float]:
    try:
        lat, lon = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--origin must be LAT,LON, got {text!r}") from None
    return lat, lon


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cityseeker_ros.ar.serve", description=__doc__)
    p.add_argument("--origin", type=origin_argument, help="graph_localiser's odom_origin LAT,LON (the phone page)")
    p.add_argument("--token-file", type=Path, required=True, help="file holding the run's token")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--cert", type=Path, help="TLS certificate (PEM); with --key, serve HTTPS")
    p.add_argument("--key", type=Path, help="TLS private key (PEM)")
    p.add_argument("--min-accuracy-m", type=float, default=DEFAULT_MIN_ACCURACY_M)
    p.add_argument("--run-max-steps", type=int, default=35)
    p.add_argument("--console-world", type=Path, help="serve the operator console at /console, its map from this world")
    p.add_argument("--console-safety", type=Path, help="the run's safety file: its geofence is drawn on the map")
    p.add_argument("--no-phone", action="store_true", help="serve the console alone, without the AR phone page")
    return p


def console_part(args: argparse.Namespace, token: str) -> tuple[ConsoleServer, ConsoleBridge]:
    """The console's server and its ROS side (rclpy initialised); ConfigError/DataError on a bad world.
    Beside the phone page the phone is the vehicle: its fix and heading place the marker."""
    fence = load_safety_config(str(args.console_safety)).geofence if args.console_safety else None
    doc = world_map(args.console_world, fence)
    box: list[ConsoleServer] = []
    bridge = ConsoleBridge(lambda event: box[0].post(event), position_from="" if args.no_phone else "/ar_server")
    box.append(ConsoleServer(Console.for_map(doc), ConsoleSession(args.run_max_steps), bridge, token, doc))
    return box[0], bridge


async def serve(args: argparse.Namespace, app: web.Application) -> None:
    context: Optional[ssl.SSLContext] = None
    if args.cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.cert, args.key)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port, ssl_context=context)
    await site.start()
    print(f"ar_server: serving {'https' if context else 'http'}://{args.host}:{args.port}/", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await runner.cleanup()


def main(argv: Optional[list[str]] = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.no_phone and not args.console_world:
        p.error("--no-phone serves the console alone: it needs --console-world")
    if not args.no_phone and args.origin is None:
        p.error("the phone page needs --origin LAT,LON (or --no-phone with --console-world)")
    try:
        token = args.token_file.read_text(encoding="utf-8").strip()
        session = None if args.no_phone else ArSession(args.min_accuracy_m, args.run_max_steps)
    except (OSError, ConfigError) as exc:
        print(f"ar_server: error: {exc}", file=sys.stderr, flush=True)
        return CONFIG_ERROR_EXIT
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    parts: list[Any] = []
    spinners: list[Spinner] = []
    try:
        if session is not None:
            server_box: list[ArServer] = []
            bridge = ArBridge(args.origin, lambda kind, body: server_box[0].post(kind, body))
            server_box.append(ArServer(session, bridge, token))
            parts.append(server_box[0])
            spinners.append(Spinner(bridge))
        if args.console_world:
            try:
                console, console_bridge = console_part(args, token)
            except CitySeekerError as exc:
                print(f"ar_server: error: console: {exc}", file=sys.stderr, flush=True)
                return CONFIG_ERROR_EXIT
            parts.append(console)
            spinners.append(Spinner(console_bridge))
        asyncio.run(serve(args, site(token, *parts)))
    finally:
        for spinner in spinners:
            spinner.close()
        rclpy.try_shutdown()
    print(f"ar_server: stopped; counts {', '.join(str(dict(part.counts)) for part in parts)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
