"""The `cityseeker` command: give a need to a vehicle or a walker over ROS 2 (seek, run), benchmark
policies on street-view worlds (benchmark, ablate, report, compare), check and build worlds
(validate, world) and record, replay and re-score bags (bag)."""
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
from cityseeker_ros.command_extras import check_extras
from cityseeker_ros.core.evaluation.metrics import DEFAULT_DTW_THRESHOLD_M
from cityseeker_ros.core.evaluation.world_facts import world_facts_lines
from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError
from cityseeker_ros.core.infra.key_value import key_value_argument
from cityseeker_ros.core.infra.redact import redact_logging, redact_text
from cityseeker_ros.core.tasks.environment import DEFAULT_MAX_STEPS
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY
from cityseeker_ros.core.tasks.family import get_family, parse_families
from cityseeker_ros.core.worlds.osm_sources import PACKAGED_SOURCES


def build_parser() -> argparse.ArgumentParser:
    from cityseeker_ros.core.sensing.views import VIEW_SOURCES
    from cityseeker_ros.ros.run_config import add_cli_options

    parser = argparse.ArgumentParser(prog="cityseeker", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    b = sub.add_parser("benchmark", help="run a policy over a dataset and score it")
    _benchmark_options(b)
    _executor_options(b)
    b.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    run = sub.add_parser("run", help="start a node set over ROS 2 without ros2 launch (pip-only machines)")
    run_sub = run.add_subparsers(dest="run_command", required=True)
    rb = run_sub.add_parser("benchmark", help="benchmark.launch.py's nodes: the same results as `cityseeker "
                            "benchmark`, over DDS on loopback",
                            description="Start streetview_replay, decision, supervisor and evaluator as "
                            "separate processes (or one with --single-process), run every task, write OUT like "
                            "`cityseeker benchmark` and stop every process started.")
    _benchmark_options(rb)
    add_cli_options(rb, "benchmark")
    _runner_options(rb)
    rc = run_sub.add_parser("camera", help="camera.launch.py's nodes: a camera and GNSS walk the tasks, AR guidance "
                            "on /supervisor/guidance", description="Start graph_localiser, camera_ingest, "
                            "decision, supervisor (live) and evaluator; walk each task where the fixes on "
                            "--fix-topic go and write OUT like `cityseeker benchmark`.")
    _benchmark_options(rc)
    add_cli_options(rc, "camera")
    _runner_options(rc)
    add_console_options(rc)
    for name, link in (("vehicle", None), ("airsim", "airsim")):
        rv = run_sub.add_parser(name, help="vehicle.launch.py's nodes: a vehicle (airsim, mavlink, walker) behind "
                                "the safety gate walks the tasks" + (" (run vehicle --link airsim)" if link else ""),
                                description="Start vehicle_bridge (--link airsim, mavlink or walker; "
                                "docs/vehicles.md), graph_localiser, camera_ingest, decision, supervisor (live) and "
                                "evaluator; it "
                                "prints what it waits for (the autopilot's heartbeat, arming, mode).")
        _benchmark_options(rv)
        add_cli_options(rv, "vehicle", defaults={"link": link} if link else None)
        _runner_options(rv)
        add_console_options(rv)
        if link:
            rv.set_defaults(link=link)
    rg = run_sub.add_parser("bag", help="bag_eval.launch.py's processes: decide every step of a recorded run again",
                            description="Play BAG's view sets and images into a fresh decision node with --policy, "
                            "record its decisions into --out-bag, then compare them with the recorded ones "
                            "(OUT_BAG.eval/redecide.json). `cityseeker bag eval BAG --data D` re-scores offline.")
    add_cli_options(rg, "bag")
    rg.add_argument("--settle", type=float, default=10.0, help="seconds after playback for the last decision")
    rg.add_argument("--timeout", type=float, help="give up after this many seconds (default: none)")
    rg.add_argument("--domain-id", type=int, help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID, else a free one "
                    "leased on this host)")
    _seek_options(sub)
    from cityseeker_ros.ar.command import add_parser as add_ar_parser

    add_ar_parser(sub)
    a = sub.add_parser("ablate", help="run every policy under every set of BCR strategies (the paper's Table 3)",
                       description="Run each policy under each cell (a set of BCR strategies) into OUT/POLICY/CELL/ "
                       "(resumable: rerun the same command), then write OUT/ablation.json, .md and .html.")
    a.add_argument("--config", type=Path, help="YAML file of these options (flags given here win); its policies: "
                   "and cells: lists may hold mappings {label, policy, params} and {label, strategies}")
    a.add_argument("--data", type=Path, help="a city folder, or a folder of city folders (required)")
    a.add_argument("--dataset", help="dataset format (default: auto-detect)")
    a.add_argument("--family", help="task family of every run (default needs): needs, landmarks, questions")
    a.add_argument("--policy", dest="policies", action="append", metavar="[LABEL=]NAME[:KEY=VALUE,...]",
                   help="a policy, its row (repeatable; required): random, or "
                   "small=vlm:backend=transformers,model=/models/x (VALUE parsed as JSON when it can be)")
    a.add_argument("--cells", metavar="CELL,CELL,...",
                   help="the columns: a comma between cells, '+' between a cell's strategies, ';' between a "
                   "strategy's parameters; 'baseline' = no strategies; oracle strategies as oracle:NAME, e.g. "
                   "baseline,B1,oracle:B2,oracle:B2+oracle:B3:k=5;confidence_trigger=false "
                   "(default: baseline,B1,oracle:B2,oracle:B3,C1,C2,R1,R2,R3,oracle:B2+oracle:B3+C1+R3)")
    a.add_argument("--seeds", type=int, help="number of seeds: 0..N-1 (default 1)")
    a.add_argument("--rounds", type=int, help="rounds per episode in every cell, scored on the final one (default 1; "
                   "R1, R2, C1 and C2 recall earlier rounds)")
    a.add_argument("--max-steps", type=int, help="step budget (default 35)")
    a.add_argument("--limit", type=int, help="only the first K episodes")
    a.add_argument("--workers", type=int, help="parallel processes per run (default 1)")
    a.add_argument("--batch-size", type=int, help="episodes run in lockstep per process (default 1)")
    _executor_options(a)
    a.add_argument("--views", help=f"view source for images (default none); one of: {', '.join(VIEW_SOURCES.names())}")
    a.add_argument("--view-param", action="append", type=key_value_argument, metavar="KEY=VALUE",
                   help="view source parameter (repeatable)")
    a.add_argument("--max-backtracks", type=int, help="backtracks allowed per round (default 3)")
    a.add_argument("--follow-hints", choices=("auto", "prompt", "force"), help="B3 hints (default auto)")
    a.add_argument("--out", type=Path, help="output folder (required)")
    a.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    r = sub.add_parser("report", help="write report.html and report.md for a benchmark output")
    r.add_argument("out", type=Path, help="a benchmark output folder (with summary.json)")

    c = sub.add_parser("compare", help="print benchmark runs side by side (each family's runs must cover the same "
                       "episodes): success with a 95%% interval (paired bootstrap), its difference from the first "
                       "row, calls, tokens and seconds per step, loops and end reasons, and a reading line per agent "
                       "(between chance and the ceiling where the family's random and oracle rows are there)")
    c.add_argument("runs", nargs="+", type=Path, help="two or more benchmark output folders (of one or more task "
                   "families; each family is compared against its own first run)")
    c.add_argument("--out", type=Path, help="also write the tables as Markdown to this file")
    c.add_argument("--html", type=Path, help="also write the tables and a cost-against-success plot as a "
                   "self-contained HTML page to this file")

    jd = sub.add_parser("judge", help="mark a question run's answers 1-5 with an LLM judge (CityEQA's), through "
                        "any backend", description="Ask the judge model, with CityEQA's prompt, to mark each answer "
                        "of a questions run 1-5 against the world's; writes OUT/judge.jsonl (the records with "
                        "their marks, prompts and model) and OUT/judge.json (the mean), which the report shows.")
    jd.add_argument("out", type=Path, help="a benchmark output folder of the questions family")
    jd.add_argument("--backend", required=True, help="VLM backend: transformers or openai")
    jd.add_argument("--model", help="model folder or served model name")
    jd.add_argument("--backend-param", action="append", type=key_value_argument, default=[], metavar="KEY=VALUE",
                    help="backend parameter (repeatable), e.g. base_url=URL")
    v = sub.add_parser("validate", help="check a dataset folder and report every problem")
    v.add_argument("data", type=Path, help="a city folder, or a folder of city folders")
    v.add_argument("--dataset", default="auto", help="dataset format (default: auto-detect)")
    v.add_argument("--family", default=None, help="check only this task family's episodes (default: every "
                   "family the folder holds)")
    v.add_argument("--max-steps", type=int, default=None,
                   help="step cap the solvability check uses (default: the family's, as a benchmark run)")

    w = sub.add_parser("world", help="build, dress, inspect and render worlds")
    wsub = w.add_subparsers(dest="world_command", required=True)
    syn = wsub.add_parser("synth", help="generate the small synthetic grid town (no imagery)")
    syn.add_argument("--out", required=True, type=Path, help="world folder to write")
    syn.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    bld = wsub.add_parser("build", help="build a world folder from OpenStreetMap data")
    bld.add_argument("source", help=f"a packaged extract ({', '.join(sorted(PACKAGED_SOURCES))}) "
                                    "or a path to an .osm.pbf file")
    bld.add_argument("--out", required=True, type=Path, help="world folder to write")
    bld.add_argument("--name", help="world name (default: the source's)")
    bld.add_argument("--bbox", type=_bbox, help="clip to MIN_LON,MIN_LAT,MAX_LON,MAX_LAT")
    bld.add_argument("--seed", type=int, default=0, help="task generator seed")
    bld.add_argument("--per-need", type=int, default=6, help="episodes per request")
    bld.add_argument("--test-per-category", type=int, default=20, help="test split size per category")
    bld.add_argument("--cache", type=Path, help="download cache (default $CITYSEEKER_CACHE or ~/.cache/cityseeker)")
    bld.add_argument("--families", default="all", metavar="NAME,NAME",
                     help="task families to make tasks for: needs, landmarks, questions (default all)")
    bld.add_argument("--force", action="store_true",
                     help="build even when --out already holds what these inputs build (it is skipped otherwise)")
    wt = wsub.add_parser("tasks", help="make (again) the landmark-goal or question tasks of a world folder",
                         description="Generate the tasks of --families on a world already built (needs come with "
                         "`world build`), writing tasks.FAMILY.json beside the world's files.")
    wt.add_argument("world", type=Path, help="a world folder")
    wt.add_argument("--families", required=True, metavar="NAME,NAME", help="landmarks, questions, or both")
    wt.add_argument("--seed", type=int, default=0, help="task generator seed (default 0)")
    drs = wsub.add_parser("dress", help="dress a CitySeeker city's real graph with synthetic facades and signs")
    drs.add_argument("data", type=Path, help="a CitySeeker release city folder (connections.json, question.json)")
    drs.add_argument("--out", required=True, type=Path, help="world folder to write")
    drs.add_argument("--seed", type=int, default=0, help="seed of the facades and shop signs (default 0)")
    inf = wsub.add_parser("info", help="print a world folder's counts")
    inf.add_argument("world", type=Path, help="a world folder")
    ren = wsub.add_parser("render", help="render a view or a panorama at a node, and list its visible signs")
    ren.add_argument("world", type=Path, help="a world folder with scene.json (built or dressed)")
    ren.add_argument("--node", required=True, help="the graph node to render from")
    ren.add_argument("--heading", type=float, help="absolute heading, degrees (default: the node's heading)")
    ren.add_argument("--panorama", action="store_true", help="an equirectangular panorama instead of a view")
    ren.add_argument("--fov", type=float, default=90.0, help="horizontal field of view, degrees (default 90)")
    ren.add_argument("--size", type=_size, help="WIDTHxHEIGHT (default 640x480, panorama 2048x1024)")
    ren.add_argument("--set", action="append", type=key_value_argument, default=[], metavar="KEY=VALUE",
                     help="render setting (difficulty knob), e.g. blur_sigma=1.5 or signs=false")
    ren.add_argument("--out", required=True, type=Path, help="image to write: .png, or .jpg/.jpeg for JPEG")
    from cityseeker_ros.bag.cli import add_parser as add_bag_parser

    add_bag_parser(sub)
    from cityseeker_ros.core.vehicles.monitor.command import add_parser as add_monitor_parser

    add_monitor_parser(sub)
    return parser


def _benchmark_options(b: argparse.ArgumentParser) -> None:
    """The options of a benchmark run, shared by `benchmark` and `run benchmark`."""
    from cityseeker_ros.core.agents.policies import POLICIES
    from cityseeker_ros.core.agents.vlm.backend import BACKENDS
    from cityseeker_ros.core.datasets import DATASETS
    from cityseeker_ros.core.sensing.views import VIEW_SOURCES
    from cityseeker_ros.core.strategies import STRATEGIES
    from cityseeker_ros.core.tasks.family import family_names

    b.add_argument("--config", type=Path, help="YAML file of these options (flags given here win)")
    b.add_argument("--data", type=Path, help="a city folder, or a folder of city folders (required)")
    b.add_argument("--dataset", help=f"dataset format (default: auto-detect); one of: {', '.join(DATASETS.names())}")
    b.add_argument("--family", help=f"task family (default needs); one of: {', '.join(family_names())}")
    b.add_argument("--policy", help=f"required; one of: {', '.join(POLICIES.names())}")
    b.add_argument("--param", action="append", type=key_value_argument, metavar="KEY=VALUE",
                   help="policy parameter (repeatable; VALUE parsed as JSON when it can be)")
    b.add_argument("--backend", help=f"VLM backend for --policy vlm: {', '.join(BACKENDS.names())} (shorthand for "
                   "--param backend=NAME)")
    b.add_argument("--model", help="model path or served model name (shorthand for --param model=...)")
    b.add_argument("--backend-param", action="append", type=key_value_argument, metavar="KEY=VALUE",
                   help="VLM backend parameter (repeatable), e.g. quantization=quanto-int8 or base_url=URL")
    b.add_argument("--seeds", type=int, help="number of seeds: 0..N-1 (default 1)")
    b.add_argument("--max-steps", type=int, help="step cap of every episode, whatever its family (default: the "
                   "family's: 35 for needs, each question's 50, each landmark goal's own up to 150)")
    b.add_argument("--limit", type=int, help="only the first K episodes")
    b.add_argument("--facts", help="questions: all (default), or map: only the questions whose every fact is the "
                   "map's (none of the renderer's facade colours or storeys)")
    b.add_argument("--per-category", type=int, metavar="N", help="only the first N episodes of each category "
                   "of each city, in the data's order (the same ones every time; --limit then cuts that list)")
    b.add_argument("--workers", type=int, help="parallel processes (default 1)")
    b.add_argument("--batch-size", type=int, help="episodes run in lockstep per process, so a VLM decides for all "
                   "in one batched call (default 1)")
    b.add_argument("--dtw-threshold-m", type=float, help="d_th for nDTW, metres (default 50)")
    b.add_argument("--views", help=f"view source for images (default none); one of: {', '.join(VIEW_SOURCES.names())}")
    b.add_argument("--view-param", action="append", type=key_value_argument, metavar="KEY=VALUE",
                   help="view source parameter (repeatable), e.g. folder=PATH or blur_sigma=1.0")
    b.add_argument("--strategy", action="append", metavar="[oracle:]NAME[:K=V,...]",
                   help=f"a BCR strategy under a supervisor (repeatable): {', '.join(STRATEGIES.names())}, with "
                   "parameters as R3:n=5; strategies that read the route to the goal must be written oracle:NAME "
                   "(oracle:B2)")
    b.add_argument("--rounds", type=int, help="run each episode N times; retrieval (R1, R2) recalls the "
                   "earlier rounds in the final one, which is the one scored (default 1)")
    b.add_argument("--max-backtracks", type=int, help="backtracks allowed per round (default 3)")
    b.add_argument("--follow-hints", choices=("auto", "prompt", "force"),
                   help="B3 hints: in the prompt for VLMs, taken directly by other policies (auto, default)")
    b.add_argument("--memory", type=Path, help="SQLite memory file (default: memory.sqlite in --out)")
    b.add_argument("--out", type=Path, help="output folder (required)")


def _executor_options(p: argparse.ArgumentParser) -> None:
    from cityseeker_ros.core.evaluation.executors import EXECUTORS

    p.add_argument("--executor", help=f"where episodes run (default local: this process, or --workers "
                   f"processes); one of: {', '.join(EXECUTORS.names())} (docs/distributed.md)")
    p.add_argument("--ray-address", help="--executor ray: the cluster to join (HOST:PORT or ray://HOST:PORT); "
                   "default: start a local Ray instance")


def _runner_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--single-process", action="store_true", help="all nodes in one process, one "
                   "single-threaded executor")
    p.add_argument("--no-respawn", action="store_true", help="a dying decision node or evaluator ends the run "
                   "instead of being restarted")
    p.add_argument("--timeout", type=float, help="give up after this many seconds (default: none)")
    p.add_argument("--domain-id", type=int, help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID, else a free one "
                   "leased on this host)")


