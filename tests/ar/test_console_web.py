"""The console's server on a real socket (aiohttp), its ROS side replaced by a recorder
(tests/ar/console_stack.py: what these tests check ends at the stack's interface): the token on
every route, the phone page and the console in one site, malformed messages counted and dropped,
each command handed over exactly once, and the state pushed whole with "stale" from the clock."""
from __future__ import annotations

import asyncio
import json
import time

from aiohttp.test_utils import TestClient, TestServer

from cityseeker_ros.ar.console_web import ConsoleServer
from cityseeker_ros.ar.site import site
from cityseeker_ros.ar.web import ArServer
from cityseeker_ros.core.ar.protocol import SeekGoal
from cityseeker_ros.core.ar.session import ArSession
from cityseeker_ros.core.console.events import DecisionMade, SafetyReport, VehicleFix, ViewSeen
from cityseeker_ros.core.console.session import ConsoleSession
from cityseeker_ros.core.console.state import Console
from tests.ar.console_stack import RecordingStack
from tests.ar.test_web import Recorder

TOKEN = "c" * 32
# A two-node map document, as core.console.world_map makes one (the server only passes it on).
MAP = {"name": "two", "credit": "test", "origin": {"lat": 43.7372, "lon": 7.4231}, "bounds": [0, 0, 20, 0],
       "streets": [], "buildings": [], "graph": {"ids": ["a", "b"], "xy": [0, 0, 20, 0], "edges": [0, 1]},
       "geofence": None, "target": None}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _console_server(stack: RecordingStack, clock: Clock = None) -> ConsoleServer:
    console = Console.for_map(MAP, clock or Clock())
    return ConsoleServer(console, ConsoleSession(run_max_steps=35), stack, TOKEN, MAP)


async def _client(app) -> TestClient:
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


