"""The `cityseeker` command: benchmark, report, validate and world tools."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros import __version__
from cityseeker_ros.core.environment import DEFAULT_MAX_STEPS
from cityseeker_ros.core.errors import CitySeekerError, ConfigError
from cityseeker_ros.core.metrics import DEFAULT_DTW_THRESHOLD_M

METRIC_ORDER = ("tce", "tcp40", "tcp50", "tcp60", "tcc", "spl", "spd", "dtw_per_ref_m", "ndtw", "osr", "as",
                "solvable")


def _param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def build_parser() -> argparse.ArgumentParser:
    from cityseeker_ros.core.policies import POLICIES

    parser = argparse.ArgumentParser(prog="cityseeker", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    b = sub.add_parser("benchmark", help="run a policy over a dataset and score it")
    b.add_argument("--config", type=Path, help="YAML file of these options (flags given here win)")
    b.add_argument("--data", type=Path, help="a city folder, or a folder of city folders (required)")
    b.add_argument("--dataset", help="dataset format (default: auto-detect)")
    b.add_argument("--policy", help=f"required; one of: {', '.join(POLICIES.names())}")
    b.add_argument("--param", action="append", type=_param, metavar="KEY=VALUE",
                   help="policy parameter (repeatable; VALUE parsed as JSON when it can be)")
    b.add_argument("--seeds", type=int, help="number of seeds: 0..N-1 (default 1)")
    b.add_argument("--max-steps", type=int, help="step budget (default 35)")
    b.add_argument("--limit", type=int, help="only the first K episodes")
    b.add_argument("--workers", type=int, help="parallel processes (default 1)")
    b.add_argument("--dtw-threshold", type=float, help="d_th for nDTW, metres (default 50)")
    b.add_argument("--out", type=Path, help="output folder (required)")
    b.add_argument("--no-progress", action="store_true")

    r = sub.add_parser("report", help="write report.html and report.md for a benchmark output")
    r.add_argument("out", type=Path)

    v = sub.add_parser("validate", help="check a dataset folder and report every problem")
    v.add_argument("data", type=Path)
    v.add_argument("--dataset", default="auto")
    v.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS)

    w = sub.add_parser("world", help="build worlds")
    wsub = w.add_subparsers(dest="world_command", required=True)
    syn = wsub.add_parser("synth", help="generate the small synthetic grid town")
    syn.add_argument("--out", required=True, type=Path)
    syn.add_argument("--seed", type=int, default=0)
    return parser


BENCHMARK_DEFAULTS: dict[str, Any] = {"data": None, "dataset": "auto", "policy": None, "param": {}, "seeds": 1,
                                      "max_steps": DEFAULT_MAX_STEPS, "limit": None, "workers": 1,
                                      "dtw_threshold": DEFAULT_DTW_THRESHOLD_M, "out": None}


def load_options(path: Path) -> dict[str, Any]:
    """Benchmark options from YAML; keys are the flag names (`max-steps` or `max_steps`)."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"--config {path}: no such file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: expected a mapping of option: value")
    options = {str(k).replace("-", "_"): v for k, v in data.items()}
    unknown = sorted(set(options) - set(BENCHMARK_DEFAULTS))
    if unknown:
        raise ConfigError(f"--config {path}: unknown option(s) {', '.join(unknown)}; "
                          f"known: {', '.join(BENCHMARK_DEFAULTS)}")
    if not isinstance(options.get("param", {}), dict):
        raise ConfigError(f"--config {path}: 'param' must be a mapping of policy parameters")
    return options


