"""In-process environment steps per second with the `random` policy on a CitySeeker city.

Measures two loops side by side in one run: the bare environment loop (observe, act,
step) and whole episodes as the benchmark runs them (with metrics and the record).
Target: >= 1,000 steps/s on the 2-core development machines.

    python benchmarks/env_step.py [--data ../shared/data/cityseeker/HongKong_6] [--seeds 5]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.episode_run import episode_rng, run_episode
from cityseeker_ros.core.tasks.environment import Environment

TARGET = 1000.0
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cityseeker" / "HongKong_6"


def bare_loop(world, seeds: int) -> tuple[int, float]:
    env, policy, steps = Environment(world), make_policy("random"), 0
    t0 = time.perf_counter()
    for seed in range(seeds):
        for ep in world.episodes:
            obs = env.reset(ep)
            policy.reset(ep, episode_rng(seed, ep.episode_id))
            while not env.done:
                obs = env.step(policy.act(obs)).observation
            steps += env.trajectory.steps
    return steps, time.perf_counter() - t0


def full_episodes(world, seeds: int) -> tuple[int, float]:
    policy, steps = make_policy("random"), 0
    t0 = time.perf_counter()
    for seed in range(seeds):
        for ep in world.episodes:
            steps += run_episode(world, ep, policy, seed)["steps"]
    return steps, time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    world = load_dataset(args.data)[0]
    _ = world.actions  # build the action table outside the timed loops
    print(f"command: python {' '.join(sys.argv)}")
    print(f"data: {world.city}, {len(world.graph)} nodes, {len(world.episodes)} episodes x {args.seeds} seeds")
    for name, fn in (("bare env loop", bare_loop), ("episodes + metrics", full_episodes)):
        steps, secs = fn(world, args.seeds)
        rate = steps / secs
        print(f"{name:<20} {steps:>7} steps in {secs:6.2f} s = {rate:9.0f} steps/s "
              f"({rate / TARGET:5.1f}x the {TARGET:.0f} steps/s target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
