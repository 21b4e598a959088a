"""AR trials acceptance, each driving real Chromium against the real command (`cityseeker ar`:
the Seek node set over DDS on loopback, ocr-embed on the session's Monaco world, the AR server) with an
independent ROS process counting what reaches the stack (tests/ar/ros_counter.py).

One trial serves the module's tests in turn (each ends its own Seek); each test has its own
browser. Waits are on counted events (frames, fixes, goals, commands, guidance, the server's
drop counters), never a sleep followed by "nothing happened"."""
from __future__ import annotations

import asyncio
import io
import json
import time

import aiohttp
import numpy as np
import pytest
from PIL import Image

from tests.ar.browser import Browser
from tests.ar.conftest import keep_screenshot, run
from tests.ar.phone import ar_state, guided_walk, heading, open_phone, seek, wait_ready_page

OVERLAY = """JSON.stringify({
  arrow: !document.getElementById('arrow-box').hidden,
  rotation: document.getElementById('arrow').style.transform,
  distance: document.getElementById('distance').textContent,
  reason: document.getElementById('reason').textContent,
  step: document.getElementById('step').textContent,
  cancel: !document.getElementById('cancel').hidden})"""


async def _wait_counts(trial, predicate, timeout_s: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        counts = trial.counts()
        if predicate(counts):
            return counts
        if time.monotonic() > deadline:
            raise TimeoutError(f"ROS counts never matched: {counts}")
        await asyncio.sleep(0.1)


async def _wait_stats(trial, predicate, timeout_s: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        stats = await trial.stats()
        if predicate(stats):
            return stats
        if time.monotonic() > deadline:
            raise TimeoutError(f"server counts never matched: {stats['counts']}")
        await asyncio.sleep(0.1)


# Where each line of the guidance is, and whether any of it is clipped: the guidance must show
# whole (the reason included) above the need field, on the smallest phone screen we support.
GUIDANCE_GEOMETRY = """JSON.stringify((() => {
  const box = (id) => { const el = document.getElementById(id), r = el.getBoundingClientRect();
    return {text: el.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
            scrollWidth: el.scrollWidth, clientWidth: el.clientWidth, scrollHeight: el.scrollHeight,
            clientHeight: el.clientHeight}; };
  return {width: innerWidth, height: innerHeight, pageWidth: document.documentElement.scrollWidth,
          formTop: document.getElementById('need-form').getBoundingClientRect().top,
          lines: Object.fromEntries(['guidance', 'distance', 'reason', 'step'].map((id) => [id, box(id)]))};
})())"""

GUIDANCE_GONE = """JSON.stringify({
  guidance: document.getElementById('guidance').hidden, arrow: document.getElementById('arrow-box').hidden,
  text: ['distance', 'reason', 'step'].map((id) => document.getElementById(id).textContent).join(''),
  height: document.getElementById('guidance').getBoundingClientRect().height,
  result: !document.getElementById('result').hidden})"""


async def _guidance_geometry(page, width: int, height: int) -> dict:
    await page.viewport(width, height)
    try:
        return json.loads(await page.js(GUIDANCE_GEOMETRY))
    finally:
        await page.clear_viewport()


def _clipped(geometry: dict) -> list[str]:
    """Each way the guidance is not wholly on the screen (empty: it is)."""
    out = []
    if geometry["pageWidth"] > geometry["width"]:
        out.append(f"the page scrolls sideways: {geometry['pageWidth']} > {geometry['width']} px")
    for name, line in geometry["lines"].items():
        if line["scrollWidth"] > line["clientWidth"] or line["scrollHeight"] > line["clientHeight"]:
            out.append(f"#{name} is cut: content {line['scrollWidth']}x{line['scrollHeight']} in "
                       f"{line['clientWidth']}x{line['clientHeight']}")
        if line["left"] < 0 or line["right"] > geometry["width"] or line["top"] < 0 \
                or line["bottom"] > geometry["formTop"]:
            out.append(f"#{name} leaves the screen or goes under the need field: {line}")
    return out


def _start(monaco):
    start = monaco.episodes[0].start
    node = monaco.graph.nodes[start]
    return start, node.lat, node.lon, float(node.walkable_headings[0])


def test_one_seek_on_monaco_shows_and_speaks_every_guidance_whole_on_a_360_px_screen_and_clears_it_at_the_result(
        trial, browser, monaco, tmp_path):
    async def go():
        start, lat, lon, facing = _start(monaco)
        page = await open_phone(browser, trial, lat, lon, facing)
        await wait_ready_page(page)
        baseline = await ar_state(page)
        await seek(page, "I am thirsty")
        overlays, spoken_at, geometries = [], [], []

        async def on_guidance(index: int, state: dict) -> None:
            await page.wait_for("document.getElementById('step').textContent !== ''", 10)
            overlays.append(json.loads(await page.js(OVERLAY)))
            spoken_at.append(len(state["spoken"]))
            for width, height in ((360, 640), (412, 915)):  # the narrowest phone screen, and a common one
                geometries.append(await _guidance_geometry(page, width, height))
            if index == 2:  # mid-Seek: the overlay over the live video, on the screenshot too
                shot = await page.screenshot(tmp_path / "mid_seek.png")
                keep_screenshot(shot)
                pixels = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")).astype(int)
                arrow_yellow = (pixels[..., 0] > 220) & (pixels[..., 1] > 190) & (pixels[..., 2] < 60)
                assert arrow_yellow.sum() > 200, "the yellow guidance arrow is not on the screenshot"

        final = await guided_walk(page, monaco.graph, start, on_guidance=on_guidance, baseline=baseline)
        after_result = json.loads(await page.js(GUIDANCE_GONE))
        await page.close()
        return final, overlays, spoken_at, geometries, after_result

    final, overlays, spoken_at, geometries, after_result = run(go())
    shown = final["ar"]["guidanceShown"]
    result = final["ar"]["results"][-1]
    assert result["outcome"] in ("found", "budget"), result
    assert shown >= 2 and shown == len(overlays)
    for overlay in overlays:
        assert overlay["reason"] and overlay["step"].startswith("step ") and "left" in overlay["step"], overlay
        if overlay["arrow"]:  # a move: the arrow turned to the heading, the distance to the corner
            assert "m to the next corner" in overlay["distance"] and "rotate(" in overlay["rotation"], overlay
    assert spoken_at == list(range(1, shown + 1)), f"each guidance spoken once as it came: {spoken_at}"
    assert len(final["spoken"]) == shown + 1  # and the result
    ros_guidance = trial.counts()["guidance"]
    assert len({vid for vid, _ in ros_guidance}) >= shown
    # the whole guidance line, reason included, on a 360 px and a 412 px screen
    reasons = [g["lines"]["reason"]["text"] for g in geometries]
    assert max(map(len, reasons)) > 40, f"no guidance long enough to test the fit: {reasons}"
    assert sorted({g["width"] for g in geometries}) == [360, 412]
    for geometry in geometries:
        assert _clipped(geometry) == [], (geometry["width"], geometry["lines"]["reason"]["text"], _clipped(geometry))
    # the result replaced the guidance: nothing of it stays on the screen above the result
    assert after_result == {"guidance": True, "arrow": True, "text": "", "height": 0, "result": True}, after_result


def test_a_wrong_or_missing_token_gets_403_and_nothing_reaches_ros(trial, browser):
    async def go():
        before, stats_before = trial.counts(), await trial.stats()
        forbidden0 = stats_before["counts"].get("http.forbidden", 0)
        ws_origin = trial.origin.replace("http", "ws", 1)
        wrong = trial.token[:-1] + ("A" if trial.token[-1] != "A" else "B")
        async with aiohttp.ClientSession() as http:
            for path in ("/", f"/?token={wrong}", "/stats", f"/stats?token={wrong}", "/ws", f"/ws?token={wrong}",
                         "/?token="):
                async with http.get(trial.origin + path) as r:
                    assert r.status == 403, path
            for path in ("/ws", f"/ws?token={wrong}"):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(ws_origin + path)
                assert refused.value.status == 403
        # Chromium on the wrong URL: the 403 page, from which its scripts try the socket anyway
        page = await browser.page()
        await page.open(f"{trial.origin}/?token={wrong}")
        assert "403" in await page.js("document.body.innerText")
        attempts = await page.js(f"""new Promise(done => {{
            let closed = 0, opened = 0;
            for (const url of ['{ws_origin}/ws', '{ws_origin}/ws?token={wrong}']) for (let i = 0; i < 5; i++) {{
              const ws = new WebSocket(url);
              ws.onopen = () => {{ opened++; ws.send('{{"type":"need","text":"I am thirsty"}}'); }};
              ws.onclose = () => {{ if (++closed === 10) done({{opened, closed}}); }};
            }}
            fetch('{trial.origin}/ws?token={wrong}').catch(() => 0);
        }})""")
        assert attempts == {"opened": 0, "closed": 10}
        stats = await _wait_stats(trial, lambda s: s["counts"].get("http.forbidden", 0) >= forbidden0 + 9 + 10)
        settled = time.time()  # every refused attempt is over: the counter's next snapshot is after them
        after = await _wait_counts(trial, lambda c: c["at"] > settled)
        await page.close()
        return before, after, stats_before, stats

    before, after, stats_before, stats = run(go())
    for key in ("frames", "fixes", "goals"):
        assert after[key] == before[key], f"{key} reached ROS without the token: {before[key]} -> {after[key]}"
    assert stats["counts"].get("goal.sent", 0) == stats_before["counts"].get("goal.sent", 0)


def test_refused_camera_permission_is_said_and_can_be_retried(trial, video, monaco):
    async def go(browser: Browser):
        _, lat, lon, facing = _start(monaco)
        page = await open_phone(browser, trial, lat, lon, facing, camera=False)
        await page.wait_for("!document.getElementById('camera-error').hidden", 20)
        said = await page.js("document.getElementById('camera-error-text').textContent")
        retry = await page.js("!document.getElementById('camera-retry').hidden")
        waiting = await page.js("!document.getElementById('wait-camera').hidden")
        sent_while_refused = (await ar_state(page))["ar"]["framesSent"]
        await page.call("Browser.setPermission", permission={"name": "camera"}, setting="granted",
                        origin=trial.origin)
        await page.js("document.getElementById('camera-retry').click(); true")
        await page.wait_for("window.__ar.framesAcked > 0 && document.getElementById('camera-error').hidden", 20)
        await page.close()
        return said, retry, waiting, sent_while_refused

    browser = Browser(video, fake_ui=False)  # no automatic yes: the page's request is answered "denied"
    try:
        said, retry, waiting, sent = run(go(browser))
    finally:
        browser.close()
    assert "refused" in said and "retry" in said.lower()
    assert retry and waiting and sent == 0


def test_a_fix_worse_than_the_threshold_waits_for_a_better_one_and_sends_no_goal(trial, browser, monaco):
    async def go():
        _, lat, lon, facing = _start(monaco)
        before, stats0 = trial.counts(), await trial.stats()
        page = await open_phone(browser, trial, lat, lon, facing, accuracy_m=80.0)
        await page.wait_for("document.getElementById('wait-fix').textContent.includes('waiting for a better fix')", 20)
        line = await page.js("document.getElementById('wait-fix').textContent")
        coarse0 = stats0["counts"].get("fix.coarse", 0)
        await _wait_stats(trial, lambda s: s["counts"].get("fix.coarse", 0) >= coarse0 + 3)
        await seek(page, "I am thirsty")
        await page.wait_for("!document.getElementById('refused').hidden", 10)
        refused = json.loads(await page.js("JSON.stringify({code: document.getElementById('refused').dataset.code, "
                                           "text: document.getElementById('refused').textContent})"))
        stats = await _wait_stats(trial, lambda s: s["counts"].get("goal.refused.waiting", 0)
                                  > stats0["counts"].get("goal.refused.waiting", 0))
        after = trial.counts()
        await page.close()
        return line, refused, before, after, stats0, stats

    line, refused, before, after, stats0, stats = run(go())
    assert "±80 m" in line and "±20 m" in line
    assert refused["code"] == "waiting" and "better fix" in refused["text"]
    assert stats["counts"].get("goal.sent", 0) == stats0["counts"].get("goal.sent", 0)
    assert after["goals"] == before["goals"] and after["fixes"] == before["fixes"]  # coarse fixes kept from ROS


def _after(events: list, t: float) -> list:
    return [e for e in events if e[1] > t]


def test_a_cancel_holds_within_a_second_and_nothing_moves_or_guides_after(trial, browser, monaco):
    async def go():
        start, lat, lon, facing = _start(monaco)
        page = await open_phone(browser, trial, lat, lon, facing)
        await wait_ready_page(page)
        await seek(page, "find a pharmacy")
        await page.wait_for("window.__ar.guidanceShown > 0", 90)
        shown = (await ar_state(page))["ar"]["guidanceShown"]
        clicked = time.time()
        await page.js("document.getElementById('cancel').click(); true")
        counts = await _wait_counts(trial, lambda c: any(k == "hold" for k, t in _after(c["commands"], clicked)), 5)
        hold_at = min(t for k, t in _after(counts["commands"], clicked) if k == "hold")
        await page.wait_for("window.__ar.results.length > 0", 10)
        result = (await ar_state(page))["ar"]["results"][-1]
        cleared = json.loads(await page.js(GUIDANCE_GONE))
        # the stack keeps hearing the phone: wait for five more fixes to pass through it
        fixes = counts["fixes"]
        later = await _wait_counts(trial, lambda c: c["fixes"] >= fixes + 5, 30)
        state = await ar_state(page)
        # the race: a goal cancelled in the same instant it is sent
        raced = time.time()
        await page.js("document.getElementById('need').value = 'I am hungry';"
                      "document.getElementById('go').click(); setTimeout(() => document.getElementById('cancel')"
                      ".click(), 0); true")
        await page.wait_for("window.__ar.results.length > 1", 30)
        raced_result = (await ar_state(page))["ar"]["results"][-1]
        fixes = trial.counts()["fixes"]
        after_race = await _wait_counts(trial, lambda c: c["fixes"] >= fixes + 3, 30)
        await page.close()
        return shown, clicked, hold_at, result, cleared, later, state, raced, raced_result, after_race

    shown, clicked, hold_at, result, cleared, later, state, raced, raced_result, after_race = run(go())
    assert hold_at - clicked < 1.0, f"the hold came {hold_at - clicked:.3f} s after the cancel"
    assert result["outcome"] == "cancelled", result
    assert cleared == {"guidance": True, "arrow": True, "text": "", "height": 0, "result": True}, cleared
    assert [k for k, _ in _after(later["commands"], hold_at)] == [], "motion after the hold"
    assert _after(later["guidance"], hold_at) == [], "guidance after the hold"
    assert state["ar"]["guidanceShown"] == shown and state["ar"]["guidanceAfterCancel"] == 0
    assert raced_result["outcome"] in ("cancelled", "rejected"), raced_result
    raced_hold = [t for k, t in _after(after_race["commands"], raced) if k == "hold"]
    raced_goal = [t for k, t in _after(after_race["commands"], raced) if k == "goal"]
    assert all(t < min(raced_hold) for t in raced_goal) if raced_hold else not raced_goal


MALFORMED = r"""new Promise(done => {
  const ws = new WebSocket(`ws://${location.host}/ws?token=${new URLSearchParams(location.search).get('token')}`);
  ws.binaryType = 'arraybuffer';
  const bin = (n, fill, head) => {
    const b = new Uint8Array(n); b.fill(fill); if (head) b.set(head, 8); return b.buffer;
  };
  ws.onopen = () => {
    const bad = [];
    for (let i = 0; i < 15; i++) bad.push('{not json ' + i);
    for (let i = 0; i < 10; i++) bad.push('[1, 2, ' + i + ']');
    for (let i = 0; i < 10; i++) bad.push(JSON.stringify({type: 'teleport', i}));
    for (let i = 0; i < 10; i++) bad.push(JSON.stringify({type: 'fix', lat: 91 + i, lon: 7.4, accuracy_m: 3}));
    for (let i = 0; i < 5; i++) bad.push(JSON.stringify({type: 'fix', lat: 43.7, lon: 7.4, accuracy_m: -1}));
    for (let i = 0; i < 5; i++) bad.push(JSON.stringify({type: 'heading', heading_deg: 'north'}));
    for (let i = 0; i < 5; i++) bad.push(JSON.stringify({type: 'need', text: 42}));
    for (let i = 0; i < 5; i++) bad.push(JSON.stringify({type: 'shown', view_set_id: '', latency_ms: 1}));
    for (let i = 0; i < 5; i++) bad.push('x'.repeat(5000));
    for (let i = 0; i < 10; i++) bad.push(bin(2000, 7));                                  // not a JPEG
    for (let i = 0; i < 5; i++) bad.push(bin(6, 0));                                      // too short
    for (let i = 0; i < 5; i++) bad.push(bin(600 * 1024, 0, [0xff, 0xd8]));               // oversized
    for (let i = 0; i < 5; i++) bad.push(bin(3000, 0, [0xff, 0xd8, 0xff, 0xe0, 0, 16]));  // no end marker
    for (let i = 0; i < 5; i++) {                                                           // 4000 x 4000
      const b = new Uint8Array(8 + 64);
      b.set([0xff, 0xd8, 0xff, 0xc0, 0, 17, 8, 0x0f, 0xa0, 0x0f, 0xa0, 3], 8); b[8 + 62] = 0xff; b[8 + 63] = 0xd9;
      bad.push(b.buffer);
    }
    for (const m of bad) ws.send(m);
    ws.send(JSON.stringify({type: 'heading', heading_deg: 10}));     // and then a good one
    let statuses = 0;
    ws.onmessage = (e) => {
      if (JSON.parse(e.data).type === 'status' && ++statuses === 2) done({sent: bad.length, open: ws.readyState});
    };
  };
  ws.onclose = () => done({closed: true});
})"""


def test_a_hundred_malformed_messages_are_counted_and_dropped_and_the_server_keeps_serving(trial, browser, monaco):
    async def go():
        _, lat, lon, facing = _start(monaco)
        page = await open_phone(browser, trial, lat, lon, facing)
        await page.wait_for("window.__ar.framesAcked > 2", 30)
        stats0, ros0 = await trial.stats(), trial.counts()
        outcome = await page.js(MALFORMED)
        stats = await _wait_stats(trial, lambda s: s["counts"].get("dropped", 0) >= stats0["counts"].get("dropped", 0)
                                  + 100)
        acked = (await ar_state(page))["ar"]["framesAcked"]
        await page.wait_for(f"window.__ar.framesAcked > {acked + 3}", 30)  # the page's own stream goes on
        ros = await _wait_counts(trial, lambda c: c["frames"] > ros0["frames"] + 3)
        async with aiohttp.ClientSession() as http:
            async with http.get(trial.url) as r:
                page_status = r.status
        await page.close()
        return outcome, stats0, stats, page_status, ros0, ros

    outcome, stats0, stats, page_status, ros0, ros = run(go())
    assert outcome == {"sent": 100, "open": 1}, outcome
    dropped = {k: v - stats0["counts"].get(k, 0) for k, v in stats["counts"].items() if ".dropped." in k}
    assert sum(dropped.values()) == 100 == stats["counts"]["dropped"] - stats0["counts"].get("dropped", 0)
    for reason in ("message.dropped.not_json", "message.dropped.not_object", "message.dropped.unknown_type",
                   "fix.dropped.bad_lat", "fix.dropped.bad_accuracy_m", "heading.dropped.bad_heading_deg",
                   "need.dropped.bad_text", "shown.dropped.bad_view_set_id", "message.dropped.oversized",
                   "frame.dropped.not_jpeg", "frame.dropped.too_short", "frame.dropped.oversized",
                   "frame.dropped.truncated_jpeg", "frame.dropped.bad_size"):
        assert dropped.get(reason, 0) > 0, (reason, dropped)
    assert page_status == 200
    assert stats["counts"].get("goal.sent", 0) == stats0["counts"].get("goal.sent", 0)


# iOS Safari's compass permission, stood in for in Chromium: asked outside a tap it is refused, as
# Safari refuses it; asked from the tap it is granted. Readings then come as webkitCompassHeading.
IOS_COMPASS = """
DeviceOrientationEvent.requestPermission = () => navigator.userActivation.isActive
  ? Promise.resolve('granted')
  : Promise.reject(new DOMException('Requesting device orientation access requires a user gesture', 'NotAllowedError'));
"""
IOS_READING = """(() => {
  const e = new DeviceOrientationEvent('deviceorientation', {alpha: 80, beta: 90, gamma: 0, absolute: false});
  Object.defineProperty(e, 'webkitCompassHeading', {value: 123});
  window.dispatchEvent(e);
  return true;
})()"""


def test_the_compass_comes_without_a_tap_where_the_browser_gives_it_and_allow_compass_only_where_it_must(
        trial, browser, monaco):
    async def go():
        _, lat, lon, facing = _start(monaco)
        android = await open_phone(browser, trial, lat, lon, facing)  # nothing tapped
        await android.wait_for("window.__ar.headingsSent > 0 && window.__ar.statuses > 0 && "
                               "!window.__ar.waiting.includes('heading')", 20)
        chromium = json.loads(await android.js(
            "JSON.stringify({button: !document.getElementById('orientation-permission').hidden, "
            "shown: window.__ar.compassButtonShown, heading: window.__ar.lastHeadingSent})"))
        ios = await open_phone(browser, trial, lat, lon, None, before=IOS_COMPASS)
        await ios.wait_for("!document.getElementById('orientation-permission').hidden", 20)
        await ios.wait_for("window.__ar.statuses > 0", 20)
        asked = json.loads(await ios.js(
            "JSON.stringify({line: document.getElementById('wait-heading').textContent, "
            "sent: window.__ar.headingsSent, waiting: window.__ar.waiting})"))
        await ios.js("document.getElementById('orientation-permission').click(); true", gesture=True)
        await ios.wait_for("document.getElementById('orientation-permission').hidden", 10)
        await ios.js(IOS_READING)
        await ios.wait_for("window.__ar.lastHeadingSent === 123", 10)
        await ios.close()
        await android.close()
        return chromium, asked

    chromium, asked = run(go())
    assert chromium["button"] is False and chromium["shown"] is False, chromium
    assert abs(chromium["heading"] - float(_start(monaco)[3])) < 0.01, chromium
    assert "Allow compass" in asked["line"] and asked["sent"] == 0 and "heading" in asked["waiting"], asked


async def _refusal(page) -> dict:
    await page.wait_for("!document.getElementById('refused').hidden", 20)
    return json.loads(await page.js("JSON.stringify({code: document.getElementById('refused').dataset.code, "
                                    "text: document.getElementById('refused').textContent})"))


def test_a_page_with_no_heading_of_its_own_cannot_start_a_seek_while_another_page_has_one(trial, browser, monaco):
    async def go():
        _, lat, lon, facing = _start(monaco)
        before, stats0 = trial.counts(), await trial.stats()
        with_compass = await open_phone(browser, trial, lat, lon, facing)
        await wait_ready_page(with_compass)
        without = await open_phone(browser, trial, lat, lon, None)
        # everything but the heading: the server waits for this page's heading alone
        await without.wait_for("JSON.stringify(window.__ar.waiting) === '[\"heading\"]'", 60)
        line = await without.js("document.getElementById('wait-heading').textContent")
        await seek(without, "I am thirsty")
        refused = await _refusal(without)
        stats = await _wait_stats(trial, lambda s: s["counts"].get("goal.refused.waiting.heading", 0)
                                  > stats0["counts"].get("goal.refused.waiting.heading", 0))
        other_ready = await with_compass.js("JSON.stringify(window.__ar.waiting)")
        after = trial.counts()
        await without.close()
        await with_compass.close()
        return line, refused, stats0, stats, other_ready, before, after

    line, refused, stats0, stats, other_ready, before, after = run(go())
    assert line.startswith("waiting for the compass heading"), line
    assert refused["code"] == "waiting", refused
    assert refused["text"] == ("waiting for the compass heading: this page has sent none (allow motion and "
                               "orientation access)"), refused
    assert other_ready == "[]"  # the other page has a heading: it is its own, not this one's
    assert stats["counts"].get("goal.sent", 0) == stats0["counts"].get("goal.sent", 0)
    assert after["goals"] == before["goals"], "a goal reached ROS from a page without a heading"


def test_two_pages_one_after_the_other_do_not_share_a_heading(trial, browser, monaco):
    async def go():
        _, lat, lon, facing = _start(monaco)
        before, stats0 = trial.counts(), await trial.stats()
        first = await open_phone(browser, trial, lat, lon, facing)
        await wait_ready_page(first)
        clients = (await trial.stats())["clients"]
        await first.close_tab()  # its compass was firing until now
        closed = time.monotonic()
        await _wait_stats(trial, lambda s: s["clients"] < clients, 10)
        second = await open_phone(browser, trial, lat, lon, None)
        await second.wait_for("window.__ar.statuses > 0", 20)
        await seek(second, "I am thirsty")  # at once, while the first page's heading would be fresh
        at_once = await _refusal(second)
        at_once_s = time.monotonic() - closed
        await second.wait_for("JSON.stringify(window.__ar.waiting) === '[\"heading\"]'", 60)
        await seek(second, "I am thirsty")
        stats = await _wait_stats(trial, lambda s: s["counts"].get("goal.refused.waiting.heading", 0)
                                  >= stats0["counts"].get("goal.refused.waiting.heading", 0) + 2)
        later = await _refusal(second)
        await heading(second, facing)  # its own compass: now it waits for nothing
        await wait_ready_page(second)
        after = trial.counts()
        await second.close()
        return at_once, at_once_s, later, stats0, stats, before, after

    at_once, at_once_s, later, stats0, stats, before, after = run(go())
    print(f"the second page asked {at_once_s:.1f} s after the first closed")
    for refused in (at_once, later):
        assert refused["code"] == "waiting" and "waiting for the compass heading: this page has sent none" \
            in refused["text"], refused
    assert stats["counts"].get("goal.sent", 0) == stats0["counts"].get("goal.sent", 0)
    assert after["goals"] == before["goals"]


def test_the_operator_console_is_served_beside_the_phone_with_its_token_and_draws_the_phone_where_it_is(
        trial, browser, monaco):
    """`cityseeker ar` serves the console by default on the phone's site: it prints its address, the
    same token opens it, the map is the trial's world, and the phone's own fix (the AR server's
    ~/fix over DDS, read by the console's bridge) places the vehicle."""
    from cityseeker_ros.core.frames.geo_origin import MapFrame

    async def go():
        _, lat, lon, facing = _start(monaco)
        async with aiohttp.ClientSession() as http:
            forbidden = (await http.get(f"{trial.origin}/console")).status
            page = (await http.get(f"{trial.origin}/console?token={trial.token}")).status
            doc = await (await http.get(f"{trial.origin}/console/map.json?token={trial.token}")).json()
            ws = await http.ws_connect(f"{trial.origin.replace('http', 'ws', 1)}/console/ws?token={trial.token}")
            phone = await open_phone(browser, trial, lat, lon, facing)
            deadline, vehicle = time.monotonic() + 30, None
            while vehicle is None and time.monotonic() < deadline:
                msg = json.loads((await ws.receive(timeout=10)).data)
                if msg["type"] == "state" and msg["vehicle"]:
                    vehicle = msg["vehicle"]
            await ws.close()
            await phone.close()
        return forbidden, page, doc, vehicle, lat, lon

    forbidden, page, doc, vehicle, lat, lon = run(go())
    assert f"operator console: {trial.origin}/console?token={trial.token}" in trial.output()
    assert forbidden == 403 and page == 200
    assert doc["name"] == "monaco" and len(doc["graph"]["ids"]) == len(monaco.graph.nodes)
    assert vehicle is not None, "the phone's fix never reached the console"
    x, y, _ = MapFrame.of_graph(monaco.graph).to_enu(lat, lon)
    assert abs(vehicle["x"] - x) < 0.5 and abs(vehicle["y"] - y) < 0.5, (vehicle, x, y)
