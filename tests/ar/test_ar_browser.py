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
from tests.ar.phone import ar_state, guided_walk, open_phone, seek, wait_ready_page

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


def _start(monaco):
    start = monaco.episodes[0].start
    node = monaco.graph.nodes[start]
    return start, node.lat, node.lon, float(node.walkable_headings[0])


def test_one_seek_on_monaco_from_need_to_result_shows_and_speaks_every_guidance(trial, browser, monaco, tmp_path):
    async def go():
        start, lat, lon, facing = _start(monaco)
        page = await open_phone(browser, trial, lat, lon, facing)
        await wait_ready_page(page)
        baseline = await ar_state(page)
        await seek(page, "I am thirsty")
        overlays, spoken_at = [], []

        async def on_guidance(index: int, state: dict) -> None:
            await page.wait_for("document.getElementById('step').textContent !== ''", 10)
            overlays.append(json.loads(await page.js(OVERLAY)))
            spoken_at.append(len(state["spoken"]))
            if index == 2:  # mid-Seek: the overlay over the live video, on the screenshot too
                shot = await page.screenshot(tmp_path / "mid_seek.png")
                keep_screenshot(shot)
                pixels = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")).astype(int)
                arrow_yellow = (pixels[..., 0] > 220) & (pixels[..., 1] > 190) & (pixels[..., 2] < 60)
                assert arrow_yellow.sum() > 200, "the yellow guidance arrow is not on the screenshot"

        final = await guided_walk(page, monaco.graph, start, on_guidance=on_guidance, baseline=baseline)
        await page.close()
        return final, overlays, spoken_at

    final, overlays, spoken_at = run(go())
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
        return shown, clicked, hold_at, result, later, state, raced, raced_result, after_race

    shown, clicked, hold_at, result, later, state, raced, raced_result, after_race = run(go())
    assert hold_at - clicked < 1.0, f"the hold came {hold_at - clicked:.3f} s after the cancel"
    assert result["outcome"] == "cancelled", result
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
