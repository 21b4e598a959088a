"""`cityseeker ar`: an AR trial from a phone's browser, in one command (docs/ar.md).

Checks the configuration before any process starts (ros/launcher.plan_ar), then starts the Seek
node set of a device (node_sets.ar_nodes: graph_localiser, camera_ingest with the `topic` frame
source, decision, the supervisor serving Seek) and the AR server, prints the page's address with
its one-time token (and, on the LAN, its QR code and the certificate's fingerprint) and the
operator console's (the same site, unless --no-console), and runs until Ctrl-C (or --timeout),
when every process it started is stopped and the token, certificate and key are removed. Nothing
the phone sends is written to disk; frames reach a bag only if the tester records one
(`cityseeker bag record`)."""
from __future__ import annotations

import argparse
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cityseeker_ros.core.ar.session import DEFAULT_MIN_ACCURACY_M, check_settings
from cityseeker_ros.core.ar.token import new_token
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.extras import install_hint
from cityseeker_ros.core.infra.key_value import key_value_argument
from cityseeker_ros.core.tasks.environment import DEFAULT_MAX_STEPS

DEFAULT_PORT = 8765
PHONE_FOV_DEG = 65.0  # a phone's main camera, landscape 4:3; what the topic source credits a frame with
SERVING = "ar_server: serving "


def add_parser(sub: Any) -> None:
    """The `ar` subcommand's options."""
    from cityseeker_ros.core.agents.policies import POLICIES
    from cityseeker_ros.ros.run_config import add_cli_options

    a = sub.add_parser("ar", help="an AR trial from any phone: a web page streams camera, position and heading "
                       "to the Seek node set and shows and speaks the guidance (docs/ar.md)",
                       description="Check the configuration, start graph_localiser, camera_ingest, decision and "
                       "the supervisor serving Seek goals with the AR server, print the page's address with its "
                       "one-time token, and run until Ctrl-C. Loopback only unless --lan.")
    a.add_argument("--world", required=True, type=Path, help="the world folder, e.g. worlds/monaco")
    a.add_argument("--policy", required=True, help=f"one of: {', '.join(POLICIES.names())}")
    a.add_argument("--param", action="append", type=key_value_argument, metavar="KEY=VALUE", help="policy parameter")
    a.add_argument("--backend", help="VLM backend for --policy vlm (shorthand for --param backend=NAME)")
    a.add_argument("--model", help="model path or served model name (shorthand for --param model=...)")
    a.add_argument("--backend-param", action="append", type=key_value_argument, metavar="KEY=VALUE",
                   help="VLM backend parameter (repeatable), e.g. base_url=URL")
    a.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, metavar="N",
                   help=f"the step budget of every Seek (default {DEFAULT_MAX_STEPS}); a page URL's max_steps=K "
                   "asks for fewer")
    a.add_argument("--lan", action="store_true", help="serve phones on the local network: HTTPS with a fresh "
                   "self-signed certificate on this machine's LAN address, the URL's token and a QR code printed")
    a.add_argument("--host", help="the address to bind (default 127.0.0.1; with --lan, this machine's LAN address)")
    a.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT}; 0: a free one)")
    a.add_argument("--min-accuracy-m", type=float, default=DEFAULT_MIN_ACCURACY_M,
                   help="a fix whose accuracy radius is wider is not used, and no Seek starts until one is "
                   f"better (default {DEFAULT_MIN_ACCURACY_M:g} m)")
    a.add_argument("--fov-deg", type=float, default=PHONE_FOV_DEG,
                   help=f"the phone camera's horizontal field of view (default {PHONE_FOV_DEG:g})")
    add_cli_options(a, "camera", ("safety_config", "decision_timeout_s"))
    a.add_argument("--no-console", action="store_true", help="leave out the operator console (served by default "
                   "at /console on the same address, with the same token; docs/operator.md)")
    a.add_argument("--timeout", type=float, help="stop after this many seconds (default: at Ctrl-C)")
    a.add_argument("--domain-id", type=int, help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID, else a free one)")
    a.add_argument("--out", type=Path, help="keep the node logs in OUT/ros (default: a temporary folder, "
                   "removed at the end unless the run fails)")


def ar_run_config(args: argparse.Namespace) -> Any:
    """The RunConfig of `cityseeker ar`: a seek's camera run whose frame source is `topic`."""
    from cityseeker_ros.core.agents.vlm.policy import merge_backend_shorthands
    from cityseeker_ros.core.evaluation.config import BenchmarkConfig
    from cityseeker_ros.ros import run_config

    if not 1 <= args.max_steps <= 1000:
        raise ConfigError(f"--max-steps must be from 1 to 1000, got {args.max_steps}")
    if not 1 <= args.fov_deg <= 360:
        raise ConfigError(f"--fov-deg must be from 1 to 360 degrees, got {args.fov_deg:g}")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be from 0 to 65535, got {args.port}")
    try:
        check_settings(args.min_accuracy_m)
    except ConfigError as exc:
        raise ConfigError(f"--{str(exc).replace('_', '-')}") from None
    params = merge_backend_shorthands(dict(args.param or []), args.backend, args.model,
                                      dict(args.backend_param or []))
    benchmark = BenchmarkConfig(data=str(args.world), policy=args.policy, policy_params=params,
                                max_steps=args.max_steps)
    values = {"source": "topic", "source_params": {"fov_deg": args.fov_deg, "max_age_s": 1.0}, "walker": "",
              "safety_config": args.safety_config, "decision_timeout_s": args.decision_timeout_s,
              "out": str(args.out) if args.out else ""}
    return run_config.seek_config(benchmark, values)


