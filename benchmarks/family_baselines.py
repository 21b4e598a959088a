"""Every task family's baselines on built worlds: one Markdown table per world and family.

    python benchmarks/family_baselines.py --worlds /tmp/F/monaco /tmp/F/helsinki ... --out /tmp/F/runs

For each world folder (built with `cityseeker world build NAME --out DIR`, every family) and
each family it holds, runs the family's chance, ceiling, perfect-perception and CPU agents on
the same episodes (`--per-category`) and prints their headline measures side by side, with the
world's facts the family states (landmark count, shortest routes). Images come from the
rendered view source for the policies that read them. Runs resume: a folder already complete
is read, not run again.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.tasks.family import get_family

# (policy, seeds): chance over 5 seeds, the rest deterministic.
ROWS = {
    "needs": (("random", 5), ("ocr-embed", 1), ("sign-oracle", 1), ("oracle", 1)),
    "landmarks": (("random", 5), ("landmark-seeker", 1), ("landmark-oracle", 1), ("oracle", 1)),
    "questions": (("question-random", 5), ("question-ocr", 1), ("question-sign-oracle", 1), ("question-oracle", 1)),
}


def run(world: Path, family: str, policy: str, seeds: int, per_category: int, out: Path) -> tuple[dict, float]:
    images = POLICIES.get(policy).uses_images
    config = BenchmarkConfig(data=str(world), family=family, policy=policy, seeds=list(range(seeds)),
                             per_category=per_category, views="rendered" if images else None)
    began = time.perf_counter()
    summary = Benchmark(config).run(out, progress=False)
    return summary, time.perf_counter() - began


def table(world: Path, family: str, per_category: int, out: Path) -> str:
    fam = get_family(family)
    keys = fam.headline
    lines = [f"**{world.name} / {family}** ({fam.seed_paper}): " + json.dumps(fam.describe(world),
                                                                                ensure_ascii=False)[:600],
             "", "| policy | episodes x seeds | " + " | ".join(f"{fam.spec(k).label} ({fam.spec(k).unit})"
                                                           for k in keys) + " | wall s |",
             "|---|---|" + "---|" * (len(keys) + 1)]
    for policy, seeds in ROWS[family]:
        summary, wall = run(world, family, policy, seeds, per_category, out / world.name / family / policy)
        overall, sd = summary["overall"], summary.get("overall_sd") or {}
        cells = [f"{overall[k]:.1f}" + (f" ± {sd[k]:.1f}" if k in sd else "") for k in keys]
        lines.append(f"| {policy} | {overall['episodes']} x {overall['seeds']} | " + " | ".join(cells)
                     + f" | {wall:.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worlds", nargs="+", type=Path, required=True)
    parser.add_argument("--families", default="needs,landmarks,questions")
    parser.add_argument("--per-category", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    for world in args.worlds:
        for family in args.families.split(","):
            if not (world / get_family(family).tasks_file).is_file():
                print(f"**{world.name} / {family}**: no tasks ({json.dumps(read_warnings(world))[:300]})\n")
                continue
            print(table(world, family, args.per_category, args.out) + "\n", flush=True)


def read_warnings(world: Path) -> list[str]:
    return json.loads((world / "world.json").read_text(encoding="utf-8")).get("warnings", [])


if __name__ == "__main__":
    main()
