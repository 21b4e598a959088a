"""Per-step overhead of the ROS 2 loop against the in-process loop, side by side in one run.

One step over ROS is views -> supervisor -> decision node -> supervisor -> action -> world node
-> next views, each arrow a message over DDS on loopback (four processes, `cityseeker run
benchmark`); in process it is `policy.act(observation)` and `env.step(action)`. Both run the
same policy on the same episodes. The ROS figure is the supervisor's per-episode median period
from one view set to the next (its log's "loop:" lines), so process start-up and episode
selection are not counted. Two cases, each against its own in-process loop:

- headings: the `forward` policy, no images. Target: at most 10 ms added per step (p50).
- images: `forward-seeing`, forward's choice made only once every view's image is in hand, on
  a torus of 4-way crossings (every step has exactly 4 views; real cities average about 2), the
  views cut from synthetic panoramas (panorama-folder, --view-size, 640x480 by default, every
  panorama cached after its first use on both sides). The world node sends them in
  `--image-format` (default: the run's default, raw); the decision node decodes them all.
  Target: at most 15 ms added per step (p50).

`forward-seeing` is a benchmark policy, not one of the project's: every process of the ROS run
registers it through a `sitecustomize` module on PYTHONPATH, so the stack itself runs unchanged.
`--codecs` prints what one view costs to encode and decode in each image_format instead.

    python benchmarks/ros_loop.py [--data ../shared/data/cityseeker/HongKong_6] [--episodes 20]
                                  [--single-process] [--view-size 640x480] [--cases headings,images]
                                  [--image-format raw|png|jpeg]
    python benchmarks/ros_loop.py --codecs
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.policies import POLICIES, make_policy
from cityseeker_ros.core.agents.policies.baselines import ForwardPolicy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.episode_run import episode_rng
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.tasks.environment import Action, Environment, Observation

TARGET_MS = {"headings": 10.0, "images": 15.0}
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cityseeker" / "HongKong_6"
# "[INFO] [<epoch s>] [supervisor]: loop: ..." (rcutils' default format)
LOOP_LINE = re.compile(r"\[([\d.]+)\] \[[^]]*\]: loop: (\d+) steps, period p50 ([\d.]+) ms p95 ([\d.]+) ms")
SEEING = "forward-seeing"
PANO_SIZE = (2048, 1024)
M_PER_DEG = 6378137.0 * math.pi / 180.0  # Web-Mercator units per degree of longitude


class ForwardSeeingPolicy(ForwardPolicy):
    """forward that must be shown every view's image first: its path is forward's, and its cost
    over ROS is the images' trip (encode, DDS, decode)."""

    uses_images = True

    @staticmethod
    def shows_panorama(params: dict[str, Any]) -> bool:
        return False  # views only: the stop prompt's panorama is not part of this case

    def act(self, observation: Observation) -> Action:
        missing = [v.index for v in observation.views if v.image is None or v.image.ndim != 3]
        if missing:
            raise ValueError(f"forward-seeing: views {missing} came without an image")
        return super().act(observation)


def register_seeing_policy() -> None:
    if SEEING not in POLICIES:
        POLICIES.register(SEEING)(ForwardSeeingPolicy)


