"""`cityseeker seek --console` on the Monaco world with the simulated walker, the console in real
Chromium: nothing is faked (the walker behind the vehicle bridge, the random policy, the world's
rendered views over DDS). Mid-Seek a screenshot shows the map, the vehicle marker and the view
strip; E-stop pressed in the page (after its confirm) latches the vehicle bridge, whose own
status then says it is not moving, and the Seek ends with code estop (which ends the command,
and the console with it)."""
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.ar.browser import CHROMIUM, Browser
from tests.ar.test_console_browser import HEIGHT, WIDTH, _click, _near
from tests.ros.conftest import REPO, require_ros, ros_domain  # noqa: F401  the leased domain's fixture

URL = re.compile(r"operator console: (http\S+)")
KEEP_SCREENSHOT = os.environ.get("CITYSEEKER_CONSOLE_SEEK_SCREENSHOT", "")  # e.g. docs/console_mid_seek.png
VIEWS = ["--source-param", "views=rendered", "--source-param", 'view_params={"width": 320, "height": 180}']


def _wait_url(log: Path, process: subprocess.Popen, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = URL.search(log.read_text())
        if found:
            return found.group(1)
        assert process.poll() is None, log.read_text()
        time.sleep(0.2)
    raise TimeoutError(f"no console address within {timeout_s:g} s:\n{log.read_text()}")


def test_a_seek_on_monaco_with_the_walker_shows_in_the_console_and_its_estop_holds_the_walker(
        request: pytest.FixtureRequest, monaco_dir, tmp_path):
    require_ros()
    if CHROMIUM is None:
        pytest.skip("chromium not installed: apt-get install chromium (make test installs it)")
    domain = request.getfixturevalue("ros_domain")
    log_path = tmp_path / "seek.out"
    log = open(log_path, "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "cityseeker_ros", "seek", "I am thirsty", "--world", str(monaco_dir), "--policy",
         "random", "--max-steps", "30", *VIEWS, "--console", "--console-port", "0", "--domain-id", str(domain),
         # --out: the bridge's e-stop latch file lives in OUT/ros; without it, in ./ros of the working directory
         "--out", str(tmp_path / "run"), "--timeout", "400"], cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    browser = None
    try:
        url = _wait_url(log_path, process, 180)
        browser = Browser()

        async def go():
            page = await browser.page()
            await page.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1,
                            mobile=False)
            await page.open(url)
            await page.wait_for("window.__console.mapLoaded", 60)
            await page.wait_for("window.__console.viewsShown >= 2 && window.__console.vehiclePx", 240, 0.5)
            await page.wait_for("[...document.querySelectorAll('#views img')].every((i) => i.complete "
                                "&& i.naturalWidth > 0)", 10)
            shot = await page.screenshot(tmp_path / "console_mid_seek.png")
            if KEEP_SCREENSHOT:
                Path(KEEP_SCREENSHOT).write_bytes(shot.read_bytes())
            drawn = json.loads(await page.js(
                "JSON.stringify({v: window.__console.vehiclePx, reason: document.getElementById('decision-reason')"
                ".textContent, map: document.getElementById('map').getBoundingClientRect(), "
                "views: document.getElementById('views').getBoundingClientRect(), "
                "seek: document.getElementById('seek-state').textContent})"))
            await page.wait_for("document.getElementById('safety-status').textContent.includes('(moving)')", 60, 0.05)
            await _click(page, "estop")
            await _click(page, "estop-yes")
            pressed = time.monotonic()
            # the vehicle bridge's own ~/safety says the latch is set and the walker is not moving
            await page.wait_for("document.getElementById('safety-estop').textContent === 'LATCHED' && "
                                "!document.getElementById('safety-status').textContent.includes('(moving)')", 10, 0.05)
            shown_s = time.monotonic() - pressed
            sent = json.loads(await page.js("JSON.stringify(window.__console.sent)"))
            await page.close()
            return shot, drawn, sent, shown_s

        shot, drawn, sent, shown_s = asyncio.run(go())
        process.wait(120)
    finally:
        if browser is not None:
            browser.close()
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        log.close()
    output = log_path.read_text()
    print(output[-3000:])
    print(f"e-stop pressed -> latched and holding on the console: {shown_s:.2f} s")
    assert "result: " in output and "estop" in output.split("result: ")[-1], output[-2000:]  # the Seek ended on it
    assert drawn["reason"], drawn
    assert drawn["seek"].startswith('running: "(a goal another client sent)" step '), drawn  # the CLI's own goal
    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    m, s = drawn["map"], drawn["views"]
    map_px = pixels[int(m["top"]):int(m["bottom"]), int(m["left"]):int(m["right"])]
    assert _near(map_px, "#5a6470").sum() > 2000 and _near(map_px, "#3d8bfd", 20).sum() > 300
    u, v = int(round(m["left"] + drawn["v"][0])), int(round(m["top"] + drawn["v"][1]))
    assert _near(pixels[max(0, v - 20):v + 20, max(0, u - 20):u + 20], "#ff1744", 20).sum() > 80
    strip = pixels[int(s["top"]):int(s["bottom"]), int(s["left"]):int(s["right"])]
    assert _near(strip, "#00e676", 20).sum() > 300 and strip.std() > 20
    assert sent == ["estop"]  # one press after its confirm: one estop, nothing else
