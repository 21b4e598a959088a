"""One view set's images between two processes over DDS, per image_format and shared-memory
segment size: how long a burst of views (and a panorama) takes from the first publish to the
last image decoded on the other side, and whether any is lost.

The publisher and the subscriber are separate processes on one host, with the project's Fast
DDS profile (or a copy with another `segment_size`) and the view images' QoS (reliable,
transient-local, keep-last 9). Each burst is encoded, published, received and decoded with
cityseeker_ros.ros.convert, as the world and decision nodes do.

    python benchmarks/image_burst.py [--views 4] [--size 640x480] [--panorama 0x0] [--bursts 40]
                                     [--formats raw,png,jpeg] [--segments-mb 16,64]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cityseeker_ros.ros import env as ros

TOPIC = "/image_burst/images"


def pixels(w: int, h: int, seed: int) -> np.ndarray:
    """A gradient with noise: about as hard to compress as a street photo."""
    grad = np.linspace(0, 120, w, dtype=np.float32)[None, :, None] * np.array([0, 0.3, 0.2], np.float32)
    noise = np.random.default_rng(seed).normal(0, 20, (h, w, 3)).astype(np.float32)
    return np.clip(np.array([200, 90, 30], np.float32) - grad + noise, 0, 255).astype(np.uint8)


def publisher(image_format: str, views: int, size: str, panorama: str, bursts: int, period_s: float) -> None:
    import rclpy

    from cityseeker_ros.ros import convert, qos

    rclpy.init()
    node = rclpy.create_node("image_burst_pub")
    pub = node.create_publisher(convert.image_message_type(image_format),
                                convert.image_topic(TOPIC, image_format), qos.view_images(9))
    w, h = (int(v) for v in size.split("x"))
    frames = [pixels(w, h, i) for i in range(views)]
    pw, ph = (int(v) for v in panorama.split("x"))
    if pw:
        frames.append(pixels(pw, ph, 99))
    deadline = time.monotonic() + 30
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    time.sleep(1.0)  # discovery settles
    for _ in range(bursts):
        ns = time.time_ns()
        stamp = convert.stamp_from_ns(ns)
        for i, frame in enumerate(frames):
            pub.publish(convert.image_to_msg(frame, stamp, f"view_{i}", image_format))
        time.sleep(period_s)
    time.sleep(2.0)  # let a slow subscriber drain before the writer goes
    node.destroy_node()
    rclpy.shutdown()


def subscriber(image_format: str, frames: int, bursts: int, timeout_s: float) -> None:
    import rclpy

    from cityseeker_ros.ros import convert, qos

    rclpy.init()
    node = rclpy.create_node("image_burst_sub")
    got: dict[int, list[float]] = {}

    def on_image(msg) -> None:
        convert.image_from_msg(msg)
        key = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        got.setdefault(key, []).append(time.time_ns())

    node.create_subscription(convert.image_message_type(image_format), convert.image_topic(TOPIC, image_format),
                             on_image, qos.view_images(9))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and (len(got) < bursts or any(len(v) < frames for v in got.values())):
        rclpy.spin_once(node, timeout_sec=0.05)
    latencies = [(max(v) - k) / 1e6 for k, v in got.items() if len(v) == frames]
    print(json.dumps({"complete": len(latencies), "received": sum(len(v) for v in got.values()),
                      "latencies_ms": latencies}))
    node.destroy_node()
    rclpy.shutdown()


def profile_with_segment(folder: Path, segment_bytes: int) -> Path:
    text = ros.config_file(ros.PROFILE_FILE).read_text()
    start = text.index("<segment_size>") + len("<segment_size>")
    end = text.index("</segment_size>")
    path = folder / f"fastdds_{segment_bytes}.xml"
    path.write_text(text[:start] + str(segment_bytes) + text[end:])
    return path


def run(image_format: str, segment_mb: int, args: argparse.Namespace, folder: Path) -> dict:
    frames = args.views + (1 if args.panorama != "0x0" else 0)
    with ros.lease_domain() as domain:
        env = ros.ros_env(domain)
        profile = str(profile_with_segment(folder, segment_mb * 1024 * 1024))
        env["FASTRTPS_DEFAULT_PROFILES_FILE"] = env["FASTDDS_DEFAULT_PROFILES_FILE"] = profile
        me = [sys.executable, str(Path(__file__).resolve())]
        sub = subprocess.Popen(me + ["--role", "sub", "--formats", image_format, "--frames", str(frames),
                                     "--bursts", str(args.bursts)], env=env, stdout=subprocess.PIPE, text=True)
        pub = subprocess.Popen(me + ["--role", "pub", "--formats", image_format, "--views", str(args.views),
                                     "--size", args.size, "--panorama", args.panorama, "--bursts", str(args.bursts),
                                     "--period", str(args.period)], env=env)
        out, _ = sub.communicate(timeout=300)
        pub.wait(60)
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--size", default="640x480")
    parser.add_argument("--panorama", default="0x0", help="WIDTHxHEIGHT of a panorama sent with each burst")
    parser.add_argument("--bursts", type=int, default=40)
    parser.add_argument("--period", type=float, default=0.2, help="seconds between bursts")
    parser.add_argument("--formats", default="raw,png,jpeg")
    parser.add_argument("--segments-mb", default="64")
    parser.add_argument("--role", choices=("pub", "sub"), help=argparse.SUPPRESS)
    parser.add_argument("--frames", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "pub":
        return publisher(args.formats, args.views, args.size, args.panorama, args.bursts, args.period)
    if args.role == "sub":
        return subscriber(args.formats, args.frames, args.bursts, timeout_s=60.0 + args.bursts)
    ros.reexec_with_ros_env()
    print(f"{args.bursts} bursts of {args.views} views of {args.size}"
          f"{'' if args.panorama == '0x0' else ' and a ' + args.panorama + ' panorama'}, every {args.period:g} s; "
          "first publish to last image decoded:")
    with tempfile.TemporaryDirectory() as tmp:
        for segment_mb in (int(s) for s in args.segments_mb.split(",")):
            for image_format in args.formats.split(","):
                r = run(image_format, segment_mb, args, Path(tmp))
                lat = sorted(r["latencies_ms"])
                p50 = statistics.median(lat) if lat else float("nan")
                p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else float("nan")
                print(f"  segment {segment_mb:3d} MB  {image_format:5s} p50 {p50:8.1f} ms  p95 {p95:8.1f} ms  "
                      f"complete {r['complete']}/{args.bursts} bursts")


if __name__ == "__main__":
    main()