def synthetic_panoramas(folder: Path, nodes: Sequence[str], size: tuple[int, int] = PANO_SIZE) -> Path:
    """One JPEG panorama per node: a colour gradient with per-node noise, about as hard to
    compress as a street photo (PNG gains little on either)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    w, h = size
    grad = np.linspace(0, 120, w, dtype=np.float32)[None, :, None] * np.array([0, 0.3, 0.2], np.float32)
    for i, node in enumerate(sorted(set(nodes))):
        noise = np.random.default_rng(i).normal(0, 20, (h, w, 3)).astype(np.float32)
        pixels = np.clip(np.array([200, 90, 30], np.float32) - grad + noise, 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"{node}.jpg", quality=90)
    return folder


def torus_city(folder: Path, episodes: int, n: int = 10, spacing_m: float = 20.0) -> tuple[Path, list[str]]:
    """An n x n grid of 4-way crossings whose edges wrap around, in the CitySeeker release format:
    every node has 4 walkable headings, so every step shows 4 views. Episodes start along the
    rows, heading east (forward walks on until the step budget)."""
    def name(r: int, c: int) -> str:
        return f"{(r % n) * n + (c % n):08d}.jpg"

    def point(r: int, c: int) -> dict[str, Any]:
        return {"filename": name(r, c), "latitude": r * spacing_m / 110574.3, "longitude": c * spacing_m / M_PER_DEG}

    moves = {0.0: (1, 0), 90.0: (0, 1), 180.0: (-1, 0), 270.0: (0, -1)}
    edges = [{"start_filename": name(r, c), "start_walkable_headings": list(moves), "start_heading": 90.0,
              "end_filename": name(r + dr, c + dc), "end_walkable_headings": list(moves), "end_heading": 90.0,
              "edge_azimuth": az, "edge_distance": spacing_m}
             for r in range(n) for c in range(n) for az, (dr, dc) in moves.items()]
    questions = [{"folder": "convenience store", "question": "I'm thirsty.", "question_idx": i, "idx": 0,
                  "from": name(i % n, i // n), "to": name(i % n, i // n + 3), "total_weight": 3 * spacing_m,
                  "total_steps": 4, "complete_route": [point(i % n, i // n + k) for k in range(4)],
                  "difficulty": "easy", "category": "question1", "city": "torus"} for i in range(episodes)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "connections.json").write_text(json.dumps(edges))
    (folder / "question.json").write_text(json.dumps(questions))
    return folder, [name(r, c).removesuffix(".jpg") for r in range(n) for c in range(n)]  # node ids


def in_process_step_ms(data: Path, episodes: int, policy_name: str = "forward",
                       views: Optional[dict[str, Any]] = None) -> tuple[list[float], float]:
    """Median milliseconds per step of each episode (observe, act, step), and views per step."""
    world = load_dataset(data)[0]
    source = make_view_source("panorama-folder", world, views) if views else None
    env, policy, medians, shown = Environment(world, views=source), make_policy(policy_name), [], []
    for ep in world.episodes[:episodes]:
        obs = env.reset(ep)
        policy.reset(ep, episode_rng(0, ep.episode_id))
        times = []
        while not env.done:
            shown.append(len(obs.views))
            t0 = time.perf_counter()
            obs = env.step(policy.act(obs)).observation
            times.append(time.perf_counter() - t0)
        medians.append(1000 * statistics.median(times))
    return medians, statistics.fmean(shown) if shown else 0.0


class CpuSampler:
    """CPU seconds (user + system, /proc/PID/stat) of a run's processes, sampled every `period_s`
    while it runs, so the CPU spent between two instants can be read afterwards: a figure that,
    unlike the wall-clock period, hardly moves when other work shares the cores."""

    TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")

    def __init__(self, processes_file: Path, period_s: float = 0.05) -> None:
        self.processes_file, self.period_s = processes_file, period_s
        self.samples: list[tuple[float, dict[str, float]]] = []  # (wall time, name -> CPU s)
        self._pids: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            with contextlib.suppress(OSError, ValueError):
                for entry in json.loads(self.processes_file.read_text()):
                    self._pids[entry["name"]] = entry["pid"]  # a respawned node: its newest PID
            cpu = {}
            for name, pid in self._pids.items():
                with contextlib.suppress(OSError):
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    cpu[name] = (int(fields[11]) + int(fields[12])) * self.TICK_S  # utime, stime
            if cpu:
                self.samples.append((time.time(), cpu))

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds per process from the last sample at or before `start` to the first at or
        after `end` (a process missing from either sample counts from 0 or to its last)."""
        before = [c for t, c in self.samples if t <= start]
        after = [c for t, c in self.samples if t >= end]
        if not before or not after:
            raise ValueError("no CPU samples around the measured window")
        return {name: cpu - before[-1].get(name, 0.0) for name, cpu in after[0].items()}


