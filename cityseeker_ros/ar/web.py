"""The AR page's server: one page, one WebSocket, the token on both, and nothing else.

aiohttp serves HTTP and WebSocket from one asyncio loop with TLS from the standard library, so
the LAN switch is a certificate and an ssl context, not a second server. Every message the page
sends goes through core.ar.session.ArSession (checked, counted, kept or dropped) before the
`Stack` (the ROS side, ar/bridge.py) sees it; what the stack says comes back as events, which
this loop turns into messages for every connected page. Each WebSocket is its own page in the
session: what it waits for (its status) and whether its need may start a Seek depend on what it
sent, never on what another page sent before or beside it.
"""
from __future__ import annotations

import asyncio
import bisect
import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, Optional, Protocol

from aiohttp import WSMsgType, web

from cityseeker_ros.ar.site import site, static_file
from cityseeker_ros.core.ar.protocol import Cancel, Fix, Frame, Heading, Need, Shown, server_message
from cityseeker_ros.core.ar.session import ArSession

# aiohttp closes a connection whose message exceeds its limit; above ours and below this one a
# message is counted and dropped while the connection keeps serving.
WS_HARD_LIMIT = 4 * 1024 * 1024
STATUS_PERIOD_S = 1.0
FRAMES_KEPT = 64  # frames remembered to tell a view set which frame it was built from
LOG = logging.getLogger("cityseeker_ros.ar")


class Stack(Protocol):
    """What the server asks of the ROS side; each call returns at once (the work is queued)."""

    def frame(self, frame: Frame, stamp_s: float) -> None: ...

    def fix(self, fix: Fix, stamp_s: float) -> None: ...

    def seek(self, need: Need) -> None: ...

    def cancel(self) -> None: ...


