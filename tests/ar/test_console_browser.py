"""The operator console in real Chromium against the real console server (ar/console_web.py in
the one site, on a socket), with the ROS side faked by a replay (ReplayStack below): a walk along
the Monaco world's street graph, each node's views rendered by the project's renderer, posted as
the events the rclpy bridge would post. Faked because this test is about the page and the server:
what the console draws from those events and what a press hands to the stack; the vehicle, the
decision node and DDS are not in it.

Checked: mid-walk, a screenshot shows the map (buildings and the graph), the vehicle marker where
the page says it drew it, and the view strip with the chosen view marked; E-stop asks for a
confirm and then delivers exactly one estop; the latch shows; "stale" shows a second after the
events stop, and the page reconnects by itself when its socket is dropped."""
from __future__ import annotations

import asyncio
import io
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from aiohttp import web
from PIL import Image

from cityseeker_ros.ar.console_web import ConsoleServer
from cityseeker_ros.ar.site import site
from cityseeker_ros.core.console.events import (
    CommandDone,
    DecisionMade,
    GoingTo,
    LinkReport,
    SafetyReport,
    SeekProgress,
    SeekStarted,
    VehicleFix,
    ViewSeen,
)
from cityseeker_ros.core.console.session import ConsoleSession
from cityseeker_ros.core.console.state import Console
from cityseeker_ros.core.console.world_map import world_map
from cityseeker_ros.core.streets.geodesy import destination
from tests.ar.browser import CHROMIUM, Browser
from tests.ar.console_stack import RecordingStack

TOKEN = "o" * 32
KEEP_SCREENSHOT = os.environ.get("CITYSEEKER_CONSOLE_SCREENSHOT", "")  # e.g. docs/console_mid_seek.png
WIDTH, HEIGHT = 1280, 800
STEPS = 6


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])


def _near(pixels: np.ndarray, hex_colour: str, tol: int = 12) -> np.ndarray:
    return (np.abs(pixels - _rgb(hex_colour)) <= tol).all(axis=-1)


class ReplayStack(RecordingStack):
    """Stands in for the rclpy bridge: replays a walk of `route` as events, and answers an estop
    as the vehicle bridge would report it (the latch, the vehicle holding), ending the walk."""

    def __init__(self, server_box: list, graph, renderer, route: list[str]) -> None:
        super().__init__(on_command=self._react)
        self.box, self.graph, self.renderer, self.route = server_box, graph, renderer, route
        self.held = asyncio.Event()
        self.running = True

    def _post(self, event) -> None:
        self.box[0].event(event)

    def _react(self, name: str, argument) -> None:
        if name == "estop":
            self.held.set()
            self._post(SafetyReport(False, "estop", "e-stop latched by the operator", True))
            self._post(CommandDone("estop", True, "/estop true published: the vehicle holds"))

    def _views(self, node: str) -> tuple[ViewSeen, ...]:
        out = []
        for i, heading in enumerate(self.graph.nodes[node].walkable_headings):
            image = self.renderer.perspective(node, heading, fov_deg=90.0, width=160, height=90).image
            buf = io.BytesIO()
            Image.fromarray(image).save(buf, "JPEG", quality=80)
            out.append(ViewSeen(i, float(heading) % 360.0, "", buf.getvalue()))
        return tuple(out)

    async def walk(self) -> None:
        self._post(LinkReport("walker", "moving"))
        self._post(SeekStarted("I am thirsty"))
        for step, (a, b) in enumerate(zip(self.route, self.route[1:]), start=1):
            edge = next(e for e in self.graph.out_edges(a) if e.target == b)
            headings = self.graph.nodes[a].walkable_headings
            chosen = min(range(len(headings)), key=lambda i: abs((headings[i] - edge.azimuth + 180) % 360 - 180))
            self._post(DecisionMade(f"vs{step}", a, self._views(a), chosen, "move",
                                    f"step {step}: the street to {edge.azimuth:.0f}° looks like shops", 0.8,
                                    step, STEPS))
            self._post(GoingTo(b))
            self._post(SeekProgress(a, step, STEPS - step, f"heading {edge.azimuth:.0f}°", 20.0 * step))
            start = self.graph.nodes[a]
            for k in range(1, 11):  # ten fixes along the edge, 10 Hz
                if self.held.is_set():
                    return
                lat, lon = destination(start.lat, start.lon, edge.azimuth, edge.length_m * k / 10)
                self._post(VehicleFix(lat, lon, edge.azimuth))
                self._post(SafetyReport(True, "ok", "moving to the next node", False))
                await asyncio.sleep(0.1)
        while not self.held.is_set():  # arrived: the walker holds and keeps reporting
            self._post(SafetyReport(False, "ok", "holding", False))
            await asyncio.sleep(0.1)


async def _serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site_ = web.TCPSite(runner, "127.0.0.1", 0)
    await site_.start()
    return runner, site_._server.sockets[0].getsockname()[1]


