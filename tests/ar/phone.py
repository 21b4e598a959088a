"""The emulated phone of the AR tests and of benchmarks/ar_latency.py: a trial started by the real
command (`cityseeker ar`), an independent ROS counter beside it, Chromium's fake camera fed with
a video of the world's rendered views, and a walker that moves the emulated position along each
guided edge and turns the emulated compass the way the arrow points.

Every process is started here and stopped by its PID (SIGINT for the trial, so it stops its own
node set; the counter and the browser by SIGTERM)."""
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.streets.geodesy import destination, geodesic_m, initial_bearing_deg
from cityseeker_ros.ros import env as ros
from tests.ar.browser import Browser, Page, write_y4m

REPO = Path(__file__).resolve().parents[2]
WORLD = REPO / "worlds" / "monaco"
URL = re.compile(r"open on the phone: (http\S+)")


def make_video(world: Path, out: Path, frames: int = 12) -> Path:
    """A Y4M of perspective views rendered along the world's first task route (640x480, 5 fps)."""
    from cityseeker_ros.core.datasets import load_dataset
    from cityseeker_ros.core.render import Renderer, RenderSettings
    from cityseeker_ros.core.worlds.folder import load_scene_and_graph

    scene, graph = load_scene_and_graph(world)
    episode = load_dataset(world)[0].episodes[0]
    renderer = Renderer(scene, graph, RenderSettings.from_mapping({}, "--set"))
    route = list(episode.reference_path)[:frames] or [episode.start]
    images = []
    for node in (route * frames)[:frames]:
        view = renderer.perspective(node, graph.nodes[node].heading, fov_deg=65.0, width=640, height=480)
        images.append(view.image)
    return write_y4m(out, images)