@dataclass
class RosFigures:
    """The supervisor's per-episode p50 and p95 periods, and CPU per step from the end of the
    first episode to the end of the last (so start-up is not counted) for each process."""

    p50s: list[float]
    p95s: list[float]
    cpu_ms_per_step: dict[str, float]


def ros_step_ms(data: Path, episodes: int, single_process: bool, policy_name: str = "forward",
                views: Optional[dict[str, Any]] = None,
                image_format: Optional[str] = None) -> RosFigures:
    """Per-episode p50 and p95 of the supervisor's view-set-to-view-set period, and CPU per step."""
    extra: list[str] = []
    hook: Optional[Path] = None
    if views:
        extra += ["--views", "panorama-folder"] + [a for k, v in views.items() for a in ("--view-param", f"{k}={v}")]
        hook = Path(__file__).resolve().parent  # every process of the run knows forward-seeing
        if image_format:
            extra += ["--image-format", image_format]
    return run_benchmark_over_ros(data, episodes, single_process, policy_name, extra, hook)


def run_benchmark_over_ros(data: Path, episodes: int, single_process: bool, policy_name: str, extra: Sequence[str],
                           hook: Optional[Path] = None) -> RosFigures:
    """`cityseeker run benchmark` on the first `episodes` episodes with `extra` arguments; `hook`: a
    benchmarks folder whose ros_loop registers forward-seeing in every process of the run."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = [sys.executable, "-m", "cityseeker_ros.cli", "run", "benchmark", "--data", str(data), "--policy",
                   policy_name, "--limit", str(episodes), "--out", str(out), "--timeout", "600", *extra]
        env = dict(os.environ)
        if hook is not None:
            site = Path(tmp) / "hook"
            site.mkdir()
            (site / "sitecustomize.py").write_text(
                f"import sys\nsys.path.insert(0, {str(hook)!r})\n"
                "import ros_loop\nros_loop.register_seeing_policy()\n")
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
        with CpuSampler(out / "ros" / "processes.json") as cpu:
            done = subprocess.run(command + (["--single-process"] if single_process else []), capture_output=True,
                                  text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"cityseeker run benchmark failed:\n{done.stdout}\n{done.stderr}")
        log = (out / "ros" / ("single_process.log" if single_process else "supervisor.log")).read_text()
    found = LOOP_LINE.findall(log)
    if len(found) != episodes:
        sys.exit(f"expected {episodes} 'loop:' lines in the supervisor's log, found {len(found)}")
    cpu_ms: dict[str, float] = {}
    if episodes > 1:
        steps = sum(int(n) for _, n, _, _ in found[1:])
        used = cpu.between(float(found[0][0]), float(found[-1][0]))
        cpu_ms = {name: 1000 * s / steps for name, s in sorted(used.items())}
    return RosFigures([float(f[2]) for f in found], [float(f[3]) for f in found], cpu_ms)


def codec_ms(sizes: Sequence[tuple[int, int]] = ((640, 480), (1280, 960)), repeats: int = 7) -> None:
    """Encode (image_to_msg) and decode (image_from_msg) of one view per image_format, medians."""
    from cityseeker_ros.core.infra.stamp import Stamp
    from cityseeker_ros.ros import convert

    for w, h in sizes:
        pixels = np.asarray(synthetic_view(w, h))
        for image_format in convert.IMAGE_FORMATS:
            enc, dec = [], []
            for _ in range(repeats):
                t0 = time.perf_counter()
                msg = convert.image_to_msg(pixels, Stamp(sec=0, nanosec=0), "view_0", image_format)
                t1 = time.perf_counter()
                back = convert.image_from_msg(msg)
                dec.append(time.perf_counter() - t1)
                enc.append(t1 - t0)
            exact = "exact" if np.array_equal(back, pixels) else "lossy"
            print(f"  {w}x{h} {image_format:5s} encode {1000 * statistics.median(enc):7.2f} ms  decode "
                  f"{1000 * statistics.median(dec):7.2f} ms  {len(msg.data):>9,} bytes  {exact}  "
                  f"({convert.wire_format(msg)})")
        enc, dec = [], []
        for _ in range(repeats):  # PNG without zlib compression: not offered, for the record
            t0 = time.perf_counter()
            data = _png_level0(pixels)
            t1 = time.perf_counter()
            convert.decode_image(data)
            dec.append(time.perf_counter() - t1)
            enc.append(t1 - t0)
        print(f"  {w}x{h} png-0 encode {1000 * statistics.median(enc):7.2f} ms  decode "
              f"{1000 * statistics.median(dec):7.2f} ms  {len(data):>9,} bytes  exact  (zlib level 0, not offered)")


def _png_level0(pixels: np.ndarray) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", compress_level=0)
    return buffer.getvalue()


def synthetic_view(w: int, h: int) -> np.ndarray:
    """A view cut from one synthetic panorama, as the image case sends."""
    from cityseeker_ros.core.sensing.views.panorama import PanoramaCutter

    with tempfile.TemporaryDirectory() as tmp:
        from PIL import Image

        path = synthetic_panoramas(Path(tmp), ["n"]) / "n.jpg"
        with Image.open(path) as image:
            pano = np.asarray(image.convert("RGB"))
    return PanoramaCutter(120.0, w, h).cut(pano, 30.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--single-process", action="store_true", help="all nodes in one process")
    parser.add_argument("--view-size", default="640x480", help="images case: WIDTHxHEIGHT of each view")
    parser.add_argument("--cases", default="headings,images", help="comma-separated: headings, images")
    parser.add_argument("--image-format", help="images case: the run's image_format (default: its default)")
    parser.add_argument("--codecs", action="store_true", help="only time encode/decode per image_format")
    args = parser.parse_args()
    if args.codecs:
        print("one view per image_format (image_to_msg, image_from_msg), medians of 7:")
        codec_ms()
        return
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = sorted(set(cases) - set(TARGET_MS))
    if unknown:
        sys.exit(f"--cases: unknown {unknown}; known: {', '.join(TARGET_MS)}")
    width, height = (int(v) for v in args.view_size.lower().split("x"))
    register_seeing_policy()
    mode = "one process" if args.single_process else "four processes"
    print(f"{args.episodes} episodes per case, ROS 2 over loopback DDS ({mode})")
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            views, data = None, args.data
            if case == "images":
                data, nodes = torus_city(Path(tmp) / "Torus_1", args.episodes)
                views = {"folder": str(synthetic_panoramas(Path(tmp) / "panos", nodes)), "width": width,
                         "height": height, "cache_size": len(nodes)}
            policy = SEEING if views else "forward"
            local, per_step = in_process_step_ms(data, args.episodes, policy, views)
            ros = ros_step_ms(data, args.episodes, args.single_process, policy, views, args.image_format)
            in_process, over_ros = statistics.median(local), statistics.median(ros.p50s)
            added, target = over_ros - in_process, TARGET_MS[case]
            what = (f"{policy}, {per_step:.2f} views of {width}x{height} per step, image_format "
                    f"{args.image_format or 'default'}" if views else f"{policy}, no images")
            print(f"{case} on {data.name} ({what}):")
            print(f"  in process:  {in_process:8.3f} ms per step (median of per-episode medians)")
            print(f"  over ROS 2:  {over_ros:8.3f} ms per step p50 (p95 {statistics.median(ros.p95s):.3f} ms); "
                  f"load average {os.getloadavg()[0]:.2f}")
            print(f"  added:       {added:8.3f} ms per step; ratio {over_ros / in_process:.1f}x; target <= {target:g} "
                  f"ms: {'met' if added <= target else 'NOT met'}")
            if ros.cpu_ms_per_step:
                parts = ", ".join(f"{name} {ms:.2f}" for name, ms in ros.cpu_ms_per_step.items())
                print(f"  CPU:         {sum(ros.cpu_ms_per_step.values()):8.3f} ms per step over all processes "
                      f"({parts}); in process {in_process:.3f}")


if __name__ == "__main__":
    main()