class ArServer:
    """The page's server. `event(kind, body)` is how the stack reports (call it on this loop,
    e.g. through `post`): ready, note, view_set, decision, guidance, feedback, result."""

    def __init__(self, session: ArSession, stack: Stack, token: str, wall: Callable[[], float] = time.time) -> None:
        self.session, self.stack, self.token, self.wall = session, stack, token, wall
        self.clients: dict[web.WebSocketResponse, int] = {}  # each socket's page in the session
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self._frames: deque[tuple[float, float]] = deque(maxlen=FRAMES_KEPT)  # (published wall s, captured ms)
        self._frame_of: dict[str, float] = {}  # view_set_id -> captured ms of the frame it was built from
        self._decision_s: dict[str, float] = {}
        self.latencies_ms: list[float] = []
        self.decisions_s: list[float] = []
        self.cancelled_at: Optional[float] = None

    # -- HTTP --------------------------------------------------------------------------------------

    def app(self) -> web.Application:
        """The page alone behind the token (ar.site.site(token, this, console) serves it with the console)."""
        return site(self.token, self)

    # -- as a part of the site (ar/site.py) -----------------------------------------------------------

    prefix = "/"
    public = ("/app.js", "/style.css")  # code and style only: nothing to stream to, no goal to send

    @property
    def counts(self) -> Counter[str]:
        return self.session.counts

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/", static_file("index.html", "text/html"))
        app.router.add_get("/ws", self._socket)
        app.router.add_get("/stats", self._stats)
        app.router.add_get("/app.js", static_file("app.js", "text/javascript"))
        app.router.add_get("/style.css", static_file("style.css", "text/css"))
        app.on_startup.append(self._started)
        app.on_cleanup.append(self._stopped)

    async def _stats(self, request: web.Request) -> web.Response:
        """Counters and figures for tests and benchmarks/ar_latency.py (token required)."""
        return web.json_response({"counts": dict(self.session.counts), "latencies_ms": self.latencies_ms,
                                  "decisions_s": self.decisions_s, "cpu_s": time.process_time(),
                                  "waiting": {str(page): [k for k, _ in self.session.waiting(page)]
                                              for page in self.clients.values()},
                                  "clients": len(self.clients), "goal_active": self.session.goal_active})

    async def _started(self, app: web.Application) -> None:
        self.loop = asyncio.get_running_loop()
        self._status_task = asyncio.create_task(self._status_loop())

    async def _stopped(self, app: web.Application) -> None:
        self._status_task.cancel()

    # -- the WebSocket ------------------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=WS_HARD_LIMIT, heartbeat=20.0)
        await ws.prepare(request)
        page = self.session.open_page()
        self.clients[ws] = page
        self.session.counts["ws.connected"] += 1
        await self._send(ws, self._status(page))
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY:
                    await self._on_frame(ws, page, msg.data)
                elif msg.type == WSMsgType.TEXT:
                    await self._on_text(ws, page, msg.data)
                elif msg.type == WSMsgType.ERROR:
                    self.session.counts["message.dropped.ws_error"] += 1
        finally:
            self.clients.pop(ws, None)
            self.session.close_page(page)
        return ws

    async def _on_frame(self, ws: web.WebSocketResponse, page: int, data: bytes) -> None:
        frame = self.session.frame(page, data)
        if frame is None:
            await self._send(ws, server_message("dropped", what=self.session.last_drop))
            return
        now = self.wall()
        self.stack.frame(frame, now)
        self._frames.append((now, frame.captured_ms))
        await self._send(ws, server_message("ack", captured_ms=frame.captured_ms))

    async def _on_text(self, ws: web.WebSocketResponse, page: int, text: str) -> None:
        message = self.session.text(page, text)
        if message is None:
            if self.session.last_coarse:
                await self._send(ws, self._status(page))  # a coarse fix: say at once what is awaited
            else:
                await self._send(ws, server_message("dropped", what=self.session.last_drop))
            return
        if isinstance(message, Fix):
            self.stack.fix(message, self.wall())
        elif isinstance(message, Need):
            refusal = self.session.need(page, message)
            if refusal is not None:
                await self._send(ws, server_message("refused", code=refusal.code, reason=refusal.reason,
                                                    missing=list(refusal.missing)))
                return
            self.cancelled_at = None
            self.stack.seek(message)
            await self._broadcast(server_message("started", need=message.text.strip()))
        elif isinstance(message, Cancel):
            if self.session.goal_active:
                self.cancelled_at = self.wall()
                self.stack.cancel()
                await self._broadcast(server_message("cancelling"))
        elif isinstance(message, Shown):
            self.latencies_ms.append(message.latency_ms)
        elif isinstance(message, Heading):
            pass  # kept by the session as this page's; it goes with the page's next fix

    # -- the stack's events -------------------------------------------------------------------------

    def post(self, kind: str, body: dict[str, Any]) -> None:
        """Thread-safe: hand an event from the ROS thread to this loop."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.event(kind, body)))

    async def event(self, kind: str, body: dict[str, Any]) -> None:
        if kind == "ready":
            self.session.stack_ready = True
            await self._broadcast_status()
        elif kind == "note":
            self.session.stack_note = str(body.get("text", ""))
        elif kind == "view_set":  # the frame it was built from: the newest published before it
            self._frame_of[body["view_set_id"]] = self._frame_before(float(body["stamp_s"]))
        elif kind == "decision":
            self._decision_s[body["view_set_id"]] = float(body["latency_s"])
            self.decisions_s.append(float(body["latency_s"]))
        elif kind == "guidance":
            if self.cancelled_at is not None or not self.session.goal_active:
                self.session.counts["guidance.after_end"] += 1  # never shown: the goal is over
                return
            vid = body.get("view_set_id", "")
            self.session.counts["guidance.sent"] += 1
            await self._broadcast(server_message("guidance", **body, frame_captured_ms=self._frame_of.get(vid),
                                                 decision_s=self._decision_s.get(vid)))
        elif kind == "feedback":
            if self.cancelled_at is None:
                await self._broadcast(server_message("feedback", **body))
        elif kind == "result":
            self.session.ended()
            if body.get("outcome") == "rejected" and body.get("code") == "not_ready":
                self.session.stack_ready = False
            await self._broadcast(server_message("result", **body))
            await self._broadcast_status()

    def _frame_before(self, stamp_s: float) -> Optional[float]:
        frames = list(self._frames)
        i = bisect.bisect_right([t for t, _ in frames], stamp_s)
        return frames[i - 1][1] if i else None

    # -- status ---------------------------------------------------------------------------------------

    def _status(self, page: int) -> str:
        """What this page waits for (its own inputs and the stack's readiness)."""
        return server_message("status", waiting=[[k, line] for k, line in self.session.waiting(page)],
                              goal_active=self.session.goal_active, min_accuracy_m=self.session.min_accuracy_m)

    async def _broadcast_status(self) -> None:
        for ws, page in list(self.clients.items()):
            if page in self.session.pages:  # not closed while an earlier send awaited
                await self._send(ws, self._status(page))

    async def _status_loop(self) -> None:
        while True:
            await asyncio.sleep(STATUS_PERIOD_S)
            await self._broadcast_status()

    async def _broadcast(self, text: str) -> None:
        for ws in list(self.clients):
            await self._send(ws, text)

    async def _send(self, ws: web.WebSocketResponse, text: str) -> None:
        if ws.closed:
            return
        try:
            await ws.send_str(text)
        except (ConnectionError, RuntimeError):  # the page went away mid-send
            self.clients.pop(ws, None)
