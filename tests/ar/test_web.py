"""The AR server's web side on a real socket (aiohttp), its ROS side replaced by a recorder: the
token on every route, what is passed on, what the page is told, and which frame a guidance came from."""
from __future__ import annotations

import asyncio
import json
import time

import aiohttp
from aiohttp.test_utils import TestClient, TestServer

from cityseeker_ros.ar.web import WS_HARD_LIMIT, ArServer
from cityseeker_ros.core.ar.protocol import encode_frame
from cityseeker_ros.core.ar.session import ArSession
from tests.core.ar.test_protocol import jpeg

TOKEN = "t" * 32


class Recorder:
    """Stands in for ar/bridge.py: records what would reach ROS."""

    def __init__(self) -> None:
        self.frames, self.fixes, self.goals, self.cancels = [], [], [], 0

    def frame(self, frame, stamp_s):
        self.frames.append((frame, stamp_s))

    def fix(self, fix, stamp_s):
        self.fixes.append(fix)

    def seek(self, need):
        self.goals.append(need)

    def cancel(self):
        self.cancels += 1


async def _client(server: ArServer) -> TestClient:
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    return client


async def _until(ws, kind: str, timeout_s: float = 10.0) -> dict:
    """The next message of `kind` (the status comes every second, so the deadline is overall)."""
    deadline = time.monotonic() + timeout_s
    seen = []
    while time.monotonic() < deadline:
        msg = json.loads((await ws.receive(timeout=5)).data)
        if msg["type"] == kind:
            return msg
        seen.append(msg["type"])
    raise TimeoutError(f"no {kind!r} message within {timeout_s:g} s; got {seen}")


def test_without_the_token_every_route_is_403_and_nothing_is_passed_on():
    async def go():
        stack = Recorder()
        server = ArServer(ArSession(), stack, TOKEN)
        client = await _client(server)
        try:
            for path in ("/", "/ws", "/stats", f"/?token={TOKEN[:-1]}", f"/ws?token={TOKEN}x"):
                assert (await client.get(path)).status == 403, path
            assert (await client.get(f"/?token={TOKEN}")).status == 200
            assert (await client.get("/app.js")).status == 200  # code only: no stream, no goal
            return stack, server.session.counts["http.forbidden"]
        finally:
            await client.close()

    stack, forbidden = asyncio.run(go())
    assert forbidden == 5 and not stack.frames and not stack.fixes and not stack.goals


def test_frames_and_fixes_pass_a_need_waits_and_guidance_names_its_frame():
    async def go():
        stack = Recorder()
        server = ArServer(ArSession(), stack, TOKEN, wall=iter(range(100, 1000)).__next__)
        client = await _client(server)
        try:
            ws = await client.ws_connect(f"/ws?token={TOKEN}")
            status = await _until(ws, "status")
            assert [k for k, _ in status["waiting"]] == ["server", "camera", "fix", "heading"]
            await ws.send_str('{"type":"need","text":"I am thirsty"}')
            refused = await _until(ws, "refused")
            await server.event("ready", {})
            await ws.send_bytes(encode_frame(jpeg(64, 48), 5.0))  # published at wall 100
            assert (await _until(ws, "ack"))["captured_ms"] == 5.0
            await ws.send_bytes(encode_frame(jpeg(64, 48), 9.0))  # at 101
            await _until(ws, "ack")
            await ws.send_str('{"type":"fix","lat":43.7,"lon":7.4,"accuracy_m":3,"heading_deg":90}')
            await ws.send_str('{"type":"need","text":"I am thirsty","max_steps":3}')
            await _until(ws, "started")
            await server.event("view_set", {"view_set_id": "v1", "stamp_s": 100.5})
            await server.event("decision", {"view_set_id": "v1", "latency_s": 0.25})
            await server.event("guidance", {"view_set_id": "v1", "text": "Turn left"})
            guidance = await _until(ws, "guidance")
            await ws.send_str('{"type":"cancel"}')
            await _until(ws, "cancelling")
            await server.event("guidance", {"view_set_id": "v2", "text": "late"})
            await ws.send_str('{"type":"shown","view_set_id":"v1","latency_ms":42}')
            await ws.send_str('{"type":"heading","heading_deg":1}')
            await asyncio.sleep(0.05)
            await ws.close()
            return stack, refused, guidance, server
        finally:
            await client.close()

    stack, refused, guidance, server = asyncio.run(go())
    assert refused["code"] == "waiting"
    assert len(stack.frames) == 2 and len(stack.fixes) == 1 and [g.max_steps for g in stack.goals] == [3]
    assert guidance["frame_captured_ms"] == 5.0 and guidance["decision_s"] == 0.25  # the frame before the view set
    assert stack.cancels == 1 and server.session.counts["guidance.after_end"] == 1
    assert server.latencies_ms == [42.0]


