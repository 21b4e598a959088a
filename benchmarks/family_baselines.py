"""Every task family's baselines on built worlds: one Markdown table per world and family.

    python benchmarks/family_baselines.py --worlds /tmp/F/monaco /tmp/F/helsinki ... --out /tmp/F/runs

For each world folder (built with `cityseeker world build NAME --out DIR`, every family) and
each family it holds, runs the family's chance, ceiling, perfect-perception and CPU agents on
the same episodes (`--per-category`) and prints their headline measures side by side, with the
world's facts the family states (landmark count, shortest routes). Images come from the
rendered view source for the policies that read them. Runs resume: a folder already complete
is read, not run again. A bad world, family or policy name is one line on stderr (exit 2),
before anything runs.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.agents.policies.families import check_serves
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError
from cityseeker_ros.core.tasks.family import family_names, get_family

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


def table(world: Path, family: str, per_category: int, out: Path, policies: Optional[Sequence[str]] = None) -> str:
    fam = get_family(family)
    keys = fam.headline
    lines = [f"**{world.name} / {family}** ({fam.seed_paper}): " + json.dumps(fam.describe(world),
                                                                                ensure_ascii=False)[:600],
             "", "| policy | episodes x seeds | " + " | ".join(f"{fam.spec(k).label} ({fam.spec(k).unit})"
                                                           for k in keys) + " | wall s |",
             "|---|---|" + "---|" * (len(keys) + 1)]
    rows = ROWS[family] if policies is None else tuple((p, dict(ROWS[family]).get(p, 1)) for p in policies)
    for policy, seeds in rows:
        summary, wall = run(world, family, policy, seeds, per_category, out / world.name / family / policy)
        overall, sd = summary["overall"], summary.get("overall_sd") or {}
        cells = [f"{overall[k]:.1f}" + (f" ± {sd[k]:.1f}" if k in sd else "") for k in keys]
        lines.append(f"| {policy} | {overall['episodes']} x {overall['seeds']} | " + " | ".join(cells)
                     + f" | {wall:.0f} |")
    return "\n".join(lines)


def checked(args: argparse.Namespace) -> tuple[list[str], Optional[list[str]]]:
    """The families and policies asked for, each name checked against what is known (the worlds
    are folders with world.json), before any run starts."""
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    for family in families or [""]:
        if family not in family_names():
            raise ConfigError(f"--families: unknown task family {family!r}; known: {', '.join(family_names())}")
    for world in args.worlds:
        if not (world / "world.json").is_file():
            raise ConfigError(f"--worlds: {world} is not a world folder (no world.json; build one with "
                              "`cityseeker world build NAME --out DIR`)")
    if args.policies is None:
        return families, None
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    for policy in policies or [""]:
        if policy not in POLICIES:
            raise ConfigError(f"--policies: unknown policy {policy!r}; known: {', '.join(POLICIES.names())}")
        for family in families:
            check_serves(policy, family)
    return families, policies


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worlds", nargs="+", type=Path, required=True)
    parser.add_argument("--families", default="needs,landmarks,questions",
                        help=f"comma-separated, of: {', '.join(family_names())}")
    parser.add_argument("--policies", help="comma-separated policies to run (default: each family's four rows)")
    parser.add_argument("--per-category", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        families, policies = checked(args)
        for world in args.worlds:
            for family in families:
                fam = get_family(family)
                if not (world / fam.tasks_file).is_file():
                    print(f"**{world.name} / {family}**: no tasks ({fam.missing_tasks(world)})\n")
                    continue
                print(table(world, family, args.per_category, args.out, policies) + "\n", flush=True)
    except CitySeekerError as exc:
        print(f"family_baselines: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
