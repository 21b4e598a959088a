"""Calls, tokens and seconds per step of every seed agent, on one model loaded once.

    python benchmarks/agent_calls.py --arch qwen2.5-vl --size 7b --device cuda --json out.json   # needs: GPU
    python benchmarks/agent_calls.py --arch qwen2.5-vl --size tiny --device cpu --episodes 1 --max-steps 2

Each agent runs the first `--episodes` test episodes of its own family on the shipped Monaco
world (`vlm`, `navgpt`, `mapgpt` on needs, `prep` on landmark goals, `pma` on questions), with
a step budget of `--max-steps` (in place of the family's own) and one transformers backend shared
by all: a random-weight model built from the architecture's config (nothing is downloaded, so
replies are noise and every answer falls back; tokens out hit `--new-tokens` at every call, the
worst case, which is what the seconds measure). Views are `--view-size` images: seeded noise by
default (a machine without the renderer's fonts runs it too; the model's cost depends on the
pixels' count, not their content), or `--views rendered`. It prints one row per agent: steps,
calls, tokens in and out, and seconds per step, with the calls per role.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cityseeker_ros.core.agents.policies import make_policy  # noqa: E402
from cityseeker_ros.core.datasets import load_dataset  # noqa: E402
from cityseeker_ros.core.evaluation.decisions import calls_per_agent  # noqa: E402
from cityseeker_ros.core.evaluation.episode_run import run_episode  # noqa: E402
from cityseeker_ros.core.sensing.views import make_view_source  # noqa: E402
from cityseeker_ros.core.sensing.views.source import ViewSource  # noqa: E402


class NoiseViews(ViewSource):
    """Seeded noise of `size` per node and heading, and a panorama twice as wide."""

    name = "noise"

    def __init__(self, size: tuple[int, int]) -> None:
        self.width, self.height = size

    def _image(self, node: Any, salt: float, width: int) -> np.ndarray:
        seed = zlib.crc32(f"{node.id}/{salt:.1f}".encode())
        return np.random.default_rng(seed).integers(0, 256, (self.height, width, 3), dtype=np.uint8)

    def images(self, node: Any, headings: list[float]) -> list[np.ndarray]:
        return [self._image(node, h, self.width) for h in headings]

    def panorama_view(self, node: Any, facing: float) -> np.ndarray:
        return self._image(node, 1000.0 + facing, 2 * self.width)


FAMILY_OF = {"vlm": "needs", "navgpt": "needs", "mapgpt": "needs", "prep": "landmarks", "pma": "questions"}


def build_backend(args: argparse.Namespace) -> Any:
    import tempfile

    import torch

    from cityseeker_ros.core.agents.vlm.random_models import build_random_checkpoint, build_random_model
    from cityseeker_ros.core.agents.vlm.transformers_backend import TransformersBackend

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    folder = Path(tempfile.mkdtemp(prefix=f"random-{args.arch}-{args.size}-"))
    build_random_checkpoint(args.arch, folder, size=args.size, seed=0)
    dtype = "bfloat16" if device != "cpu" else "float32"
    began = time.perf_counter()
    model = build_random_model(args.arch, args.size, dtype, device, seed=0)
    print(f"built random {args.arch}-{args.size} ({dtype}) on {device} in {time.perf_counter() - began:.1f} s",
          flush=True)
    return TransformersBackend.from_model(model, folder, ignore_eos=True, max_batch_size=1)


def vlm_row(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The VLM policy's own records (one per decision, its calls summed) in calls_per_agent's shape."""
    seconds = [float((d.get("latency_s") or {}).get("total") or 0.0) for d in steps]
    tokens_in = [d["tokens"]["prompt"] for d in steps if (d.get("tokens") or {}).get("prompt") is not None]
    tokens_out = [d["tokens"]["completion"] for d in steps if (d.get("tokens") or {}).get("completion") is not None]
    calls = [len(d.get("raw") or []) or 1 for d in steps]
    def mean(xs: list) -> Any:
        return round(statistics.fmean(xs), 3) if xs else None

    return {"steps": len(steps), "calls_per_step": mean(calls), "tokens_in_per_step": mean(tokens_in),
            "tokens_out_per_step": mean(tokens_out), "seconds_per_step": mean(seconds),
            "roles": {"decision": sum(calls)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="qwen2.5-vl")
    parser.add_argument("--size", default="tiny", help="tiny, 3b, 7b")
    parser.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--world", type=Path, default=REPO / "worlds" / "monaco")
    parser.add_argument("--agents", default="vlm,navgpt,mapgpt,prep,pma")
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=96)
    parser.add_argument("--views", choices=("noise", "rendered"), default="noise")
    parser.add_argument("--view-size", default="640x480", help="WIDTHxHEIGHT of the noise views")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    backend = build_backend(args)
    rows: dict[str, Any] = {}
    for agent in args.agents.split(","):
        family = FAMILY_OF[agent]
        world = load_dataset(args.world, "world", family=family)[0]
        size = tuple(int(v) for v in args.view_size.lower().split("x"))
        views = make_view_source("rendered", world, {}) if args.views == "rendered" else NoiseViews(size)
        steps: list[dict[str, Any]] = []
        began = time.perf_counter()
        for episode in world.episodes[:args.episodes]:
            policy = make_policy(agent, backend_instance=backend, max_new_tokens=args.new_tokens)
            capped = replace(episode, budget=args.max_steps)  # the family's own budget would run on
            record = run_episode(world, capped, policy, 0, max_steps=args.max_steps, views=views)
            steps += record.get("decisions", [])
        row = vlm_row(steps) if agent == "vlm" else calls_per_agent(steps).get(agent, {"steps": 0})
        row.update(family=family, wall_s=round(time.perf_counter() - began, 1))
        rows[agent] = row
        print(f"{agent:7s} on {family:9s}: {row['steps']} steps, {row.get('calls_per_step')} calls/step, tokens "
              f"in {row.get('tokens_in_per_step')} out {row.get('tokens_out_per_step')} per step, "
              f"{row.get('seconds_per_step')} s/step; roles {row.get('roles')}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "agents": rows}, indent=1))


if __name__ == "__main__":
    main()