async def _ready_page(ws, heading: bool) -> None:
    """A frame and a good fix from this socket's page, with its compass heading unless not."""
    await ws.send_bytes(encode_frame(jpeg(64, 48), 5.0))
    await _until(ws, "ack")
    await ws.send_str('{"type":"fix","lat":43.7,"lon":7.4,"accuracy_m":3' + (',"heading_deg":90}' if heading else "}"))


def test_each_socket_is_its_own_page_and_a_seek_needs_its_own_heading():
    async def go():
        stack = Recorder()
        server = ArServer(ArSession(), stack, TOKEN)
        client = await _client(server)
        try:
            await server.event("ready", {})
            first = await client.ws_connect(f"/ws?token={TOKEN}")
            await _ready_page(first, heading=True)
            second = await client.ws_connect(f"/ws?token={TOKEN}")  # beside the first
            await _ready_page(second, heading=False)
            await second.send_str('{"type":"need","text":"I am thirsty"}')
            beside = await _until(second, "refused")
            stats = await (await client.get(f"/stats?token={TOKEN}")).json()
            await first.close()
            await second.close()
            while server.clients:
                await asyncio.sleep(0.01)
            third = await client.ws_connect(f"/ws?token={TOKEN}")  # one after the other
            status = await _until(third, "status")
            await _ready_page(third, heading=False)
            await third.send_str('{"type":"need","text":"I am thirsty"}')
            after = await _until(third, "refused")
            await third.send_str('{"type":"heading","heading_deg":180}')  # its own heading: now it starts
            await third.send_str('{"type":"need","text":"I am thirsty"}')
            started = await _until(third, "started")
            await third.close()
            while server.clients:
                await asyncio.sleep(0.01)
            return stack, beside, stats, status, after, started, server
        finally:
            await client.close()

    stack, beside, stats, status, after, started, server = asyncio.run(go())
    for refused in (beside, after):
        assert refused["code"] == "waiting" and refused["missing"] == ["heading"], refused
        assert refused["reason"].startswith("waiting for the compass heading: this page has sent none"), refused
    assert sorted(stats["waiting"].values()) == [[], ["heading"]]  # each page's own status
    assert [k for k, _ in status["waiting"]] == ["camera", "fix", "heading"]
    assert started["need"] == "I am thirsty" and len(stack.goals) == 1
    assert [f.heading_deg for f in stack.fixes] == [90.0, None, None]  # no fix borrowed a heading
    assert server.session.pages == {} and server.session.counts["goal.refused.waiting.heading"] == 2


def test_a_message_over_the_hard_limit_closes_only_its_own_socket():
    async def go():
        server = ArServer(ArSession(), Recorder(), TOKEN)
        client = await _client(server)
        try:
            ws = await client.ws_connect(f"/ws?token={TOKEN}", max_msg_size=0)
            await _until(ws, "status")
            try:
                await ws.send_bytes(b"\xff" * (WS_HARD_LIMIT + 1))
                closed = (await ws.receive(timeout=5)).type
            except ConnectionError:  # the server closed it while the message was still going out
                closed = aiohttp.WSMsgType.CLOSED
            other = await client.ws_connect(f"/ws?token={TOKEN}")
            status = await _until(other, "status")
            await other.close()
            return closed, status
        finally:
            await client.close()

    closed, status = asyncio.run(go())
    assert closed in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
    assert status["type"] == "status"
