"""Real Chromium for the AR tests, driven over the DevTools protocol with aiohttp's WebSocket
client (no driver binary): a fake camera fed from a Y4M video, geolocation and the compass
emulated (Emulation.setGeolocationOverride, DeviceOrientation.setDeviceOrientationOverride),
speech synthesis counted by instrumenting the page before its scripts run.

The browser is a child of the test, started headless with its own profile folder, and stopped
by its PID when the test ends."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import aiohttp
import numpy as np

HEADLESS = [] if os.environ.get("AR_HEADFUL") else ["--headless=new"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")

# Counts every speechSynthesis.speak (the page's spoken guidance) without a voice: headless
# Chromium has none, and the count is what the test checks.
SPEECH_PROBE = """
(() => {
  window.__spoken = [];
  const install = () => {
    if (!('speechSynthesis' in window)) return;
    const speak = window.speechSynthesis.speak.bind(window.speechSynthesis);
    window.speechSynthesis.speak = (u) => { window.__spoken.push(u.text); try { speak(u); } catch (e) {} };
  };
  install();
})();
"""


def write_y4m(path: Path, frames: list[np.ndarray], fps: int = 5) -> Path:
    """RGB frames (H x W x 3, uint8, even sizes) as a 4:2:0 Y4M file, Chromium's fake camera format."""
    h, w = frames[0].shape[:2]
    with open(path, "wb") as out:
        out.write(f"YUV4MPEG2 W{w} H{h} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for rgb in frames:
            f = rgb.astype(np.float32)
            r, g, b = f[..., 0], f[..., 1], f[..., 2]
            y = 0.299 * r + 0.587 * g + 0.114 * b
            u = -0.168736 * r - 0.331264 * g + 0.5 * b + 128
            v = 0.5 * r - 0.418688 * g - 0.081312 * b + 128
            sub = lambda c: c.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))  # noqa: E731
            out.write(b"FRAME\n")
            for plane in (y, sub(u), sub(v)):
                out.write(np.clip(np.rint(plane), 0, 255).astype(np.uint8).tobytes())
    return path


class Browser:
    """One headless Chromium; `page()` opens a tab driven over CDP."""

    def __init__(self, video: Optional[Path] = None, fake_ui: bool = True) -> None:
        if CHROMIUM is None:
            raise RuntimeError("chromium not found: apt-get install chromium (make test installs it)")
        self.profile = Path(tempfile.mkdtemp(prefix="cityseeker-ar-chromium-"))
        args = [CHROMIUM, *HEADLESS, "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                "--autoplay-policy=no-user-gesture-required", "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}", "--use-fake-device-for-media-stream",
                "--window-size=412,915", "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows"]
        if fake_ui:
            args.append("--use-fake-ui-for-media-stream")
        if video is not None:
            args.append(f"--use-file-for-fake-video-capture={video}")
        self.process = subprocess.Popen(args + ["about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        start_new_session=True)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.is_file() or not port_file.read_text().strip():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not start: {self.process.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
        self.port = int(port_file.read_text().split()[0])

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # its own session: the browser and its helpers
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        shutil.rmtree(self.profile, ignore_errors=True)

    async def page(self) -> Page:
        async with aiohttp.ClientSession() as http:
            async with http.put(f"http://127.0.0.1:{self.port}/json/new?about:blank") as r:
                target = json.loads(await r.text())
        page = Page(target["webSocketDebuggerUrl"], self.port)
        await page.connect()
        return page


class Page:
    """A tab: `call(method, **params)` is one CDP command; `js(expr)` evaluates and returns a value."""

    def __init__(self, ws_url: str, port: int) -> None:
        self.ws_url, self.port = ws_url, port
        self._id = 0
        self._pending: dict[int, asyncio.Future] = {}
        self.events: list[dict[str, Any]] = []

    async def connect(self) -> None:
        self._http = aiohttp.ClientSession()
        self._ws = await self._http.ws_connect(self.ws_url, max_msg_size=64 * 1024 * 1024)
        self._reader = asyncio.create_task(self._read())
        await self.call("Page.enable")
        await self.call("Runtime.enable")
        await self.call("Page.addScriptToEvaluateOnNewDocument", source=SPEECH_PROBE)

    async def _read(self) -> None:
        async for msg in self._ws:
            body = json.loads(msg.data)
            if "id" in body and body["id"] in self._pending:
                self._pending.pop(body["id"]).set_result(body)
            else:
                self.events.append(body)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[self._id] = future
        await self._ws.send_str(json.dumps({"id": self._id, "method": method, "params": params}))
        body = await asyncio.wait_for(future, 30)
        if "error" in body:
            raise RuntimeError(f"{method}: {body['error']}")
        return body.get("result", {})

    async def js(self, expression: str, gesture: bool = False) -> Any:
        """`gesture`: as if the user tapped (what a permission request needs)."""
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True,
                                 userGesture=gesture)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout_s: float = 30.0, poll_s: float = 0.1) -> Any:
        """Until `expression` is truthy; its value."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = await self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"not true within {timeout_s:g} s: {expression}")
            await asyncio.sleep(poll_s)

    async def open(self, url: str) -> None:
        await self.call("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete'", 20)

    async def position(self, lat: float, lon: float, accuracy_m: float = 5.0) -> None:
        await self.call("Emulation.setGeolocationOverride", latitude=lat, longitude=lon, accuracy=accuracy_m)

    async def heading(self, heading_deg: float) -> None:
        """The compass: a north-referenced alpha (counter-clockwise) for the heading."""
        await self.call("DeviceOrientation.setDeviceOrientationOverride", alpha=(360.0 - heading_deg) % 360.0,
                        beta=90.0, gamma=0.0)

    async def grant(self, origin: str, *names: str) -> None:
        await self.call("Browser.grantPermissions", origin=origin, permissions=list(names))

    async def screenshot(self, path: Path) -> Path:
        data = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    async def close_tab(self) -> None:
        """Close the tab itself (its page goes away, its WebSocket closes), then this connection."""
        try:
            await self.call("Page.close")
        except (RuntimeError, asyncio.TimeoutError, ConnectionError):
            pass  # the tab may go before it answers
        await self.close()

    async def viewport(self, width: int, height: int) -> None:
        """A phone's screen: `width` x `height` CSS pixels, mobile, until `clear_viewport()`."""
        await self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=2,
                        mobile=True)

    async def clear_viewport(self) -> None:
        await self.call("Emulation.clearDeviceMetricsOverride")

    async def close(self) -> None:
        self._reader.cancel()
        await self._ws.close()
        await self._http.close()