async def _until(ws, kind: str, predicate=lambda m: True, timeout_s: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        msg = json.loads((await ws.receive(timeout=5)).data)
        if msg["type"] == kind and predicate(msg):
            return msg
    raise TimeoutError(f"no {kind!r} message within {timeout_s:g} s")


def test_one_site_serves_both_pages_and_without_the_token_nothing_reaches_either_stack():
    async def go():
        stack, phone_stack = RecordingStack(), Recorder()
        console = _console_server(stack)
        phone = ArServer(ArSession(), phone_stack, TOKEN)
        client = await _client(site(TOKEN, phone, console))
        try:
            refused = ["/console", "/console/ws", "/console/map.json", "/console/stats", "/console/view/1/0",
                       f"/console?token={TOKEN[:-1]}", f"/console/ws?token={TOKEN}x", "/console?token="]
            for path in refused:
                assert (await client.get(path)).status == 403, path
            for path in ("/", "/ws", "/stats"):  # the phone page's, counted by the phone's part
                assert (await client.get(path)).status == 403, path
            for path in ("/console/console.js", "/console/console.css", "/app.js"):
                assert (await client.get(path)).status == 200, path  # code only: no stream, no command
            assert (await client.get(f"/console?token={TOKEN}")).status == 200
            assert (await client.get(f"/?token={TOKEN}")).status == 200
            got = await (await client.get(f"/console/map.json?token={TOKEN}")).json()
            return stack, phone_stack, console.counts["http.forbidden"], phone.counts["http.forbidden"], got, refused
        finally:
            await client.close()

    stack, phone_stack, console_403, phone_403, got, refused = asyncio.run(go())
    assert console_403 == len(refused) and phone_403 == 3
    assert stack.calls == [] and not phone_stack.goals and not phone_stack.fixes
    assert got == MAP


def test_a_hundred_malformed_messages_are_counted_and_dropped_and_the_socket_serves_on():
    garbage = (["{", "[]", "null", '{"type": "fly"}', '{"type": "estop"}', '{"type": "estop", "confirm": 1}',
                '{"type": "seek", "kind": "wish", "text": "x"}', '{"type": "seek", "text": null}',
                '{"type": "seek", "text": "x", "max_steps": "9"}', "x" * 5000] * 10)

    async def go():
        stack = RecordingStack()
        console = _console_server(stack)
        client = await _client(console.app())
        try:
            ws = await client.ws_connect(f"/console/ws?token={TOKEN}")
            await _until(ws, "state")
            for text in garbage:
                await ws.send_str(text)
            await ws.send_bytes(b"\x00\x01")  # the console sends no binary message
            dropped = 0
            while dropped < len(garbage) + 1:
                msg = json.loads((await ws.receive(timeout=5)).data)
                dropped += msg["type"] == "dropped"
            await ws.send_str('{"type": "hold"}')
            sent = await _until(ws, "sent")
            await ws.close()
            return stack, console.counts, sent
        finally:
            await client.close()

    stack, counts, sent = asyncio.run(go())
    assert len(garbage) == 100 and counts["dropped"] == 101
    assert counts["message.dropped.not_json"] == 10 and counts["message.dropped.oversized"] == 10
    assert counts["estop.dropped.unconfirmed"] == 20 and counts["message.dropped.binary"] == 1
    assert stack.names() == ["hold"] and sent["command"] == "hold"  # nothing malformed reached the stack


def test_each_command_reaches_the_stack_exactly_once_and_a_bad_goal_never():
    commands = [{"type": "hold"}, {"type": "estop", "confirm": True}, {"type": "reset_estop"},
                {"type": "take_control"}, {"type": "return_to_launch"},
                {"type": "seek", "kind": "landmark", "text": "north of the casino", "max_steps": 12},
                {"type": "cancel"}]

    async def go():
        stack = RecordingStack()
        console = _console_server(stack)
        client = await _client(console.app())
        try:
            ws = await client.ws_connect(f"/console/ws?token={TOKEN}")
            for body in commands:
                await ws.send_str(json.dumps(body))
                await _until(ws, "sent")
            await ws.send_str('{"type": "seek", "text": " "}')
            refused = await _until(ws, "refused")
            await ws.close()
            return stack, refused
        finally:
            await client.close()

    stack, refused = asyncio.run(go())
    assert stack.names() == ["hold", "estop", "reset_estop", "take_control", "return_to_launch", "seek", "cancel"]
    assert stack.calls[5][1] == SeekGoal("north of the casino", "landmarks", 12)
    assert refused["command"] == "seek" and refused["code"] == "bad_need"


def test_the_state_goes_out_whole_with_its_views_and_says_stale_a_second_after_the_last_event():
    async def go():
        clock = Clock()
        console = _console_server(RecordingStack(), clock)
        client = await _client(console.app())
        try:
            first = await client.ws_connect(f"/console/ws?token={TOKEN}")
            assert (await _until(first, "state"))["stale"]  # nothing came yet
            console.event(VehicleFix(43.7372, 7.4231, 45.0))
            console.event(SafetyReport(True, "ok", "moving", False))
            console.event(DecisionMade("v1", "a", (ViewSeen(0, 0.0, "front", b"\xff\xd8x\xff\xd9"),), 0, "move",
                                       "a cafe ahead", 0.5, 1, 35))
            console.event(VehicleFix(float("nan"), 7.0))  # not a position: counted, the state unchanged
            fresh = await _until(first, "state", lambda m: m["decision"] is not None)
            image = await client.get(f"/console/view/{fresh['decision']['seq']}/0?token={TOKEN}")
            body = await image.read()
            clock.now += 1.5
            stale = await _until(first, "state", lambda m: m["stale"])
            second = await client.ws_connect(f"/console/ws?token={TOKEN}")  # a reconnect: the same record at once
            again = await _until(second, "state")
            await first.close()
            await second.close()
            return fresh, image.status, body, stale, again, console.counts
        finally:
            await client.close()

    fresh, status, body, stale, again, counts = asyncio.run(go())
    assert not fresh["stale"] and fresh["vehicle"]["heading_deg"] == 45.0 and fresh["safety"]["moving"]
    assert fresh["decision"]["views"] == [{"index": 0, "heading_deg": 0.0, "relative": "front", "image": True}]
    assert status == 200 and body == b"\xff\xd8x\xff\xd9"
    assert stale["seq"] == fresh["seq"] and again["vehicle"] == fresh["vehicle"] and again["stale"]
    assert counts["event.dropped.VehicleFix"] == 1
