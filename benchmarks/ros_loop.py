"""Per-step overhead of the ROS 2 loop against the in-process loop, side by side in one run.

One step over ROS is views -> supervisor -> decision node -> supervisor -> action -> world node
-> next views, each arrow a message over DDS on loopback (four processes, `cityseeker run
benchmark`); in process it is `policy.act(observation)` and `env.step(action)`. Both run the
trivial `forward` policy on the same episodes. The ROS figure is the supervisor's per-episode
median period from one view set to the next (its log's "loop:" lines), so process start-up
and episode selection are not counted. Target: at most 10 ms added per step (p50).

    python benchmarks/ros_loop.py [--data ../shared/data/cityseeker/HongKong_6] [--episodes 20] [--single-process]
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cityseeker_ros.core.benchmark import episode_rng
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.environment import Environment
from cityseeker_ros.core.policies import make_policy

TARGET_MS = 10.0
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cityseeker" / "HongKong_6"
LOOP_LINE = re.compile(r"loop: (\d+) steps, period p50 ([\d.]+) ms p95 ([\d.]+) ms")


def in_process_step_ms(data: Path, episodes: int) -> list[float]:
    """Median milliseconds per step of each episode: observe, act, step."""
    world = load_dataset(data)[0]
    env, policy, medians = Environment(world), make_policy("forward"), []
    for ep in world.episodes[:episodes]:
        obs = env.reset(ep)
        policy.reset(ep, episode_rng(0, ep.episode_id))
        times = []
        while not env.done:
            t0 = time.perf_counter()
            obs = env.step(policy.act(obs)).observation
            times.append(time.perf_counter() - t0)
        medians.append(1000 * statistics.median(times))
    return medians


def ros_step_ms(data: Path, episodes: int, single_process: bool) -> tuple[list[float], list[float]]:
    """Per-episode p50 and p95 of the supervisor's view-set-to-view-set period."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = [sys.executable, "-m", "cityseeker_ros.cli", "run", "benchmark", "--data", str(data), "--policy",
                   "forward", "--limit", str(episodes), "--out", str(out), "--timeout", "600"]
        done = subprocess.run(command + (["--single-process"] if single_process else []), capture_output=True,
                              text=True)
        if done.returncode != 0:
            sys.exit(f"cityseeker run benchmark failed:\n{done.stdout}\n{done.stderr}")
        log = (out / "ros" / ("single_process.log" if single_process else "supervisor.log")).read_text()
    found = LOOP_LINE.findall(log)
    return [float(p50) for _, p50, _ in found], [float(p95) for _, _, p95 in found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--single-process", action="store_true", help="all nodes in one process")
    args = parser.parse_args()
    local = in_process_step_ms(args.data, args.episodes)
    p50s, p95s = ros_step_ms(args.data, args.episodes, args.single_process)
    if len(p50s) != args.episodes:
        sys.exit(f"expected {args.episodes} 'loop:' lines in the supervisor's log, found {len(p50s)}")
    in_process, over_ros = statistics.median(local), statistics.median(p50s)
    added = over_ros - in_process
    mode = "one process" if args.single_process else "four processes"
    print(f"{args.episodes} episodes of forward on {args.data.name}, ROS 2 over loopback DDS ({mode})")
    print(f"  in process:  {in_process:8.3f} ms per step (median of per-episode medians)")
    print(f"  over ROS 2:  {over_ros:8.3f} ms per step p50 (p95 {statistics.median(p95s):.3f} ms)")
    print(f"  added:       {added:8.3f} ms per step; ratio {over_ros / in_process:.0f}x; target <= {TARGET_MS:g} ms: "
          f"{'met' if added <= TARGET_MS else 'NOT met'}")


if __name__ == "__main__":
    main()
