"""`--console` on `cityseeker seek` and `cityseeker run camera|vehicle`: the operator console as one
more process of the node set (ar/serve.py --no-phone, docs/operator.md), on loopback, behind a
one-time token kept in a private folder (0700, the file 0600) that is removed with the run.
`cityseeker ar` serves the console on its own site instead (ar/command.py)."""
from __future__ import annotations

import contextlib
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.ar.token import new_token
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.ros.runner import NodeSpec

CONSOLE_SERVER = "console_server"
DEFAULT_CONSOLE_PORT = 8766
HOST = "127.0.0.1"
ANNOUNCE_WITHIN_S = 120.0


def add_options(parser: Any) -> None:
    parser.add_argument("--console", action="store_true", help="also serve the operator console in the browser "
                        "(the map, the views and decisions, the safety state, hold and e-stop; docs/operator.md) "
                        "on loopback; its address with a one-time token is printed")
    parser.add_argument("--console-port", type=int, default=DEFAULT_CONSOLE_PORT,
                        help=f"the console's port (default {DEFAULT_CONSOLE_PORT}; 0: a free one)")


@dataclass
class ConsoleLaunch:
    """The console's process for a node set (none without --console) and its address."""

    nodes: tuple[NodeSpec, ...] = ()
    url: str = ""
    port: int = 0
    said: list[bool] = field(default_factory=lambda: [False])

    def announce(self) -> None:
        """Print the address once the server accepts connections (the node set has just started;
        the server takes a few seconds to draw the world's map), from a thread of its own, so the
        run goes on meanwhile."""
        if self.url and not self.said[0]:
            self.said[0] = True
            threading.Thread(target=self._when_serving, name="console-announce", daemon=True).start()

    def _when_serving(self) -> None:
        deadline = time.monotonic() + ANNOUNCE_WITHIN_S
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((HOST, self.port), timeout=1.0):
                    print(f"operator console: {self.url}", flush=True)
                    return
            except OSError:
                time.sleep(0.2)
        print(f"operator console: not serving after {ANNOUNCE_WITHIN_S:g} s (see {CONSOLE_SERVER}.log)", flush=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def console_launch(args: Any, world: str, safety_config: str, run_max_steps: int) -> Iterator[ConsoleLaunch]:
    """The console's NodeSpec for `args.console`, its token written for the run and removed after it."""
    if not getattr(args, "console", False):
        yield ConsoleLaunch()
        return
    port: Optional[int] = args.console_port
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"--console-port must be from 0 to 65535, got {port!r}")
    port = port or _free_port()
    folder = Path(tempfile.mkdtemp(prefix="cityseeker-console-"))
    try:
        token = new_token()
        token_file = folder / "token"
        token_file.touch(mode=0o600)
        token_file.write_text(token, encoding="utf-8")
        argv = ["--no-phone", "--console-world", str(Path(world).resolve()), "--token-file", str(token_file),
                "--host", HOST, "--port", str(port), "--run-max-steps", str(run_max_steps)]
        if safety_config:
            argv += ["--console-safety", str(Path(safety_config).resolve())]
        yield ConsoleLaunch((NodeSpec(CONSOLE_SERVER, "cityseeker_ros.ar.serve", argv=tuple(argv)),),
                            f"http://{HOST}:{port}/console?token={token}", port)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