class Trial:
    """`cityseeker ar` on a leased ROS domain with a counter process; `url`, `counts()`, `stats()`."""

    def __init__(self, tmp: Path, world: Path = WORLD, policy: str = "ocr-embed", max_steps: int = 4,
                 extra: tuple[str, ...] = ()) -> None:
        self.tmp, self.stack = Path(tmp), ExitStack()
        self.domain = self.stack.enter_context(ros.lease_domain())
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        command = [sys.executable, "-m", "cityseeker_ros.cli", "ar", "--world", str(world), "--policy", policy,
                   "--max-steps", str(max_steps), "--port", "0", "--domain-id", str(self.domain),
                   "--out", str(self.tmp / "trial"), *extra]
        self.log = open(self.tmp / "trial.out", "w+")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        self.counter_file = self.tmp / "ros_counts.json"
        self.counter = subprocess.Popen(ros.python_module_command("tests.ar.ros_counter", str(self.counter_file)),
                                        env=ros.ros_env(domain_id=self.domain), cwd=REPO,
                                        stdout=subprocess.DEVNULL, stderr=open(self.tmp / "counter.err", "w"))
        self.url = self._wait_url(180.0)
        self.origin = re.match(r"(https?://[^/]+)", self.url).group(1)
        self.token = re.search(r"token=([^&\s]+)", self.url).group(1)

    def output(self) -> str:
        return (self.tmp / "trial.out").read_text()

    def _wait_url(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = URL.search(self.output())
            if found:
                return found.group(1)
            if self.process.poll() is not None:
                raise RuntimeError(f"cityseeker ar exited {self.process.returncode}:\n{self.output()}")
            time.sleep(0.2)
        raise TimeoutError(f"no URL within {timeout_s:g} s:\n{self.output()}")

    def wait_ready(self, timeout_s: float = 240.0) -> None:
        """Until the Seek server has answered the server's probe."""
        deadline = time.monotonic() + timeout_s
        while "the page can start a Seek" not in self.output():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Seek server never answered:\n{self.output()}")
            time.sleep(0.2)

    def counts(self) -> dict[str, Any]:
        try:
            return json.loads(self.counter_file.read_text())
        except (OSError, ValueError):
            return {"frames": 0, "fixes": 0, "goals": 0, "commands": [], "guidance": [], "at": 0.0}

    async def stats(self) -> dict[str, Any]:
        import aiohttp

        async with aiohttp.ClientSession() as http:
            async with http.get(f"{self.origin}/stats?token={self.token}") as r:
                return await r.json()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # the command stops its node set, then itself
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.counter.poll() is None:
            self.counter.terminate()
            try:
                self.counter.wait(10)
            except subprocess.TimeoutExpired:
                self.counter.kill()
        self.log.close()
        self.stack.close()


COMPASS_PERIOD_MS = 200  # a phone's compass fires many times a second, still or not


async def heading(page: Page, heading_deg: float) -> None:
    """The compass, from now on pointing at `heading_deg`. The DevTools override is set
    (DeviceOrientation.setDeviceOrientationOverride), but Chromium 156 on Linux delivers no
    orientation event from it, headless or under Xvfb (nor from Emulation.setSensorOverrideReadings),
    so the reading is also dispatched as the `deviceorientationabsolute` event a phone's browser
    fires, through the page's own listeners, and again every COMPASS_PERIOD_MS as a phone's sensor
    does (the page holds a reading older than 2 s stale)."""
    alpha = (360.0 - heading_deg) % 360.0
    try:
        await page.heading(heading_deg)
    except RuntimeError:
        pass
    await page.js(f"""(() => {{
        window.__compassAlpha = {alpha};
        const fire = () => window.dispatchEvent(new DeviceOrientationEvent('deviceorientationabsolute',
            {{alpha: window.__compassAlpha, beta: 90, gamma: 0, absolute: true}}));
        if (!window.__compass) window.__compass = setInterval(fire, {COMPASS_PERIOD_MS});
        fire();
        return true;
    }})()""")


async def open_phone(browser: Browser, trial: Trial, lat: float, lon: float, heading_deg: Optional[float],
                     accuracy_m: float = 4.0, query: str = "", camera: bool = True, before: str = "") -> Page:
    """A tab with geolocation (and the camera, unless `camera` is False) allowed at (lat, lon), the
    page open and the compass set (none when `heading_deg` is None). Nothing is tapped: Chromium
    gives the compass without "Allow compass", as Android does. `before`: a script that runs
    before the page's own (e.g. to stand in for another browser's API)."""
    page = await browser.page()
    await page.grant(trial.origin, "geolocation", "sensors", *(("videoCapture",) if camera else ()))
    await page.position(lat, lon, accuracy_m)
    if before:
        await page.call("Page.addScriptToEvaluateOnNewDocument", source=before)
    await page.open(trial.url + query)
    if heading_deg is not None:
        await heading(page, heading_deg)
    return page


async def walk(page: Page, lat: float, lon: float, to_lat: float, to_lon: float, points: int = 4,
               pause_s: float = 0.3, accuracy_m: float = 4.0) -> None:
    """Along the edge in `points` fixes, ending on its far node."""
    distance = geodesic_m(lat, lon, to_lat, to_lon)
    bearing = initial_bearing_deg(lat, lon, to_lat, to_lon)
    for i in range(1, points + 1):
        if i == points:
            at = (to_lat, to_lon)
        else:
            at = destination(lat, lon, bearing, distance * i / points)
        await page.position(at[0], at[1], accuracy_m)
        await asyncio.sleep(pause_s)


async def ar_state(page: Page) -> dict[str, Any]:
    """The page's counters (window.__ar) and what it spoke (window.__spoken, the test's probe)."""
    return json.loads(await page.js("JSON.stringify({ar: window.__ar, spoken: window.__spoken || []})"))


async def wait_ready_page(page: Page, timeout_s: float = 60.0) -> None:
    """Until the page waits for nothing (server, camera, fix, heading)."""
    try:
        await page.wait_for("[...document.querySelectorAll('#waiting li')].every(li => li.hidden)", timeout_s)
    except TimeoutError:
        waits = await page.js("[...document.querySelectorAll('#waiting li')].filter(li => !li.hidden)"
                              ".map(li => li.textContent).join('; ')")
        raise TimeoutError(f"the page still waits after {timeout_s:g} s: {waits}; {await ar_state(page)}") from None


async def seek(page: Page, need: str) -> None:
    await page.js(f"document.getElementById('need').value = {json.dumps(need)}; "
                  "document.getElementById('go').click(); true")


async def guided_walk(page: Page, graph: Any, start: str, *, step_timeout_s: float = 60.0,
                      on_guidance: Optional[Any] = None, max_steps: int = 100,
                      baseline: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Follow each guidance shown from now until the next result is shown: turn to its heading,
    walk to its next node. `on_guidance(index, state)` (index from 1) is awaited after each one is
    shown. `baseline`: the page's state before the need was sent (default: now). The page's final
    state, with `node`, where the walker stands."""
    state = baseline if baseline is not None else await ar_state(page)
    node, seen, ended = start, state["ar"]["guidanceShown"], len(state["ar"]["results"])
    first = seen
    while True:
        await page.wait_for(f"window.__ar.guidanceShown > {seen} || window.__ar.results.length > {ended}",
                            step_timeout_s)
        state = await ar_state(page)
        if state["ar"]["guidanceShown"] > seen:
            seen = state["ar"]["guidanceShown"]
            g = state["ar"].get("lastGuidance") or {}
            if on_guidance is not None:
                await on_guidance(seen - first, state)
            next_node = g.get("next_node")
            if next_node and next_node in graph.nodes:
                here, there = graph.nodes[node], graph.nodes[next_node]
                if g.get("heading_deg") is not None:
                    await heading(page, float(g["heading_deg"]))
                await walk(page, here.lat, here.lon, there.lat, there.lon)
                node = next_node
        if len(state["ar"]["results"]) > ended or seen - first >= max_steps:
            await page.wait_for(f"window.__ar.results.length > {ended}", step_timeout_s)
            return {**await ar_state(page), "node": node}
