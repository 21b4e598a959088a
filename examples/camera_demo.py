"""Live-camera demo: render a 360° video walking a route on a generated world, then run the
camera pipeline on it (GNSS -> graph localiser -> equirect views -> policy -> AR guidance).

    python examples/camera_demo.py --world worlds/monaco --out runs/camera_demo --policy random

Writes drive.avi, drive_fixes.csv and guidance.jsonl into --out. No ROS needed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cityseeker_ros.core.infra.errors import CitySeekerError
from cityseeker_ros.demo import camera


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", type=Path, default=Path("worlds/monaco"), help="a world folder (cityseeker world build)")
    p.add_argument("--out", type=Path, default=Path("runs/camera_demo"), help="output folder")
    p.add_argument("--policy", default="random", help="a registered policy: random, forward, ocr-embed...")
    p.add_argument("--hops", type=int, default=3, help="graph hops to walk")
    p.add_argument("--fps", type=float, default=5.0)
    p.add_argument("--width", type=int, default=512, help="panorama width in pixels (height is half)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    try:
        camera.main(args.world, args.out, args.policy, args.hops, args.fps, args.width, args.seed)
    except CitySeekerError as exc:
        sys.exit(f"camera_demo: {exc}")
