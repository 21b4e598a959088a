"""AR trial figures on loopback: from a frame captured on the phone to its guidance on the screen.

The real command (`cityseeker ar`: graph_localiser, camera_ingest, decision, the supervisor
serving Seek and the AR server, DDS on loopback) with real Chromium as the phone (tests/ar/: a
fake camera fed with the Monaco world's rendered views, emulated position and compass), walking
each guided edge, Seek after Seek until at least --steps guidance have been shown.

- latency: the page stamps each frame with its capture time (performance.now); the server
  remembers which frame each view set was built from (the newest it published before the view
  set's stamp) and returns that time with the guidance; the page measures capture -> the first
  paint after the guidance is shown. One clock, no synchronisation. The policy's own decision
  time (Decision.latency_s, on the decision node) is reported apart: the rest is the stack.
  A view set is built when the phone arrives at a node, so a frame waits there for no decision
  but its own: the figure is what a walker sees at a corner.
- frame rate: frames acknowledged by the server per second while the page streams (the page
  sends the next frame when the last is acknowledged, at most 5 a second);
- server CPU per frame: the AR server process's CPU time (time.process_time, every thread: the
  web loop and rclpy) over the walk, divided by the frames it took, fixes and guidance included.

    python benchmarks/ar_latency.py [--steps 30] [--policy ocr-embed] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.ar.browser import Browser  # noqa: E402  (the tests' emulated phone)
from tests.ar.phone import (  # noqa: E402
    WORLD,
    Trial,
    ar_state,
    guided_walk,
    make_video,
    open_phone,
    seek,
    wait_ready_page,
)

NEEDS = ("I am thirsty", "find a pharmacy", "I need cash", "I am hungry", "I want a coffee")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def walk(trial: Trial, browser: Browser, world, steps: int) -> dict:
    start = world.episodes[0].start
    node = world.graph.nodes[start]
    page = await open_phone(browser, trial, node.lat, node.lon, float(node.walkable_headings[0]))
    await wait_ready_page(page, 120)
    stats0, state0, t0 = await trial.stats(), await ar_state(page), time.monotonic()
    shown, seeks, here = 0, 0, start
    while shown < steps:
        await wait_ready_page(page, 60)
        baseline = await ar_state(page)
        await seek(page, NEEDS[seeks % len(NEEDS)])
        seeks += 1
        final = await guided_walk(page, world.graph, here, baseline=baseline)
        shown, here = final["ar"]["guidanceShown"] - state0["ar"]["guidanceShown"], final["node"]
    stats1, state1, t1 = await trial.stats(), await ar_state(page), time.monotonic()
    await page.close()
    frames = stats1["counts"].get("frame.accepted", 0) - stats0["counts"].get("frame.accepted", 0)
    return {"seeks": seeks, "shown": shown, "seconds": t1 - t0, "frames": frames,
            "frames_acked": state1["ar"]["framesAcked"] - state0["ar"]["framesAcked"],
            "cpu_s": stats1["cpu_s"] - stats0["cpu_s"], "latencies_ms": stats1["latencies_ms"],
            "decisions_s": stats1["decisions_s"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30, help="guidance shown at least (default 30)")
    parser.add_argument("--policy", default="ocr-embed")
    parser.add_argument("--max-steps", type=int, default=12, help="each Seek's budget (default 12)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    from cityseeker_ros.core.datasets import load_dataset

    world = load_dataset(WORLD)[0]
    tmp = Path(tempfile.mkdtemp(prefix="ar-latency-"))
    video = make_video(WORLD, tmp / "monaco.y4m")
    trial = Trial(tmp, WORLD, policy=args.policy, max_steps=args.max_steps)
    browser = Browser(video)
    try:
        trial.wait_ready()
        run = asyncio.run(walk(trial, browser, world, args.steps))
    finally:
        browser.close()
        trial.close()
    lat, dec = run["latencies_ms"], [d * 1000 for d in run["decisions_s"]]
    figures = {
        "steps": len(lat), "seeks": run["seeks"],
        "latency_ms": {"p50": pct(lat, 50), "p95": pct(lat, 95), "mean": statistics.fmean(lat)},
        "decision_ms": {"p50": pct(dec, 50), "p95": pct(dec, 95)},
        "frame_rate_fps": run["frames"] / run["seconds"],
        "server_cpu_ms_per_frame": 1000 * run["cpu_s"] / max(1, run["frames"]),
        "frames": run["frames"], "seconds": run["seconds"],
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps({**figures, "raw": run}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
