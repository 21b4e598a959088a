"""`cityseeker bag record | play | eval`.

record and play need rclpy, which loads only in a process started with the ROS environment
(cityseeker_ros/ros/env.py): when this process lacks it, it replaces itself (same PID, so
Ctrl-C and `kill PID` reach the recorder) by `python -m cityseeker_ros.bag.recorder|player`
with the same arguments under `ros_env()`. eval reads the bag file alone and never needs ROS.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from cityseeker_ros.bag.arguments import add_play_arguments, add_record_arguments
from cityseeker_ros.core.evaluation.metrics import DEFAULT_DTW_THRESHOLD_M
from cityseeker_ros.core.infra.key_value import key_value_argument
from cityseeker_ros.core.tasks.environment import DEFAULT_MAX_STEPS

RECORDER = "cityseeker_ros.bag.recorder"
PLAYER = "cityseeker_ros.bag.player"


def add_parser(sub: Any) -> None:
    """Add `bag` and its sub-commands to the `cityseeker` parser's sub-parsers."""
    bag = sub.add_parser("bag", help="record, play and evaluate rosbag2 bags (MCAP or sqlite3)")
    bsub = bag.add_subparsers(dest="bag_command", required=True)
    add_record_arguments(bsub.add_parser("record", help="record the stack's topics into a bag (Ctrl-C stops)"))
    add_play_arguments(bsub.add_parser("play", help="publish a bag's messages with their recorded timing"))
    ev = bsub.add_parser("eval", help="re-score a recorded run, or re-decide its steps with another policy")
    ev.add_argument("bag", type=Path, help="bag folder (or its .mcap / .db3 file)")
    ev.add_argument("--data", type=Path, required=True, help="the dataset the run used")
    ev.add_argument("--dataset", default="auto", help="dataset format (default: auto-detect)")
    ev.add_argument("--out", type=Path, help="write episodes.jsonl, summary.json, comparison.json (and the "
                    "re-decision files) here")
    ev.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, help="the replay's step budget (default 35)")
    ev.add_argument("--dtw-threshold-m", type=float, default=DEFAULT_DTW_THRESHOLD_M,
                    help="the replay's d_th for nDTW, metres (default 50)")
    ev.add_argument("--episode-topic", default="/streetview_replay/episode",
                    help="the recorded episode announcements (default /streetview_replay/episode)")
    ev.add_argument("--decision-topic", default="/decision/decision",
                    help="the recorded decisions (default /decision/decision)")
    ev.add_argument("--redecide", metavar="POLICY", help="decide every recorded view set again with POLICY")
    ev.add_argument("--policy-param", action="append", type=key_value_argument, default=[], metavar="KEY=VALUE",
                    help="parameter of the --redecide policy (repeatable; VALUE parsed as JSON when it can be)")
    ev.add_argument("--views-topic", help="view sets to re-decide (default /supervisor/decide_goal when recorded, "
                    "else /streetview_replay/views)")
    ev.add_argument("--images-topic", default="/streetview_replay/images",
                    help="the recorded images, for an image --redecide policy (default /streetview_replay/images)")


def _module_argv(args: argparse.Namespace) -> list[str]:
    """The recorder's or player's own command line for these parsed options."""
    if args.bag_command == "record":
        argv = [str(args.out), "--storage", args.storage]
        if args.duration is not None:
            argv += ["--duration", repr(args.duration)]
    else:
        argv = [str(args.bag), "--rate", repr(args.rate), "--wait-for-subscribers", repr(args.wait_for_subscribers),
                "--ack-timeout", repr(args.ack_timeout)]
        if args.clock is not None:
            argv += ["--clock", repr(args.clock)]
    if args.topics:
        argv += ["--topics", *args.topics]
    return argv


def _in_ros_env(args: argparse.Namespace) -> int:
    from cityseeker_ros.ros import env as ros

    if not ros.env_ready():
        module = RECORDER if args.bag_command == "record" else PLAYER
        sys.stdout.flush()
        os.execve(sys.executable, ros.python_module_command(module, *_module_argv(args)), ros.ros_env())
    if args.bag_command == "record":
        from cityseeker_ros.bag.recorder import record

        return record(args)
    from cityseeker_ros.bag.player import play

    return play(args)


def _evaluate(args: argparse.Namespace) -> int:
    from cityseeker_ros.bag import evaluate

    result = evaluate.rescore(args.bag, args.data, args.dataset, max_steps=args.max_steps,
                              dtw_threshold_m=args.dtw_threshold_m, episode_topic=args.episode_topic,
                              decision_topic=args.decision_topic)
    summary = result.summary()
    comparison = result.comparison()
    if args.out is not None:
        evaluate.write_rescore(result, args.out, {"bag": str(Path(args.bag).resolve()), "data": str(args.data),
                                                  "max_steps": args.max_steps, "dtw_threshold_m": args.dtw_threshold_m,
                                                  "episode_topic": args.episode_topic})
    overall = summary["overall"]
    print(f"{args.bag}: {comparison['episodes']} episodes re-scored, {comparison['identical']} identical to the "
          f"recorded metrics (max |diff| {comparison['max_abs_diff']})")
    print("  " + "  ".join(f"{k}={v:.2f}" for k, v in overall.items() if k not in ("episodes", "seeds")))
    for c in comparison["per_episode"]:
        if not c["identical"]:
            print(f"  DIFFERS {c['episode_id']} seed {c['seed']} run {c['run']}: {', '.join(c['differing'])}"
                  f"{' (recorded metrics missing: ' + ', '.join(c['missing']) + ')' if c['missing'] else ''}")
    code = 0 if result.identical else 1
    if args.redecide:
        redecision = evaluate.redecide(args.bag, args.redecide, dict(args.policy_param), data=args.data,
                                       dataset=args.dataset, views_topic=args.views_topic,
                                       images_topic=args.images_topic, decision_topic=args.decision_topic)
        report = (evaluate.write_redecision(redecision, args.out) if args.out is not None
                  else redecision.report())
        rate = report["agreement"]
        print(f"re-decided {report['view_sets']} view sets from {report['views_topic']} with {report['policy']}: "
              f"{report['agreed']}/{report['compared']} agree with {', '.join(report['recorded_policies']) or '-'}"
              f" ({'n/a' if rate is None else f'{100 * rate:.1f}%'}), {report['errors']} errors")
        print(f"  {'episode':<24} {'seed':>4} {'run':>4} {'agree':>7} {'rate':>7}")
        for row in report["per_episode"]:
            r = row["agreement"]
            print(f"  {row['episode_id']:<24} {row['seed']:>4} {row['run']:>4} "
                  f"{row['agreed']:>3}/{row['compared']:<3} {'n/a' if r is None else f'{100 * r:6.1f}%':>7}")
    return code


def run(args: argparse.Namespace) -> int:
    if args.bag_command == "eval":
        return _evaluate(args)
    return _in_ros_env(args)