def cmd_benchmark(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.benchmark import Benchmark, BenchmarkConfig

    options = dict(BENCHMARK_DEFAULTS)
    if args.config:
        options.update(load_options(args.config))
    flags = {k: v for k, v in vars(args).items() if k in BENCHMARK_DEFAULTS and v is not None}
    flags["param"] = {**options["param"], **dict(flags.get("param", []))}
    options.update(flags)
    for required in ("data", "policy", "out"):
        if options[required] in (None, ""):
            raise ConfigError(f"--{required} is required (on the command line or in --config)")
    if not isinstance(options["seeds"], int) or options["seeds"] < 1:
        raise ConfigError(f"--seeds must be an integer >= 1, got {options['seeds']!r}")
    out = Path(options["out"])
    config = BenchmarkConfig(data=str(options["data"]), dataset=options["dataset"], policy=options["policy"],
                             policy_params=options["param"], seeds=list(range(options["seeds"])),
                             max_steps=options["max_steps"], limit=options["limit"], workers=options["workers"],
                             dtw_threshold_m=options["dtw_threshold"])
    summary = Benchmark(config).run(out, progress=not args.no_progress)
    print(format_summary(summary))
    print(f"results: {out / 'episodes.jsonl'}, {out / 'summary.json'}")
    return 0


def format_summary(summary: dict[str, Any]) -> str:
    overall, sd = summary["overall"], summary.get("overall_sd", {})
    config = summary.get("config", {})
    lines = [f"policy {config.get('policy')} on {', '.join(config.get('cities', []))}: "
             f"{overall.get('episodes', 0)} episodes x {len(config.get('seeds', [0]))} seed(s)"
             + ("  [SYNTHETIC WORLD]" if config.get("synthetic") else "")]
    for key in METRIC_ORDER:
        if key in overall:
            spread = f" ± {sd[key]:.2f}" if key in sd else ""
            lines.append(f"  {key:<14}{overall[key]:>9.2f}{spread}")
    lines.append(f"  solvable ceiling: {overall.get('solvable', 0):.1f}% of episodes can reach the target "
                 "within the budget under this action model")
    lines.append("  end reasons: " + ", ".join(f"{k} {v}" for k, v in summary.get("end_reasons", {}).items()))
    return "\n".join(lines)


def cmd_report(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.datasets import load_dataset
    from cityseeker_ros.core.report import write_report

    if not (args.out / "summary.json").is_file():
        raise ConfigError(f"{args.out}: no summary.json here; run `cityseeker benchmark --out {args.out}` first")

    def graphs(config: dict[str, Any]):
        return {w.city: w.graph for w in load_dataset(Path(config["data"]), config.get("dataset", "auto"))}

    html, md = write_report(args.out, graph_loader=graphs)
    print(f"wrote {html} and {md}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.datasets import load_dataset
    from cityseeker_ros.core.datasets.problems import Problems

    problems = Problems(strict=False)
    worlds = load_dataset(args.data, args.dataset, problems)
    for w in worlds:
        eps = w.episodes
        executable = sum(w.actions.route_executable(e.reference_path) for e in eps)
        solvable = sum(w.solvable(e, args.max_steps) for e in eps)
        print(f"{w.city}: {len(w.graph)} nodes, {len(w.graph.edges)} edges, {len(eps)} episodes"
              + (" [synthetic]" if w.synthetic else ""))
        print("  categories: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(e.category for e in eps).items())))
        if eps:
            print(f"  ground-truth routes executable hop by hop: {executable}/{len(eps)} "
                  f"({100 * executable / len(eps):.1f}%)")
            print(f"  targets reachable within {args.max_steps} steps (solvable): {solvable}/{len(eps)} "
                  f"({100 * solvable / len(eps):.1f}%)")
    for p in problems.items:
        print(p)
    n_err = len(problems.errors)
    print(f"{n_err} error(s), {len(problems.warnings)} warning(s)")
    return 1 if n_err else 0


def cmd_world(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.datasets.synthetic import synthesize_world

    path = synthesize_world(args.out, seed=args.seed)
    print(f"wrote synthetic world {path}")
    return 0


COMMANDS = {"benchmark": cmd_benchmark, "report": cmd_report, "validate": cmd_validate, "world": cmd_world}


def main(argv: Optional[Sequence[str]] = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except CitySeekerError as exc:
        print(f"cityseeker: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("cityseeker: interrupted; finished episodes are saved, rerun the same command to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
