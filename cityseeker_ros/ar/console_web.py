"""The operator console's server side: its page, its map, the views of the last decision, and its
own WebSocket, as a part of the one site the phone page is served from (ar/site.py: the same
token gate, TLS and process).

Every message the console sends goes through core.console.session.ConsoleSession (parsed by the
protocol module both pages share, checked, counted, passed on or dropped) before the
`ConsoleStack` (the ROS side) sees it; what the stack reports comes back as events
(core.console.events) that fold into one state record (core.console.state), which every
connected console receives whole, at most ten times a second and at least twice, so a page that
reconnects draws the same thing at once, and "stale" reaches it even when the stack says nothing.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any, Optional, Protocol

from aiohttp import WSMsgType, web

from cityseeker_ros.ar.site import site, static_file
from cityseeker_ros.core.ar.protocol import (
    COMMAND_NAMES,
    Cancel,
    ConsoleCommand,
    EStop,
    Hold,
    ResetEStop,
    ReturnToLaunch,
    SeekGoal,
    TakeControl,
    server_message,
)
from cityseeker_ros.core.console.events import ConsoleEvent
from cityseeker_ros.core.console.session import ConsoleSession, Refused
from cityseeker_ros.core.console.state import Console

WS_HARD_LIMIT = 1024 * 1024  # above the protocol's 4 kB a message is counted and dropped; above this, closed
SEND_MIN_S, SEND_MAX_S = 0.1, 0.5  # the state goes out when it changed (at most 10 Hz) and at least every 0.5 s
LOG = logging.getLogger("cityseeker_ros.console")


class ConsoleStack(Protocol):
    """What the console asks of the ROS side: the operator's commands, each returning at once (the
    work is queued). The stack reports back through the server's `post(event)` (thread-safe)
    with core.console.events records, a CommandDone for each command saying what the vehicle did."""

    def ask_hold(self) -> None: ...

    def ask_estop(self) -> None: ...

    def ask_reset_estop(self) -> None: ...

    def ask_take_control(self) -> None: ...

    def ask_return_to_launch(self) -> None: ...

    def seek(self, goal: SeekGoal) -> None: ...

    def cancel(self) -> None: ...


_CALLS: dict[type, Callable[[ConsoleStack, Any], None]] = {
    Hold: lambda stack, c: stack.ask_hold(),
    EStop: lambda stack, c: stack.ask_estop(),
    ResetEStop: lambda stack, c: stack.ask_reset_estop(),
    TakeControl: lambda stack, c: stack.ask_take_control(),
    ReturnToLaunch: lambda stack, c: stack.ask_return_to_launch(),
    SeekGoal: lambda stack, c: stack.seek(c),
    Cancel: lambda stack, c: stack.cancel(),
}


class ConsoleServer:
    """The console's part of the site. `map_doc` is the world's map (core.console.world_map)."""

    prefix = "/console"
    public = ("/console/console.js", "/console/console.css")  # code and style only

    def __init__(self, console: Console, session: ConsoleSession, stack: ConsoleStack, token: str,
                 map_doc: dict[str, Any]) -> None:
        self.console, self.session, self.stack, self.token = console, session, stack, token
        self.map_json = json.dumps(map_doc, separators=(",", ":")).encode("utf-8")
        self.clients: set[web.WebSocketResponse] = set()
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self._changed = asyncio.Event()
        self._sender: Optional[asyncio.Task] = None

    @property
    def counts(self) -> Counter[str]:
        return self.session.counts

    def app(self) -> web.Application:
        """The console alone behind the token (site(token, phone, console) serves both)."""
        return site(self.token, self)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/console", static_file("console.html", "text/html"))
        app.router.add_get("/console/ws", self._socket)
        app.router.add_get("/console/map.json", self._map)
        app.router.add_get("/console/view/{seq:\\d+}/{index:\\d+}", self._view)
        app.router.add_get("/console/stats", self._stats)
        app.router.add_get("/console/console.js", static_file("console.js", "text/javascript"))
        app.router.add_get("/console/console.css", static_file("console.css", "text/css"))
        app.on_startup.append(self._started)
        app.on_cleanup.append(self._stopped)

    # -- HTTP --------------------------------------------------------------------------------------

    async def _map(self, request: web.Request) -> web.Response:
        response = web.Response(body=self.map_json, content_type="application/json",
                                headers={"Cache-Control": "no-store"})
        response.enable_compression()
        return response

    async def _view(self, request: web.Request) -> web.Response:
        image = self.console.view_image(int(request.match_info["seq"]), int(request.match_info["index"]))
        if image is None:
            return web.Response(status=404, text="no such view in the current decision\n")
        return web.Response(body=image[0], content_type=image[1], headers={"Cache-Control": "no-store"})

    async def _stats(self, request: web.Request) -> web.Response:
        """Counters for tests and the operator (token required)."""
        return web.json_response({"counts": dict(self.session.counts), "clients": len(self.clients),
                                  "seq": self.console.state.seq})

    async def _started(self, app: web.Application) -> None:
        self.loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        self._sender = asyncio.create_task(self._send_loop())

    async def _stopped(self, app: web.Application) -> None:
        if self._sender is not None:
            self._sender.cancel()

    # -- the WebSocket ------------------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=WS_HARD_LIMIT, heartbeat=20.0)
        await ws.prepare(request)
        self.clients.add(ws)
        self.session.counts["ws.connected"] += 1
        await self._send(ws, self._state())
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    await self._on_text(ws, msg.data)
                elif msg.type == WSMsgType.BINARY:
                    self.session.dropped("binary")
                    await self._send(ws, server_message("dropped", what=self.session.last_drop))
                elif msg.type == WSMsgType.ERROR:
                    self.session.dropped("ws_error")
        finally:
            self.clients.discard(ws)
        return ws

    async def _on_text(self, ws: web.WebSocketResponse, text: str) -> None:
        command = self.session.text(text)
        if command is None:
            await self._send(ws, server_message("dropped", what=self.session.last_drop))
            return
        if isinstance(command, Refused):
            await self._send(ws, server_message("refused", command=command.command, code=command.code,
                                                reason=command.reason))
            return
        await self._send(ws, server_message("sent", command=self.command(command)))

    def command(self, command: ConsoleCommand) -> str:
        """Hand one checked command to the stack; its name."""
        name = COMMAND_NAMES[type(command)]
        LOG.info("console: %s", name)
        _CALLS[type(command)](self.stack, command)
        return name

    # -- the stack's events -------------------------------------------------------------------------

    def post(self, event: ConsoleEvent) -> None:
        """Thread-safe: hand an event from the ROS thread to this loop."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.event, event)

    def event(self, event: ConsoleEvent) -> None:
        """Fold one event into the state (on this loop); one that cannot be placed is counted."""
        try:
            self.console.apply(event)
        except (ValueError, TypeError) as exc:
            self.session.counts[f"event.dropped.{type(event).__name__}"] += 1
            LOG.warning("console: event dropped: %s", exc)
            return
        self._changed.set()

    # -- the state out ------------------------------------------------------------------------------

    def _state(self) -> str:
        return server_message("state", **self.console.snapshot())

    async def _send_loop(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._changed.wait(), SEND_MAX_S)
            except asyncio.TimeoutError:
                pass
            self._changed.clear()
            if self.clients:
                text = self._state()
                for ws in list(self.clients):
                    await self._send(ws, text)
            await asyncio.sleep(SEND_MIN_S)

    async def _send(self, ws: web.WebSocketResponse, text: str) -> None:
        if ws.closed:
            return
        try:
            await ws.send_str(text)
        except (ConnectionError, RuntimeError):  # the page went away mid-send
            self.clients.discard(ws)