def _bbox(text: str) -> tuple[float, float, float, float]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"expected MIN_LON,MIN_LAT,MAX_LON,MAX_LAT, got {text!r}")
    return values  # type: ignore[return-value]


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {text!r}") from None
    return w, h


BENCHMARK_DEFAULTS: dict[str, Any] = {"data": None, "dataset": "auto", "family": DEFAULT_FAMILY, "policy": None,
                                      "param": {}, "seeds": 1,
                                      "max_steps": None, "limit": None, "per_category": None, "facts": "all",
                                      "workers": 1, "batch_size": 1,
                                      "dtw_threshold_m": DEFAULT_DTW_THRESHOLD_M, "out": None, "views": None,
                                      "view_param": {}, "backend": None, "model": None, "backend_param": {},
                                      "strategy": [], "rounds": 1, "max_backtracks": 3, "follow_hints": "auto",
                                      "memory": None, "executor": "local", "ray_address": None}


ABLATE_DEFAULTS: dict[str, Any] = {"data": None, "dataset": "auto", "family": DEFAULT_FAMILY, "policies": None,
                                   "cells": None, "seeds": 1,
                                   "rounds": 1, "max_steps": None, "limit": None, "workers": 1,
                                   "batch_size": 1, "views": None, "view_param": {}, "max_backtracks": 3,
                                   "follow_hints": "auto", "out": None, "executor": "local", "ray_address": None}


