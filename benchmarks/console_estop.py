"""The operator console's E-stop, from the press to the hold on the vehicle, over --presses presses
per link, on loopback, with the node set `cityseeker seek --console` starts (tests/ar/console_live.py:
the same nodes, no seek client, so the console sends every goal and the run outlives each Seek).

The press (`--press`):
- `socket` (default): the page's own message (console.js: `{"type": "estop", "confirm": true}`
  after the confirm) sent on the console's WebSocket, stamped just before it leaves: the stack's
  share alone, without Chromium's event loop and paint, which add their own noise on a loaded machine;
- `chromium`: the console page open in headless Chromium, a mouse press on E-stop, then on its
  confirm (CDP Input.dispatchMouseEvent, as tests/ar/test_console_browser.py presses), stamped just
  before the confirm's press is dispatched; each cycle also waits for the page to show LATCHED.
Each cycle: a Seek from the console's form, the vehicle moving, the press, the hold seen on the
vehicle, a new Seek goal sent while latched, 2 s, Reset e-stop, and the next cycle's goal.

Where the vehicle sees the hold:
- walker: the simulated walker lives inside the vehicle bridge's process; its position comes out
  as the bridge's ~/fix, recorded in a process of its own (tests/ar/fix_recorder.py) with
  state_rate_hz raised from 10 to 50 for this run, so the figure's resolution is 20 ms. The hold
  is the first fix after the press that equals the fix before it (an upper bound: the walker
  stopped between that fix and the one before). Moves while latched: fixes more than 5 cm from
  the held position, from the hold to the reset;
- mavlink: the shipped MAVLink simulator (PX4 rules) in this process on loopback UDP; the hold is
  the moment its mode becomes PX4's hold (AUTO.LOITER), polled every millisecond. Moves while
  latched: setpoints and mode, arming, takeoff, land, RTL or speed commands it received from
  0.3 s after the hold (commands already in flight) to the reset.

    python benchmarks/console_estop.py [--presses 30] [--links walker,mavlink] [--press socket|chromium]
                                       [--world DIR] [--json OUT]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cityseeker_ros.core.streets.geodesy import geodesic_m  # noqa: E402
from cityseeker_ros.core.vehicles.mavlink.simulator import MOTION_COMMANDS, SETPOINTS, MavlinkSimulator  # noqa: E402
from cityseeker_ros.ros import env as ros  # noqa: E402
from tests.ar.browser import Browser  # noqa: E402
from tests.ar.console_live import ConsoleSocket, live_console, start_seek  # noqa: E402
from tests.ros.test_seek_mavlink import SAFETY, TINY_VIEWS, WITHIN_LIMITS, free_udp_port, home_node  # noqa: E402

ESTOP = {"type": "estop", "confirm": True}
LATCHED_S = 2.0  # how long a new goal waits, latched, before Reset
VIEWS = ["--source-param", "views=rendered", "--source-param", 'view_params={"width": 64, "height": 36}']


class SocketPress:
    """E-stop as the page's message on the console's own socket."""

    def __init__(self, console: ConsoleSocket) -> None:
        self.console = console

    def __call__(self) -> float:
        return self.console.send(ESTOP)

    def close(self) -> None:
        pass


class ChromiumPress:
    """E-stop pressed in the console page in headless Chromium: E-stop, then its confirm, as mouse
    presses; the time just before the confirm's press is dispatched. Each press waits for the page
    to show the latch."""

    def __init__(self, console: ConsoleSocket) -> None:
        self.browser = Browser()
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="chromium-press", daemon=True).start()
        self.page = self._call(self.browser.page())
        self._call(self.page.open(console.url))
        self._call(self.page.wait_for("window.__console.mapLoaded", 60))
        self.latch_shown_s: list[float] = []

    def _call(self, coro: Any, timeout_s: float = 90.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    async def _press(self, element_id: str) -> float:
        box = json.loads(await self.page.js(
            f"JSON.stringify(document.getElementById('{element_id}').getBoundingClientRect())"))
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        pressed = time.monotonic()
        for kind in ("mousePressed", "mouseReleased"):
            await self.page.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        return pressed

    async def _estop(self) -> float:
        await self._press("estop")
        await self.page.wait_for("!document.getElementById('estop-confirm').hidden", 5, 0.01)
        return await self._press("estop-yes")

    def __call__(self) -> float:
        pressed = self._call(self._estop())
        self._call(self.page.wait_for("document.getElementById('safety-estop').textContent === 'LATCHED'", 10, 0.01))
        self.latch_shown_s.append(time.monotonic() - pressed)
        return pressed

    def close(self) -> None:
        try:
            self._call(self.page.close(), 10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self.browser.close()


PRESSES = {"socket": SocketPress, "chromium": ChromiumPress}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class Fixes:
    """The bridge's ~/fix as tests/ar/fix_recorder.py prints it: (monotonic, lat, lon)."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.points: list[tuple[float, float, float]] = []
        self._lock = threading.Lock()
        self.process = ros.spawn(ros.python_module_command("tests.ar.fix_recorder", "/vehicle_bridge/fix"), env,
                                 stdout=subprocess.PIPE, stderr=open(log, "w"), text=True, cwd=REPO,
                                 die_with_parent=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            t, lat, lon = (float(x) for x in line.split())
            with self._lock:
                self.points.append((t, lat, lon))

    def since(self, t: float) -> list[tuple[float, float, float]]:
        with self._lock:
            return [p for p in self.points if p[0] > t]

    def last_before(self, t: float) -> Optional[tuple[float, float, float]]:
        with self._lock:
            before = [p for p in self.points if p[0] <= t]
        return before[-1] if before else None

    def close(self) -> None:
        ros.stop(self.process, 5.0)


class Modes:
    """The simulator's mode every millisecond: (monotonic, mode) at each change."""

    def __init__(self, sim: MavlinkSimulator) -> None:
        self.sim, self.changes = sim, [(time.monotonic(), sim.mode)]
        self._stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.wait(0.001):
            mode = self.sim.mode
            if mode != self.changes[-1][1]:
                self.changes.append((time.monotonic(), mode))

    def first(self, mode: str, after: float) -> Optional[float]:
        return next((t for t, m in list(self.changes) if t > after and m == mode), None)

    def close(self) -> None:
        self._stop.set()


def _wait(holds, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = holds()
        if got:
            return got
        time.sleep(0.002)
    raise TimeoutError(what)


def _reset(console: ConsoleSocket) -> None:
    before = console.state["answer_count"]
    console.send({"type": "reset_estop"})
    answer = console.answer("reset_estop", before)
    assert answer["ok"], answer
    console.wait(lambda s: bool(s["safety"]) and not s["safety"]["estop"], 10, "released")


def _new_goal_while_latched(console: ConsoleSocket) -> dict[str, Any]:
    """The Seek form pressed while latched: the stack's answer, or {"ok": True} when it runs."""
    return start_seek(console, 0.0)


def _goal(console: ConsoleSocket) -> None:
    """A Seek under way: the one sent while latched may still run after Reset; else a new one (a
    goal the server took shows "starting" until its first step or its refusal)."""
    state = console.wait(lambda s: s["seek"]["state"] != "starting", 60, "the taken Seek to step or end")
    if state["seek"]["state"] != "running":
        started = start_seek(console)
        assert started["ok"], started


def _moved(a: tuple[float, float, float], b: tuple[float, float, float], metres: float = 0.001) -> bool:
    return geodesic_m(a[1], a[2], b[1], b[2]) > metres


def walker_cycles(console: ConsoleSocket, press: Any, fixes: Fixes, presses: int) -> list[dict[str, Any]]:
    cycles = []
    while len(cycles) < presses:
        _goal(console)

        def moving() -> bool:
            recent = fixes.since(time.monotonic() - 0.1)
            return len(recent) >= 3 and _moved(recent[-2], recent[-1]) and _moved(recent[0], recent[-1], 0.05)

        _wait(moving, 60, "the walker never moved")
        pressed = press()
        console.wait(lambda s: bool(s["safety"]) and s["safety"]["estop"], 10, "latched")
        time.sleep(max(0.0, pressed + 1.0 - time.monotonic()))
        after = fixes.since(pressed)
        rest = after[-1]
        # the hold: the first fix from which on the walker never left where it rests
        first = next(i for i in range(len(after)) if not any(_moved(rest, p) for p in after[i:]))
        held = after[first]
        goal = _new_goal_while_latched(console)
        time.sleep(LATCHED_S)
        reset_at = time.monotonic()
        latched = [p for p in fixes.since(held[0] - 1e-6) if p[0] < reset_at]
        moves = sum(1 for a, b in zip(latched, latched[1:]) if _moved(a, b, 0.01))
        seek_latched = console.state["seek"]
        _reset(console)
        cycles.append({"press_to_hold_s": held[0] - pressed, "moves_latched": moves, "goal_latched": goal,
                       "fixes_latched": len(latched), "seek_at_reset": seek_latched})
        print(f"walker press {len(cycles)}: {held[0] - pressed:.3f} s, moves while latched {moves} "
              f"(of {len(latched)} fixes), goal while latched: {goal['ok']} {goal['message'][:60]}", flush=True)
    return cycles


def mavlink_cycles(console: ConsoleSocket, press: Any, sim: MavlinkSimulator, presses: int) -> list[dict[str, Any]]:
    modes, cycles = Modes(sim), []
    hold = sim.flavour.hold_mode
    try:
        while len(cycles) < presses:
            _goal(console)
            _wait(lambda: sim.mode == sim.flavour.control_mode and abs(sim.vel[0]) + abs(sim.vel[1]) > 0.5, 120,
                  "the vehicle never flew")
            time.sleep(0.3)
            pressed = press()
            held = _wait(lambda pressed=pressed: modes.first(hold, pressed), 10, f"never {hold}")
            console.wait(lambda s: bool(s["safety"]) and s["safety"]["estop"], 10, "latched")
            goal = _new_goal_while_latched(console)
            time.sleep(LATCHED_S)
            moves = sim.count(SETPOINTS, held + 0.3) + sim.count(frozenset(), held + 0.3, MOTION_COMMANDS)
            mode_latched, seek_latched = sim.mode, console.state["seek"]
            _reset(console)
            cycles.append({"press_to_hold_s": held - pressed, "moves_latched": moves, "goal_latched": goal,
                           "mode_latched": mode_latched, "seek_at_reset": seek_latched})
            print(f"mavlink press {len(cycles)}: {held - pressed:.3f} s, commands while latched {moves}, mode "
                  f"{mode_latched}, goal while latched: {goal['ok']} {goal['message'][:80]}", flush=True)
    finally:
        modes.close()
    return cycles


def run_link(link: str, world: Path, presses: int, press_kind: str, tmp: Path) -> dict[str, Any]:
    out = tmp / link
    press: Any = None
    with ros.lease_domain() as domain:
        if link == "walker":
            seek_args = ("--source", "replay", *VIEWS)
            with live_console(world, out, domain, seek_args, bridge_params={"state_rate_hz": 50.0}) as (console, _):
                fixes = Fixes(ros.ros_env(domain_id=domain), tmp / "fix_recorder.log")
                try:
                    press = PRESSES[press_kind](console)
                    cycles = walker_cycles(console, press, fixes, presses)
                finally:
                    fixes.close()
                    if press is not None:
                        press.close()
            command = (f"cityseeker seek \"I am thirsty\" --world {world.name} --policy random --max-steps 30 "
                       f"--source replay {' '.join(VIEWS)} --console (vehicle_bridge state_rate_hz 50)")
        else:
            _, _, node = home_node(world)
            port = free_udp_port()
            seek_args = ("--vehicle", f"mavlink:udp://127.0.0.1:{port}", "--link-param", "takeoff_alt_m=5",
                         "--safety-config", str(SAFETY), "--source", "replay", *TINY_VIEWS)
            with MavlinkSimulator("px4", port, home=(node.lat, node.lon, 10.0), **WITHIN_LIMITS) as sim, \
                    live_console(world, out, domain, seek_args) as (console, _):
                console.wait(lambda s: bool(s["safety"]) and s["safety"]["connected"], 60, "connected")
                try:
                    press = PRESSES[press_kind](console)
                    cycles = mavlink_cycles(console, press, sim, presses)
                finally:
                    if press is not None:
                        press.close()
            command = (f"cityseeker seek \"I am thirsty\" --world {world.name} --policy random --max-steps 30 "
                       f"--vehicle mavlink:udp://127.0.0.1:PORT --link-param takeoff_alt_m=5 --safety-config "
                       f"config/safety.yaml --source replay {' '.join(TINY_VIEWS)} --console "
                       f"(MAVLink simulator, PX4 rules, in-process)")
    times = [c["press_to_hold_s"] for c in cycles]
    shown = getattr(press, "latch_shown_s", None)
    return {"link": link, "command": command, "press": press_kind, "presses": len(cycles),
            "latch_shown_p50_s": statistics.median(shown) if shown else None,
            "p50_s": statistics.median(times), "p95_s": pct(times, 0.95), "max_s": max(times),
            "moves_latched": sum(c["moves_latched"] for c in cycles),
            "goal_latched_answers": sorted({f"{c['goal_latched']['ok']}: {c['goal_latched']['message']}"
                                            for c in cycles}),
            "cycles": cycles}


def monaco_world(tmp: Path) -> Path:
    from cityseeker_ros.core.worlds.build import build_world
    from cityseeker_ros.core.worlds.osm_sources import default_cache_dir, fetch_source

    out = tmp / "monaco"
    build_world(str(fetch_source("monaco", default_cache_dir())), out, name="monaco", families=["needs"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presses", type=int, default=30)
    parser.add_argument("--links", default="walker,mavlink")
    parser.add_argument("--press", choices=sorted(PRESSES), default="socket",
                        help="the page's message on the console socket, or a mouse press in Chromium")
    parser.add_argument("--world", type=Path, help="a Monaco world folder (default: built from the extract)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="console-estop-") as folder:
        tmp = Path(folder)
        world = args.world or monaco_world(tmp)
        results = [run_link(link, world, args.presses, args.press, tmp) for link in args.links.split(",")]
    for r in results:
        shown = r["latch_shown_p50_s"]
        shown = "" if shown is None else f"; LATCHED on the page p50 {shown * 1000:.0f} ms after the press"
        print(f"\n{r['link']}: {r['command']}\n  press ({r['press']}) -> hold on the vehicle over "
              f"{r['presses']} presses: "
              f"p50 {r['p50_s'] * 1000:.0f} ms, p95 {r['p95_s'] * 1000:.0f} ms, max {r['max_s'] * 1000:.0f} ms; "
              f"moves between the press and Reset (a new goal sent while latched): {r['moves_latched']}\n"
              f"  the new goal's answers while latched: {r['goal_latched_answers']}{shown}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["moves_latched"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