def lan_address() -> str:
    """This machine's address on the network its default route leaves by (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: routing only
            return s.getsockname()[0]
        except OSError:
            raise ConfigError("--lan: no network address found; give the one the phone reaches with --host") from None


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def print_qr(url: str) -> None:
    try:
        import segno
    except ImportError:  # the `ar` extra brings it; the URL alone still works
        print(f"(no QR code without the 'ar' extra: {install_hint('ar')})", flush=True)
        return
    segno.make(url, error="l").terminal(compact=True)


def run_ar(args: argparse.Namespace) -> int:
    """Check, start, print the address, run until Ctrl-C or --timeout; 0 when stopped so."""
    from cityseeker_ros.ros import env as ros
    from cityseeker_ros.ros import launcher, node_sets
    from cityseeker_ros.ros.runner import Runner

    run, world = launcher.plan_ar(ar_run_config(args))
    host = args.host or (lan_address() if args.lan else "127.0.0.1")
    if not args.lan and host not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError(f"--host {host}: serving beyond loopback needs --lan (HTTPS and the printed token)")
    port = args.port or free_port(host)
    secrets_dir = Path(tempfile.mkdtemp(prefix="cityseeker-ar-"))  # 0700: the token, certificate and key
    temporary = not run.out
    root = Path(tempfile.mkdtemp(prefix="cityseeker-ar-logs-")) if temporary else Path(run.out)
    failed = True
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        token_file = secrets_dir / "token"
        token = new_token()
        token_file.touch(mode=0o600)
        token_file.write_text(token, encoding="utf-8")
        origin = (world.graph.frame.lat0, world.graph.frame.lon0)
        argv = ["--origin", f"{origin[0]!r},{origin[1]!r}", "--token-file", str(token_file), "--host", host,
                "--port", str(port), "--min-accuracy-m", repr(float(args.min_accuracy_m)),
                "--run-max-steps", str(run.benchmark.max_steps)]
        if not args.no_console:  # the operator console on the same site: the world's map, the run's geofence
            argv += ["--console-world", str(Path(args.world).resolve())]
            if run.safety_config:
                argv += ["--console-safety", str(Path(run.safety_config).resolve())]
        fingerprint = ""
        if args.lan:
            from cityseeker_ros.ar.tls import self_signed

            cert, key, fingerprint = self_signed(secrets_dir, host)
            argv += ["--cert", str(cert), "--key", str(key)]
        nodes = node_sets.ar_nodes(run, origin, tuple(argv))
        base = f"{'https' if args.lan else 'http'}://{host if ':' not in host else f'[{host}]'}:{port}"
        url = f"{base}/?token={token}"
        console = "" if args.no_console else f"{base}/console?token={token}"
        with launcher.domain(args.domain_id) as domain_id:
            where = ("a temporary folder (kept only if the run fails; --out DIR keeps them)" if temporary
                     else root / "ros")
            print(f"ROS_DOMAIN_ID={domain_id}: {', '.join(n.name for n in nodes)}; node logs in {where}", flush=True)
            with Runner(nodes, root / "ros", ros.ros_env(domain_id=domain_id)) as runner:
                runner.start()
                shown = Announce(root / "ros" / f"{node_sets.AR_SERVER}.log", url, args.lan, fingerprint, console)
                deadline = None if args.timeout is None else time.monotonic() + args.timeout
                runner.watch(lambda: shown() and deadline is not None and time.monotonic() >= deadline)
        failed = False
        return 0
    except KeyboardInterrupt:
        failed = False
        print("cityseeker ar: stopped; every process it started is stopped", file=sys.stderr, flush=True)
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(secrets_dir, ignore_errors=True)
        if temporary and failed:
            print(f"ar: node logs kept in {root / 'ros'}", file=sys.stderr, flush=True)
        elif temporary:
            shutil.rmtree(root, ignore_errors=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class Announce:
    """Prints the page's address once the server says it serves (from its log), and after that
    the server's own lines (ready, stopped). Called from the runner's poll."""

    def __init__(self, log: Path, url: str, lan: bool, fingerprint: str, console: str = "") -> None:
        self.log, self.url, self.lan, self.fingerprint, self.console = log, url, lan, fingerprint, console
        self.done, self._offset, self._started = False, 0, time.monotonic()

    def __call__(self) -> bool:
        if not self.log.is_file():
            return False
        with open(self.log, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self._offset += end
        for line in data[:end].decode("utf-8", "replace").splitlines():
            if line.startswith(SERVING) and not self.done:
                self.done = True
                print(f"open on the phone: {self.url}", flush=True)
                if self.lan:
                    print_qr(self.url)
                    print(f"the browser will warn about the self-signed certificate: its SHA-256 fingerprint is "
                          f"{self.fingerprint}", flush=True)
                if self.console:
                    print(f"operator console: {self.console}", flush=True)
                print("the page says what it waits for; Ctrl-C stops the trial", flush=True)
            elif "ready for a need" in line:
                print("ar: the Seek server answers: the page can start a Seek", flush=True)
        return True
