"""The AR server's process, started by `cityseeker ar` beside the node set (a runner tool process):

    python -m cityseeker_ros.ar.serve --origin LAT,LON --token-file F [--host H] [--port P]
        [--cert C --key K] [--min-accuracy-m M] [--run-max-steps N]

The token is read from a file (0600, in a private folder the command removes), never the command
line, which every local user can read. SIGTERM or SIGINT ends it."""
from __future__ import annotations

import argparse
import asyncio
import signal
import ssl
import sys
from pathlib import Path
from typing import Optional

import rclpy
from aiohttp import web
from rclpy.signals import SignalHandlerOptions

from cityseeker_ros.ar.bridge import ArBridge, Spinner
from cityseeker_ros.ar.web import ArServer
from cityseeker_ros.core.ar.session import DEFAULT_MIN_ACCURACY_M, ArSession
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.ros.runner import CONFIG_ERROR_EXIT


def origin_argument(text: str) -> tuple[float, float]:
    try:
        lat, lon = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--origin must be LAT,LON, got {text!r}") from None
    return lat, lon


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cityseeker_ros.ar.serve", description=__doc__)
    p.add_argument("--origin", type=origin_argument, required=True, help="graph_localiser's odom_origin LAT,LON")
    p.add_argument("--token-file", type=Path, required=True, help="file holding the run's token")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--cert", type=Path, help="TLS certificate (PEM); with --key, serve HTTPS")
    p.add_argument("--key", type=Path, help="TLS private key (PEM)")
    p.add_argument("--min-accuracy-m", type=float, default=DEFAULT_MIN_ACCURACY_M)
    p.add_argument("--run-max-steps", type=int, default=35)
    return p


async def serve(args: argparse.Namespace, server: ArServer) -> None:
    context: Optional[ssl.SSLContext] = None
    if args.cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.cert, args.key)
    runner = web.AppRunner(server.app(), access_log=None)
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
    args = parser().parse_args(argv)
    try:
        token = args.token_file.read_text(encoding="utf-8").strip()
        session = ArSession(args.min_accuracy_m, args.run_max_steps)
    except (OSError, ConfigError) as exc:
        print(f"ar_server: error: {exc}", file=sys.stderr, flush=True)
        return CONFIG_ERROR_EXIT
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    server_box: list[ArServer] = []
    bridge = ArBridge(args.origin, lambda kind, body: server_box[0].post(kind, body))
    server = ArServer(session, bridge, token)
    server_box.append(server)
    spinner = Spinner(bridge)
    try:
        asyncio.run(serve(args, server))
    finally:
        spinner.close()
        rclpy.try_shutdown()
    print(f"ar_server: stopped; counts {dict(session.counts)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
