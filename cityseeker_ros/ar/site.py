"""One aiohttp application for every browser page of a run (the AR phone page, the operator
console): one token gate in front of all of them, so one TLS context, one port and one process
serve both, and a page's routes cannot be reached without the run's token by forgetting a check.

Each page is a `Part`: the path prefix it owns, the few public paths it has (its code and style:
nothing to stream to, no command to send), the counter its refusals are counted in, and a way
to add its routes. A refused request is counted (`http.forbidden`) by the part whose prefix is
the longest that matches, and never reaches a handler."""
from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from cityseeker_ros.core.ar.token import token_ok

STATIC = Path(__file__).resolve().parent / "static"
FORBIDDEN = "403: this address needs the run's token (the URL the command printed, ?token=...)\n"


class Part(Protocol):
    """A page served by the site."""

    prefix: str  # "/" or "/console": the paths it owns (the prefix itself and below it)
    public: tuple[str, ...]  # paths served without the token: code and style only
    counts: Counter[str]

    def add_routes(self, app: web.Application) -> None: ...


def static_file(name: str, content_type: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A handler serving ar/static/NAME as it is on disk now, never cached; a page (HTML) also
    sends no referrer, so its token never leaves in a Referer header."""
    headers = {"Cache-Control": "no-store"}
    if content_type == "text/html":
        headers["Referrer-Policy"] = "no-referrer"

    async def serve(request: web.Request) -> web.Response:
        return web.Response(body=(STATIC / name).read_bytes(), content_type=content_type, headers=headers)
    return serve


def _owns(prefix: str, path: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def site(token: str, *parts: Part) -> web.Application:
    """The application of `parts`, every path behind the token but the parts' public ones."""
    if not parts:
        raise ValueError("a site needs at least one part")
    public = frozenset(p for part in parts for p in part.public)

    @web.middleware
    async def token_gate(request: web.Request, handler: Callable[[web.Request], Awaitable[Any]]) -> Any:
        if request.path not in public and not token_ok(token, request.query.get("token")):
            owner = max((p for p in parts if _owns(p.prefix, request.path)), key=lambda p: len(p.prefix),
                        default=parts[0])
            owner.counts["http.forbidden"] += 1
            return web.Response(status=403, text=FORBIDDEN)
        return await handler(request)

    app = web.Application(middlewares=[token_gate])
    for part in parts:
        part.add_routes(app)
    return app