def load_options(path: Path, defaults: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Benchmark (or `defaults`') options from YAML; keys are the flag names (`max-steps` or `max_steps`)."""
    defaults = BENCHMARK_DEFAULTS if defaults is None else defaults
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
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise ConfigError(f"--config {path}: unknown option(s) {', '.join(unknown)}; "
                          f"known: {', '.join(defaults)}")
    for key, what in (("param", "policy"), ("view_param", "view source"), ("backend_param", "backend")):
        if not isinstance(options.get(key, {}), dict):
            raise ConfigError(f"--config {path}: '{key}' must be a mapping of {what} parameters")
    return options


def cmd_benchmark(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.evaluation.benchmark import Benchmark

    config, out = benchmark_config(args)
    benchmark = Benchmark(config)  # a bad configuration fails here, with its one line alone
    warn_if_blind(config.policy, config.views)
    summary = benchmark.run(out, progress=not args.no_progress)
    print(format_summary(summary))
    print(f"results: {out / 'episodes.jsonl'}, {out / 'summary.json'}")
    return 0


def benchmark_config(args: argparse.Namespace):
    """The run's BenchmarkConfig and output folder from the flags, over --config's YAML."""
    from cityseeker_ros.core.agents.vlm.policy import merge_backend_shorthands
    from cityseeker_ros.core.evaluation.config import BenchmarkConfig

    options = dict(BENCHMARK_DEFAULTS)
    if args.config:
        options.update(load_options(args.config))
    flags = {k: v for k, v in vars(args).items() if k in BENCHMARK_DEFAULTS and v is not None}
    flags["param"] = {**options["param"], **dict(flags.get("param", []))}
    flags["view_param"] = {**options["view_param"], **dict(flags.get("view_param", []))}
    flags["backend_param"] = {**options["backend_param"], **dict(flags.get("backend_param", []))}
    if "strategy" in flags and not flags["strategy"]:
        del flags["strategy"]
    options.update(flags)
    options["param"] = merge_backend_shorthands(options["param"], options["backend"], options["model"],
                                                options["backend_param"])
    for required in ("data", "policy", "out"):
        if options[required] in (None, ""):
            raise ConfigError(f"--{required} is required (on the command line or in --config)")
    if not isinstance(options["seeds"], int) or options["seeds"] < 1:
        raise ConfigError(f"--seeds must be an integer >= 1, got {options['seeds']!r}")
    out = Path(options["out"])
    config = BenchmarkConfig(data=str(options["data"]), dataset=options["dataset"], family=options["family"],
                             policy=options["policy"],
                             policy_params=options["param"], seeds=list(range(options["seeds"])),
                             max_steps=options["max_steps"], limit=options["limit"],
                             per_category=options["per_category"], facts=str(options["facts"]),
                             workers=options["workers"], batch_size=options["batch_size"],
                             dtw_threshold_m=options["dtw_threshold_m"], views=options["views"],
                             view_params=options["view_param"], strategies=strategy_specs(options["strategy"]),
                             rounds=options["rounds"], max_backtracks=options["max_backtracks"],
                             follow_hints=options["follow_hints"],
                             memory=str(options["memory"]) if options["memory"] else None,
                             executor=options["executor"], ray_address=options["ray_address"])
    config.check_serves()  # a policy of another family: refused before anything starts, here or over ROS
    return config, out


def run_config_of(args: argparse.Namespace):
    """The RunConfig of `cityseeker run KIND ...` (ros/run_config.py), as the launch files make
    it from their arguments."""
    from cityseeker_ros.ros import run_config

    kind = "vehicle" if args.run_command == "airsim" else args.run_command
    if kind == "bag":
        return run_config.from_settings(kind, run_config.cli_values(args, kind))
    config, out = benchmark_config(args)
    return run_config.with_benchmark(kind, config, {**run_config.cli_values(args, kind), "out": str(out)})


def cmd_run(args: argparse.Namespace) -> int:
    from cityseeker_ros.ros import launcher, node_sets

    run = run_config_of(args)
    if run.kind == "bag":
        report = launcher.run_bag(run, settle_s=args.settle, timeout_s=args.timeout, domain_id=args.domain_id)
        agreement = report["agreement"]
        print(f"{report['view_sets']} view sets decided again by {report['policy']}; "
              f"{report['agreed']} of {report['compared']} agree with the recording"
              + (f" ({100 * agreement:.1f}%)" if agreement is not None else ""))
        print(f"decisions: {args.out_bag}; report: {args.out_bag}.eval/")
        return 0
    config, out = run.benchmark, Path(run.out)
    if run.kind == "benchmark":  # camera and vehicle runs take their images from the camera
        warn_if_blind(config.policy, config.views)
    with _console(args, config.data, run.safety_config, config.max_steps) as console:

        def make_nodes(todo: list[tuple[str, int]]) -> list:
            console.announce()  # called once the run has tasks to start
            return [*node_sets.nodes(run, todo), *console.nodes]

        summary = launcher.run_tasks_with(config, out, make_nodes, single_process=args.single_process,
                                          respawn=not args.no_respawn, timeout_s=args.timeout,
                                          domain_id=args.domain_id)
    print(format_summary(summary))
    print(f"results: {out / 'episodes.jsonl'}, {out / 'summary.json'} (node logs in {out / 'ros'})")
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.evaluation import ablation
    from cityseeker_ros.core.evaluation.report.comparison import comparison_markdown
    from cityseeker_ros.core.evaluation.report.tables import render_table_md

    options = dict(ABLATE_DEFAULTS)
    if args.config:
        options.update(load_options(args.config, ABLATE_DEFAULTS))
    flags = {k: v for k, v in vars(args).items() if k in ABLATE_DEFAULTS and v is not None}
    flags["view_param"] = {**options["view_param"], **dict(flags.get("view_param", []))}
    options.update(flags)
    for required in ("data", "out"):
        if options[required] in (None, ""):
            raise ConfigError(f"--{required} is required (on the command line or in --config)")
    seeds = options["seeds"]
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
        raise ConfigError(f"--seeds must be an integer >= 1, got {seeds!r}")
    cells = ablation.DEFAULT_CELLS if options["cells"] is None else options["cells"]
    config = ablation.AblationConfig(
        data=str(options["data"]), dataset=options["dataset"], family=options["family"],
        policies=ablation.policies_from(options["policies"]),
        cells=ablation.cells_from(cells), seeds=list(range(seeds)), rounds=options["rounds"],
        max_steps=options["max_steps"], limit=options["limit"], workers=options["workers"],
        batch_size=options["batch_size"], views=options["views"], view_params=options["view_param"],
        max_backtracks=options["max_backtracks"], follow_hints=options["follow_hints"],
        executor=options["executor"], ray_address=options["ray_address"])
    for policy in config.policies:
        warn_if_blind(policy["policy"], config.views)
    out = Path(options["out"])
    doc = ablation.run_ablation(config, out, progress=not args.no_progress)
    tables = ablation.ablation_tables(doc)
    print("\n".join(render_table_md(t) for t in tables[:2 if doc["baseline"] else 1]))
    print(comparison_markdown([ablation.ablation_comparison(doc)]))
    print(f"wrote {out / 'ablation.json'}, {out / 'ablation.md'}, {out / 'ablation.html'}")
    return 0


def warn_if_blind(policy: str, views: Optional[str]) -> None:
    """An image policy given no view source sees no pixels and would run blind without a word;
    say so on stderr, with the flag that gives it images. An unknown name fails later, listing the known."""
    from cityseeker_ros.core.agents.policies import POLICIES
    from cityseeker_ros.core.sensing.views import VIEW_SOURCES

    if views or policy not in POLICIES or not POLICIES.get(policy).uses_images:
        return
    print(f"cityseeker: warning: policy '{policy}' reads images but no --views is given, so it runs blind; "
          f"add --views rendered (a world folder) or another of: {', '.join(VIEW_SOURCES.names())}", file=sys.stderr)


def strategy_specs(values: Any) -> list[dict[str, Any]]:
    """--strategy strings ([oracle:]NAME[:K=V,...]) or YAML mappings ({name: B2, oracle: true})."""
    from cityseeker_ros.core.strategies import parse_strategy

    if not isinstance(values, list):
        raise ConfigError(f"strategy must be a list of strategies, got {values!r}")
    return [parse_strategy(v) if isinstance(v, str) else v for v in values]


def format_summary(summary: dict[str, Any]) -> str:
    overall, sd = summary["overall"], summary.get("overall_sd", {})
    config = summary.get("config", {})
    strategies = [("oracle:" if s.get("oracle") else "") + str(s.get("name")) for s in config.get("strategies", [])]
    lines = [f"policy {config.get('policy')} on {', '.join(config.get('cities', []))}: "
             f"{overall.get('episodes', 0)} episodes x {len(config.get('seeds', [0]))} seed(s)"
             + (f", strategies {'+'.join(strategies)}" if strategies else "")
             + (f", {config['rounds']} rounds" if config.get("rounds", 1) > 1 else "")
             + ("  [SYNTHETIC WORLD]" if config.get("synthetic") else "")
             + ("  [ORACLE: privileged information]" if config.get("privileged") else "")]
    for key, value in overall.items():
        if key not in ("episodes", "seeds"):
            spread = f" ± {sd[key]:.2f}" if key in sd else ""
            lines.append(f"  {key:<14}{value:>9.2f}{spread}")
    if "solvable" in overall:
        lines.append(f"  solvable ceiling: {overall['solvable']:.1f}% of episodes can reach the target "
                     "within the budget under this action model")
    lines += world_facts_lines(config.get("task_family", {}).get("world", {}))
    lines.append("  end reasons: " + ", ".join(f"{k} {v}" for k, v in summary.get("end_reasons", {}).items()))
    decisions = summary.get("decisions")
    if decisions:
        total = decisions.get("latency_s", {}).get("total", {})
        replies = (f"unusable replies {decisions['unusable_replies']} of {decisions['replies']}"
                   if "replies" in decisions else f"parse errors (fallbacks) {decisions['parse_error_rate']:.2f}%")
        lines.append(f"  decisions: {decisions['count']}, {replies}, retried {decisions['retry_rate']:.2f}%"
                     + (f", latency p50 {total['p50']:.3f} s p95 {total['p95']:.3f} s" if total else ""))
    return "\n".join(lines)


def cmd_report(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.datasets import load_dataset
    from cityseeker_ros.core.evaluation.report.page import write_report

    if not (args.out / "summary.json").is_file():
        raise ConfigError(f"{args.out}: no summary.json here; run `cityseeker benchmark --out {args.out}` first")

    worlds: dict[str, Any] = {}

    def load(config: dict[str, Any]):
        if not worlds:
            worlds.update((w.city, w) for w in load_dataset(Path(config["data"]), config.get("dataset", "auto")))
        return worlds

    def views(config: dict[str, Any]):
        from cityseeker_ros.core.sensing.views import make_view_source

        return {city: (w, make_view_source(config["views"], w, config.get("view_params")))
                for city, w in load(config).items()}

    html, md = write_report(args.out, graph_loader=lambda c: {k: w.graph for k, w in load(c).items()},
                            view_loader=views)
    print(f"wrote {html} and {md}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.evaluation.compare import compare, load_run_groups
    from cityseeker_ros.core.evaluation.report.comparison import comparison_html, comparison_markdown
    from cityseeker_ros.core.infra.files import write_text_atomic

    comparisons = [compare(runs) for runs in load_run_groups(args.runs)]
    text = comparison_markdown(comparisons)
    print(text, end="")
    for path, content in ((args.out, text), (args.html, comparison_html(comparisons))):
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, content)
            print(f"wrote {path}")
    return 0


def cmd_judge(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.agents.vlm.backend import make_backend
    from cityseeker_ros.core.evaluation.report.page import load_episodes
    from cityseeker_ros.core.infra.files import write_json_atomic, write_text_atomic
    from cityseeker_ros.core.tasks.questions.judge import judge, judge_summary

    records = load_episodes(args.out / "episodes.jsonl")
    if not any(r.get("family") == "questions" for r in records):
        raise ConfigError(f"{args.out}: no questions records in episodes.jsonl; the judge marks answers to "
                          "questions (cityseeker benchmark --family questions)")
    params = dict(args.backend_param) | ({"model": args.model} if args.model else {})
    backend = make_backend(args.backend, **params)
    try:
        judged = judge(records, backend)
    finally:
        getattr(backend, "close", lambda: None)()
    summary = judge_summary(judged)
    write_text_atomic(args.out / "judge.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in judged))
    write_json_atomic(args.out / "judge.json", summary)
    mean = summary["judge_mean"]
    print(f"judge: {summary['judged']} answers marked, mean {mean if mean is not None else '-'} (1-5), "
          f"{summary['unreadable']} unreadable; wrote {args.out / 'judge.jsonl'} and {args.out / 'judge.json'}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.datasets import city_folders, load_dataset
    from cityseeker_ros.core.datasets.problems import Problems
    from cityseeker_ros.core.tasks.family import family_names, get_family

    problems = Problems(strict=False)
    folders = [folder for _, folder in city_folders(args.data, args.dataset)]
    # Every family the folders hold (a family's task file beside them), or the one asked for.
    families = [args.family] if args.family else [
        f for f in family_names()
        if f == DEFAULT_FAMILY or any((d / get_family(f).tasks_file).is_file() for d in folders)]
    for folder in folders:  # what the world's build found thin or could not make (world.json)
        for warning in world_warnings(folder):
            problems.warning(f"{folder / 'world.json'}: {warning}")
    for family in families:
        if len(families) > 1 or family != DEFAULT_FAMILY:
            print(f"== {family} ({get_family(family).seed_paper})")
        cap = args.max_steps if args.max_steps is not None else get_family(family).default_max_steps()
        for w in load_dataset(args.data, args.dataset, problems, family=family):
            eps = w.episodes
            executable = sum(w.actions.route_executable(e.reference_path) for e in eps)
            budget = {e.episode_id: get_family(family).budget(e, cap) for e in eps}
            solvable = sum(w.solvable(e, budget[e.episode_id]) for e in eps)
            print(f"{w.city}: {len(w.graph)} nodes, {len(w.graph.edges)} edges, {len(eps)} episodes"
                  + (" [synthetic]" if w.synthetic else ""))
            print("  categories: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(e.category for e in eps).items())))
            if eps:
                print(f"  ground-truth routes executable hop by hop: {executable}/{len(eps)} "
                      f"({100 * executable / len(eps):.1f}%)")
                budgets = sorted(set(budget.values()))
                within = (f"{cap} steps" if budgets == [cap] else
                          f"their own budgets ({budgets[0]}-{budgets[-1]} steps)")
                print(f"  targets reachable within {within} (solvable): {solvable}/{len(eps)} "
                      f"({100 * solvable / len(eps):.1f}%)")
    for p in problems.items:
        print(p)
    n_err = len(problems.errors)
    print(f"{n_err} error(s), {len(problems.warnings)} warning(s)")
    return 1 if n_err else 0


def world_warnings(folder: Path) -> list[str]:
    """The warnings a world folder's world.json records of its build (thin data, families it has
    no tasks for); none for a folder without one (a CitySeeker city)."""
    from cityseeker_ros.core.infra.jsonfile import read_json_object

    meta = Path(folder) / "world.json"
    if not meta.is_file():
        return []
    warnings = read_json_object(meta).get("warnings", [])
    return [str(w) for w in warnings] if isinstance(warnings, list) else [f"warnings is not a list: {warnings!r}"]


def cmd_world(args: argparse.Namespace) -> int:
    return WORLD_COMMANDS[args.world_command](args)


def cmd_world_synth(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.datasets.synthetic import synthesize_world

    path = synthesize_world(args.out, seed=args.seed)
    print(f"wrote synthetic world {path}")
    return 0


def cmd_world_build(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.worlds.build import build_world
    from cityseeker_ros.core.worlds.tasks import TaskSettings

    meta = build_world(args.source, args.out, name=args.name, bbox=args.bbox, cache_dir=args.cache,
                       tasks=TaskSettings(seed=args.seed, per_need=args.per_need,
                                          test_per_category=args.test_per_category),
                       families=parse_families(args.families), force=args.force)
    if "up_to_date" in meta:
        print(meta["up_to_date"])
        return 0
    osm = meta["osm"]
    print(f"wrote world {args.out} from {meta['source']['file']} (sha256 {meta['source']['sha256'][:12]}...) "
          f"in {meta['build_stats']['seconds']:.1f} s; {meta['credit']}, {meta['license'].split(':')[0]}")
    built = osm["buildings"]
    print(f"  {osm['nodes']} nodes, {osm['edges']} edges, {built['real']} buildings (+{built.get('inferred', 0)} "
          f"inferred along built-up streets, +{built.get('stand_in', built['synthetic'])} stand-ins for POIs), "
          f"{osm['pois']} POIs, {len(osm['brands'])} brands, {osm.get('landmarks', 0)} landmarks")
    empty = meta["density"].get("empty_horizon")
    if empty:
        print(f"  task-start views with nothing above the horizon: {empty['empty']} of {empty['views']} "
              f"({100 * empty['share']:.0f}%)")
    print("  POIs by class: " + ", ".join(f"{k} {v}" for k, v in list(osm["pois_by_class"].items())[:15]))
    print("  brands: " + ", ".join(f"{k} {v}" for k, v in list(osm["brands"].items())[:15]))
    for split in ("test", "dev"):
        counts = meta["tasks"][split]
        print(f"  {split} tasks: {sum(counts.values())} (" + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")")
    stats = meta["build_stats"]
    print(f"  time: {stats['osm_seconds']:.1f} s OSM + {stats['tasks_seconds']:.1f} s tasks")
    for family, block in meta.get("families", {}).items():
        print(f"  {family} tasks: " + ", ".join(f"{k} {v}" for k, v in block["tasks"].items()))
    for warning in meta["warnings"]:  # also in world.json under "warnings"
        print(f"  warning: {warning}")
    return 0


def cmd_world_dress(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.worlds.dress import write_dressed_world

    path = write_dressed_world(args.data, args.out, seed=args.seed)
    print(f"wrote dressed world {path}: the real graph and episodes of {args.data.name} "
          "with SYNTHETIC facades and signs (research-use data: do not redistribute)")
    return 0


def cmd_world_info(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.tasks.family import family_names, get_family
    from cityseeker_ros.core.worlds.folder import read_metadata

    meta = read_metadata(args.world)
    info = {k: meta[k] for k in ("name", "builder", "source", "credit", "imagery", "counts", "warnings") if k in meta}
    # Every family's task file in the folder, with what it states about the world (landmarks, routes).
    info["families"] = {f: get_family(f).describe(args.world) for f in family_names()
                        if (args.world / get_family(f).tasks_file).is_file()}
    print(json.dumps(info, indent=1, ensure_ascii=False))
    return 0


def cmd_world_tasks(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.tasks.family import get_family
    from cityseeker_ros.core.worlds.build import add_family_tasks

    made = add_family_tasks(args.world, parse_families(args.families), seed=args.seed)
    for family, generated in made.items():
        if generated.why_none:
            print(f"  no {get_family(family).title.lower()}: {generated.why_none}")
        else:
            print(f"wrote {family} tasks into {args.world}: " +
                  ", ".join(f"{k} {v}" for k, v in generated.counts.items()))
    return 0 if any(not g.why_none for g in made.values()) else 1


def cmd_world_render(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.render import Renderer, RenderSettings
    from cityseeker_ros.core.render.view import IMAGE_FORMATS, save_image
    from cityseeker_ros.core.worlds.folder import load_scene_and_graph

    if args.out.suffix.lower() not in IMAGE_FORMATS:  # before the render, so nothing is half done
        raise ConfigError(f"--out {args.out}: unknown image type {args.out.suffix or '(no suffix)'!r}; "
                          f"use one of {', '.join(IMAGE_FORMATS)}")
    scene, graph = load_scene_and_graph(args.world)
    if args.node not in graph:
        raise ConfigError(f"--node {args.node}: not a node of {args.world} (e.g. {next(iter(graph.nodes))})")
    renderer = Renderer(scene, graph, RenderSettings.from_mapping(dict(args.set), "--set"))
    if args.panorama:
        w, h = args.size or (2048, 1024)
        view = renderer.panorama(args.node, width=w, height=h)
    else:
        w, h = args.size or (640, 480)
        heading = graph.nodes[args.node].heading if args.heading is None else args.heading
        view = renderer.perspective(args.node, heading, fov_deg=args.fov, width=w, height=h)
    save_image(args.out, view.image)
    print(f"wrote {args.out} ({w}x{h}, SYNTHETIC imagery)")
    for sign in view.signs:
        print(f"  sign {sign.text!r} ({sign.poi_class}) at {sign.distance_m:.1f} m, bbox {sign.bbox}"
              + ("" if sign.legible else " [illegible]"))
    return 0


WORLD_COMMANDS = {"synth": cmd_world_synth, "build": cmd_world_build, "dress": cmd_world_dress,
                  "info": cmd_world_info, "render": cmd_world_render, "tasks": cmd_world_tasks}


COMMANDS = {"benchmark": cmd_benchmark, "run": cmd_run, "ablate": cmd_ablate, "report": cmd_report,
            "compare": cmd_compare,
            "validate": cmd_validate, "judge": cmd_judge, "world": cmd_world, "bag": lambda args: _bag_run(args),
            "seek": lambda args: cmd_seek(args), "ar": lambda args: _ar_run(args),
            "monitor": lambda args: _monitor_run(args)}


def _seek_options(sub: Any) -> None:
    """`cityseeker seek`'s own option set: what one Seek goal uses, no benchmark option."""
    from cityseeker_ros.core.agents.policies import POLICIES
    from cityseeker_ros.core.loop.seek import MAX_BUDGET_STEPS, MAX_NEED_CHARS
    from cityseeker_ros.core.vehicles.bridge import ESTOP_ACTIONS
    from cityseeker_ros.ros.run_config import SEEK_DEFAULTS, SEEK_SETTINGS, add_cli_options

    sk = sub.add_parser("seek", help="seek a need from where the vehicle stands: the camera node set serves the "
                        "Seek action, one goal is sent, its feedback and result printed (docs/seek.md)",
                        description="Check the goal and the configuration, then start graph_localiser, "
                        "camera_ingest, decision and the supervisor serving /supervisor/seek (with --walker sim "
                        "also a simulated walker), send one Seek goal, print each step and the result, stop "
                        "every process started. Ctrl-C cancels the goal (the vehicle holds). A refused goal "
                        "prints 'result: rejected (CODE): reason' (bad_need, bad_budget before anything "
                        "starts; busy, estop, no_fix, off_graph, outside_geofence, bad_family from the server). "
                        "Exit status: 0 the goal ran its course (arrived, answered, or its budget spent), 1 it "
                        "ended otherwise (cancelled, failed), 3 it was rejected, 4 a pilot took the vehicle, 5 the "
                        "vehicle bridge lost its link, 2 an error (a bad option such as an unknown --family or "
                        "--policy, a node that failed), 130 interrupted by Ctrl-C.")
    sk.add_argument("need", help=f"the need in words, e.g. 'I am thirsty' (at most {MAX_NEED_CHARS} characters)")
    sk.add_argument("--world", required=True, type=Path, help="the world folder, e.g. worlds/monaco (`cityseeker "
                    "world build`)")
    sk.add_argument("--policy", required=True, help=f"one of: {', '.join(POLICIES.names())}")
    sk.add_argument("--param", action="append", type=key_value_argument, metavar="KEY=VALUE",
                    help="policy parameter (repeatable; VALUE parsed as JSON when it can be)")
    sk.add_argument("--backend", help="VLM backend for --policy vlm (shorthand for --param backend=NAME)")
    sk.add_argument("--model", help="model path or served model name (shorthand for --param model=...)")
    sk.add_argument("--backend-param", action="append", type=key_value_argument, metavar="KEY=VALUE",
                    help="VLM backend parameter (repeatable), e.g. base_url=URL")
    sk.add_argument("--family", dest="goal_family", default=DEFAULT_FAMILY, metavar="FAMILY",
                    help="what NEED is: a need (needs, default), a landmark goal (landmarks: '300 m north-east of "
                    "the cathedral') or a question (questions: the result carries the answer)")
    sk.add_argument("--max-steps", type=int, default=0, metavar="N",
                    help=f"the goal's step budget, 1 to {MAX_BUDGET_STEPS} steps; 0 (the default): the family's, "
                    f"{DEFAULT_MAX_STEPS} steps for a need or a landmark goal, "
                    f"{get_family('questions').goal_budget(DEFAULT_MAX_STEPS)} for a question")
    # docs/seek.md says it in these words
    sk.add_argument("--start", metavar="NODE_ID|LAT,LON", help="where the simulated walker starts: a node of the "
                    "world's street graph (e.g. n01117) or a position on it (default: where the world's first "
                    "task starts)")
    add_cli_options(sk, "camera", SEEK_SETTINGS, SEEK_DEFAULTS)
    sk.add_argument("--walker", choices=("sim", "device"), help="sim: a simulated walker gives the fixes and "
                    "follows the motion goals (no hardware); device: the fixes come from a device on --fix-topic "
                    "(default: sim with the replay source, device otherwise)")
    sk.add_argument("--vehicle", default="walker", metavar="walker|mavlink:CONNECTION|airsim[:HOST[:PORT]]",
                    help="the vehicle behind the safety gate: the simulated walker (default), a PX4/ArduPilot "
                    "autopilot (mavlink:udp://127.0.0.1:14540) or AirSim (its anchor and motion in --link-param); "
                    "a flying vehicle needs --safety-config (docs/vehicles.md)")
    sk.add_argument("--link-param", action="append", type=key_value_argument, metavar="KEY=VALUE",
                    help="a setting of the vehicle's link (repeatable), e.g. flavour=px4, anchor={...}, motion=fly")
    sk.add_argument("--estop-action", choices=ESTOP_ACTIONS, help="what the vehicle does on an e-stop "
                    "(default hold)")
    sk.add_argument("--preempt", action="store_true", help="replace a goal already active on the server")
    sk.add_argument("--result", type=Path, help="also write the result (and every feedback) as JSON to this file")
    sk.add_argument("--timeout", type=float, help="give up after this many seconds (default: none)")
    sk.add_argument("--domain-id", type=int, help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID, else a free one "
                    "leased on this host)")
    sk.add_argument("--out", type=Path, help="keep the node logs in OUT/ros (default: a temporary folder, removed "
                    "at the end unless the run fails)")
    add_console_options(sk)


def seek_run_config(args: argparse.Namespace):
    """The RunConfig of `cityseeker seek ...` (ros/run_config.seek_config), unchecked: the
    launcher checks the goal first, as the server would, then this."""
    from cityseeker_ros.core.agents.vlm.policy import merge_backend_shorthands
    from cityseeker_ros.core.evaluation.config import BenchmarkConfig
    from cityseeker_ros.ros import run_config

    params = merge_backend_shorthands(dict(args.param or []), args.backend, args.model,
                                      dict(args.backend_param or []))
    benchmark = BenchmarkConfig(data=str(args.world), policy=args.policy, policy_params=params)
    from cityseeker_ros.ros.vehicle_link import parse_vehicle

    values = {k: v for k, v in run_config.cli_values(args, "camera").items() if k in run_config.SEEK_SETTINGS}
    source = values.get("source") or run_config.SEEK_DEFAULTS["source"]
    link, link_params = parse_vehicle(getattr(args, "vehicle", None) or "walker")
    link_params.update(dict(getattr(args, "link_param", None) or []))
    if link != "walker":  # a vehicle gives the fixes; the frames still come from --source
        if args.walker == "sim":
            raise ConfigError(f"--walker sim and --vehicle {args.vehicle}: one vehicle at a time")
        return run_config.seek_config(benchmark, {**values, "link": link, "link_params": link_params,
                                                  "estop_action": getattr(args, "estop_action", None),
                                                  "out": str(args.out) if args.out else ""})
    walker = args.walker or ("sim" if source == "replay" else "device")
    if link_params and walker != "sim":
        raise ConfigError("--link-param sets the simulated walker's link; with --walker device there is none")
    values["walker"] = "sim" if walker == "sim" else ""
    if link_params:
        values.update(link="walker", link_params=link_params)
    return run_config.seek_config(benchmark, {**values, "out": str(args.out) if args.out else ""})


def cmd_seek(args: argparse.Namespace) -> int:
    """One Seek goal (launcher.run_seek): every check first, then the node set."""
    from cityseeker_ros.ros import launcher

    run = seek_run_config(args)
    try:
        with _console(args, str(args.world), run.safety_config, run.benchmark.max_steps) as console:
            return launcher.run_seek(run, args.need, max_steps=args.max_steps, preempt=args.preempt,
                                     start=args.start, result_file=args.result, timeout_s=args.timeout,
                                     domain_id=args.domain_id, family=args.goal_family,
                                     extra_nodes=console.nodes, started=console.announce)
    except KeyboardInterrupt:
        print("cityseeker: interrupted; every process the seek started is stopped", file=sys.stderr)
        return 130


def add_console_options(parser: Any) -> None:
    """--console and --console-port (ar/console_process.py)."""
    from cityseeker_ros.ar.console_process import add_options

    add_options(parser)


def _console(args: argparse.Namespace, world: str, safety_config: str, max_steps: int) -> Any:
    """The operator console's process for this run (none without --console)."""
    from cityseeker_ros.ar.console_process import console_launch

    return console_launch(args, world, safety_config, max_steps)


def _ar_run(args: argparse.Namespace) -> int:
    from cityseeker_ros.ar.command import run_ar

    return run_ar(args)


def _monitor_run(args: argparse.Namespace) -> int:
    from cityseeker_ros.core.vehicles.monitor.command import run

    return run(args)


def _bag_run(args: argparse.Namespace) -> int:
    from cityseeker_ros.bag.cli import run

    return run(args)


def main(argv: Optional[Sequence[str]] = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    redact_logging()  # no credential reaches the terminal or a captured log
    args = build_parser().parse_args(argv)
    try:
        check_extras(args)  # a missing extra ends the command here, before anything starts
        return COMMANDS[args.command](args)
    except CitySeekerError as exc:
        print(f"cityseeker: error: {redact_text(str(exc))}", file=sys.stderr)
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
