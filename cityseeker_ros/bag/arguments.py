"""The options of `cityseeker bag record|play`, which are also the command lines of
`python -m cityseeker_ros.bag.recorder|player` (bag/cli.py re-executes into those under the
ROS environment). Defined here, importing neither side, so the CLI reaches the recorder and
player one way only and their modules can build the same parser without the CLI."""
from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_CLOCK_HZ = 40.0  # ros2 bag play's /clock rate


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    from cityseeker_ros.ros.bag_storage import STORAGES

    parser.add_argument("out", type=Path, help="bag folder to create (must not exist)")
    parser.add_argument("--topics", nargs="+", metavar="TOPIC[:pkg/msg/Type]",
                        help="topics to record (default: the benchmark's topics, docs/bags.md); a topic of "
                        "unknown type takes its type from the graph")
    parser.add_argument("--storage", default="mcap", help=f"one of: {', '.join(STORAGES.names())} (default mcap)")
    parser.add_argument("--duration", type=float, help="stop after this many seconds")


def _clock_hz(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--clock rate must be > 0 Hz, got {text}")
    return value


def add_play_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bag", type=Path, help="bag folder (or its .mcap / .db3 file)")
    parser.add_argument("--rate", type=float, default=1.0,
                        help="1 = recorded timing, 2 = twice as fast, 0 = as fast as subscribers take them")
    parser.add_argument("--clock", type=_clock_hz, nargs="?", const=DEFAULT_CLOCK_HZ, default=None, metavar="HZ",
                        help=f"publish /clock from the recorded time (HZ between messages; {DEFAULT_CLOCK_HZ:g})")
    parser.add_argument("--topics", nargs="+", metavar="TOPIC", help="play only these topics")
    parser.add_argument("--wait-for-subscribers", type=float, default=0.0, metavar="S",
                        help="wait up to S seconds for every played topic to have a subscriber (a recorder)")
    parser.add_argument("--subscribers", type=int, default=1, metavar="N",
                        help="with --wait-for-subscribers: wait for N subscribers per topic (default 1)")
    parser.add_argument("--ack-timeout", type=float, default=2.0, metavar="S",
                        help="longest wait for subscribers to acknowledge a message before the next on its topic")
