"""The real node set behind the operator console, driven as the page drives it, for the console's
acceptance test (test_console_override.py) and its figures (benchmarks/console_estop.py).

The node set is exactly what `cityseeker seek ... --console` starts (cli.seek_run_config,
launcher.plan_seek, console_process.console_launch) but with no seek client: the console sends
every goal, so the run outlives each Seek (one ended by an e-stop or a pilot's takeover leaves the
bridge and the console up for the next press). The console is read and pressed over its
WebSocket with the page's own messages (console.js `send`), so no Chromium is needed."""
from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import aiohttp

from cityseeker_ros import cli
from cityseeker_ros.ar.console_process import console_launch
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros import launcher
from cityseeker_ros.ros.runner import Runner

NEED = "I am thirsty"


class ConsoleSocket:
    """The console's WebSocket on a loop thread of its own: the newest `state` message (with the
    monotonic time it arrived) and `send` of a page message, stamped just before it leaves."""

    def __init__(self, url: str) -> None:
        self.url = url  # the page's address, token included
        base, token = url.split("/console?token=")
        self.ws_url = f"{base.replace('http', 'ws', 1)}/console/ws?token={token}"
        self.state: dict[str, Any] = {}
        self.states: list[tuple[float, dict[str, Any]]] = []  # every state message: (arrival, message)
        self._changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="console-socket", daemon=True)
        self._thread.start()
        self._http: Optional[aiohttp.ClientSession] = None
        self._ws: Any = None
        self._call(self._connect())

    def _call(self, coro: Any, timeout_s: float = 20.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    async def _connect(self) -> None:
        self._http = aiohttp.ClientSession()
        self._ws = await self._http.ws_connect(self.ws_url)
        self._loop.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self._ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            body = json.loads(msg.data)
            if body.get("type") == "state":
                with self._changed:
                    self.state = body
                    self.states.append((time.monotonic(), body))
                    self._changed.notify_all()

    def send(self, message: dict[str, Any]) -> float:
        """Send one page message; the monotonic time just before it left."""
        sent = time.monotonic()
        self._call(self._ws.send_str(json.dumps(message)))
        return sent

    def wait(self, holds: Callable[[dict[str, Any]], bool], timeout_s: float, what: str = "") -> dict[str, Any]:
        """The first state (the current one included) for which `holds` is true."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not (self.state and holds(self.state)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"console: not {what or 'as expected'} within {timeout_s:g} s; "
                                       f"last state: {json.dumps(self.state)[:1500]}")
                self._changed.wait(left)
            return self.state

    def answer(self, command: str, after: int, timeout_s: float = 15.0) -> dict[str, Any]:
        """The stack's answer to `command`, the first after `after` answers had been counted."""
        state = self.wait(lambda s: s["answer_count"] > after and any(a["command"] == command for a in s["answers"]),
                          timeout_s, f"answered {command}")
        return [a for a in state["answers"] if a["command"] == command][-1]

    def close(self) -> None:
        async def shut() -> None:
            if self._ws is not None:
                await self._ws.close()
            if self._http is not None:
                await self._http.close()

        with contextlib.suppress(Exception):
            self._call(shut(), 5.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5.0)


def _wait_port(port: int, runner: Runner, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            dead = [name for name in runner.processes if runner.exited(name)]
            if dead:
                raise RuntimeError(f"{dead} exited: {runner.tail(dead[0])}") from None
            time.sleep(0.2)
    raise TimeoutError(f"console not serving on port {port} within {timeout_s:g} s")


@contextlib.contextmanager
def live_console(world: Path, out: Path, domain: int, seek_args: tuple[str, ...] = (),
                 bridge_params: Optional[dict[str, Any]] = None,
                 max_steps: int = 30) -> Iterator[tuple[ConsoleSocket, Runner]]:
    """`cityseeker seek NEED --world WORLD SEEK_ARGS --console --out OUT` without its client; the
    vehicle bridge's parameters updated with `bridge_params`. Yields the console's socket and the runner."""
    args = cli.build_parser().parse_args(["seek", NEED, "--world", str(world), "--policy", "random",
                                          "--max-steps", str(max_steps), *seek_args, "--console",
                                          "--console-port", "0", "--out", str(out)])
    run = replace(cli.seek_run_config(args), out=str(out))
    plan = launcher.plan_seek(run, NEED, max_steps=max_steps)
    assert not isinstance(plan, launcher.SeekOutcome), plan
    nodes = [replace(n, params={**n.params, **(bridge_params or {})}) if n.name == "vehicle_bridge" else n
             for n in plan.nodes]
    with console_launch(args, str(world), run.safety_config, max_steps) as console:
        runner = Runner([*nodes, *console.nodes], out / "ros", ros.ros_env(domain_id=domain), monitor=False,
                        log=lambda line: None)
        sock: Optional[ConsoleSocket] = None
        try:
            runner.start()
            _wait_port(console.port, runner, 120)
            sock = ConsoleSocket(console.url)
            sock.wait(lambda s: True, 20, "sending its state")
            yield sock, runner
        finally:
            if sock is not None:
                sock.close()
            runner.stop()


def seek_message(text: str = NEED, max_steps: int = 30) -> dict[str, Any]:
    """The page's Seek form as it sends it (console.js)."""
    return {"type": "seek", "kind": "need", "text": text, "max_steps": max_steps}


def _started(state: dict[str, Any], before: dict[str, Any]) -> bool:
    """A new Seek shows as running with no result yet (a late step of an ended one keeps its result)."""
    return state["seek"] != before and state["seek"]["state"] == "running" and state["seek"].get("result") is None


def start_seek(console: ConsoleSocket, timeout_s: float = 90.0) -> dict[str, Any]:
    """Press Seek until the node set is up (it starts in parallel: the console answers "not
    available" until the Seek server is, and the supervisor refuses `not_ready` until its decision
    node is active, as an operator would see). A goal taken shows as "starting", then as running
    from its first step (a MAVLink vehicle takes off first), or its refusal comes as the console's
    answer; {"ok": True, ...} when it runs, else the answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        before, seek = console.state["answer_count"], console.state["seek"]
        console.send(seek_message())
        state = console.wait(lambda s, before=before, seek=seek: (
            s["answer_count"] > before and s["answers"][-1]["command"] == "seek")
            or _started(s, seek), 120.0, "answered a Seek")
        if _started(state, seek):
            return {"command": "seek", "ok": True, "message": "running"}
        answer = state["answers"][-1]
        starting = "not available" in answer["message"] or "(not_ready)" in answer["message"]
        if not starting or time.monotonic() > deadline:
            return answer
        time.sleep(0.5)