async def _click(page, element_id: str) -> None:
    """A real mouse press at the element's centre (Input.dispatchMouseEvent), not a script's click()."""
    box = json.loads(await page.js(f"JSON.stringify(document.getElementById('{element_id}').getBoundingClientRect())"))
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    for kind in ("mousePressed", "mouseReleased"):
        await page.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)


def test_the_console_follows_a_walk_on_monaco_and_one_estop_press_reaches_the_stack_once(monaco_dir, tmp_path):
    if CHROMIUM is None:
        pytest.skip("chromium not installed: apt-get install chromium (make test installs it)")
    from cityseeker_ros.core.datasets import load_dataset
    from cityseeker_ros.core.render import Renderer, RenderSettings
    from cityseeker_ros.core.worlds.folder import load_scene_and_graph

    scene, graph = load_scene_and_graph(monaco_dir)
    episode = load_dataset(monaco_dir)[0].episodes[0]
    route = list(graph.shortest_path(episode.start, episode.target))[:STEPS + 1]
    assert len(route) >= 4, route
    renderer = Renderer(scene, graph, RenderSettings.from_mapping({}, "--set"))
    map_doc = world_map(monaco_dir)

    async def go():
        box: list = []
        stack = ReplayStack(box, graph, renderer, route)
        server = ConsoleServer(Console.for_map(map_doc), ConsoleSession(), stack, TOKEN, map_doc)
        box.append(server)
        runner, port = await _serve(site(TOKEN, server))
        browser = Browser()
        walk = None
        try:
            page = await browser.page()
            await page.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1,
                            mobile=False)
            await page.open(f"http://127.0.0.1:{port}/console?token={TOKEN}")
            await page.wait_for("window.__console.mapLoaded && window.__console.states > 0", 30)
            walk = asyncio.create_task(stack.walk())
            await page.wait_for("window.__console.viewsShown >= 3 && window.__console.vehiclePx", 60)
            await page.wait_for("[...document.querySelectorAll('#views img')].every((i) => i.complete "
                                "&& i.naturalWidth > 0)", 10)
            shot = await page.screenshot(tmp_path / "console_mid_walk.png")
            if KEEP_SCREENSHOT:
                Path(KEEP_SCREENSHOT).write_bytes(shot.read_bytes())
            drawn = json.loads(await page.js("JSON.stringify({v: window.__console.vehiclePx, "
                                             "map: document.getElementById('map').getBoundingClientRect(), "
                                             "views: document.getElementById('views').getBoundingClientRect(), "
                                             "chosen: document.querySelectorAll('#views .view.chosen').length, "
                                             "stale: window.__console.stale})"))
            before = list(stack.names())
            await _click(page, "estop")  # asks for the confirm: nothing is sent yet
            await page.wait_for("!document.getElementById('estop-confirm').hidden", 5)
            after_first = list(stack.names())
            await _click(page, "estop-yes")
            await page.wait_for("window.__console.sent.includes('estop')", 10)
            await page.wait_for("!document.getElementById('estop-badge').hidden", 5)
            await page.wait_for("document.getElementById('answer').textContent.startsWith('estop: done')", 5)
            await walk
            await page.wait_for("window.__console.stale", 5)  # the events stopped with the walk
            went_stale_at = time.monotonic()
            for ws in list(server.clients):  # the socket drops: the page reconnects by itself
                await ws.close()
            await page.wait_for("window.__console.connects >= 2", 10)
            server.event(SafetyReport(False, "estop", "e-stop latched by the operator", True))
            await page.wait_for("!window.__console.stale", 5)
            await page.close()
            return stack, before, after_first, drawn, shot, went_stale_at
        finally:
            if walk is not None and not walk.done():
                walk.cancel()
            browser.close()
            await runner.cleanup()

    stack, before, after_first, drawn, shot, _ = asyncio.run(go())
    assert before == [] and after_first == []  # the first press only asks for the confirm
    assert stack.names() == ["estop"]  # exactly one estop reached the stack
    assert drawn["chosen"] == 1 and not drawn["stale"]

    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    m = drawn["map"]
    map_px = pixels[int(m["top"]):int(m["bottom"]), int(m["left"]):int(m["right"])]
    assert _near(map_px, "#5a6470").sum() > 2000, "no buildings drawn on the map"
    assert _near(map_px, "#3d8bfd", 20).sum() > 300, "no street graph drawn on the map"
    u, v = int(round(m["left"] + drawn["v"][0])), int(round(m["top"] + drawn["v"][1]))  # canvas to page
    around = pixels[max(0, v - 20):v + 20, max(0, u - 20):u + 20]
    assert _near(around, "#ff1744", 20).sum() > 80, "no vehicle marker where the page drew it"
    assert _near(pixels, "#ff9800", 20).sum() > 30, "no path behind the vehicle"
    s = drawn["views"]
    strip = pixels[int(s["top"]):int(s["bottom"]), int(s["left"]):int(s["right"])]
    assert _near(strip, "#00e676", 20).sum() > 600, "the chosen view is not marked"
    assert strip.std() > 20, "the view strip shows no images"
