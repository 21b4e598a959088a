"""Perspective cuts from an equirectangular panorama: reference (grid rebuilt per cut) vs cached.

Both run in one process on the same panorama and the same yaws (the walkable headings of 36
navigation steps), so machine noise hits them alike. Passes (exit 0) when the cached cutter is
>= 10x faster per cut and no output pixel differs by more than 2 levels from the reference.

    python benchmarks/pano_cut.py [--pano PATH] [--repeats 3] [--size 4096x2048] [--out-size 1024x512] [--fov 120]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from cityseeker_ros.core.sensing.views.panorama import PanoramaCutter, cut_uncached, load_panorama, perspective_maps

MIN_SPEEDUP = 10.0
MAX_DIFF = 2
STEPS = 36


def size_arg(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got '{text}'") from None
    if w < 2 or h < 2:
        raise argparse.ArgumentTypeError(f"size {text} is too small")
    return w, h


def synthetic_pano(width: int, height: int) -> np.ndarray:
    """Smooth gradients (where interpolation is easy) plus 1-px grid lines and text (where any
    difference in sampling position shows as a large pixel difference)."""
    lon = np.linspace(0.0, 2.0 * np.pi, width, endpoint=False)[None, :]
    lat = np.linspace(0.0, np.pi, height)[:, None]
    rgb = np.stack(np.broadcast_arrays(
        127.5 + 127.5 * np.sin(lon) * np.sin(lat),
        127.5 + 127.5 * np.cos(3.0 * lon + lat),
        255.0 * lat / np.pi + 0.0 * lon,
    ), axis=-1)
    img = Image.fromarray(rgb.round().astype(np.uint8))
    draw = ImageDraw.Draw(img)
    step = max(width // 64, 4)
    for x in range(0, width, step):
        draw.line([(x, 0), (x, height)], fill=(255, 255, 255) if x % (4 * step) else (0, 0, 0), width=1)
    for y in range(0, height, step):
        draw.line([(0, y), (width, y)], fill=(255, 255, 255) if y % (4 * step) else (0, 0, 0), width=1)
    font = ImageFont.load_default(size=max(height // 40, 10))
    for i, x in enumerate(range(step // 2, width, 4 * step)):
        for j, y in enumerate(range(step // 2, height, 4 * step)):
            draw.text((x, y), f"{i:02d}/{j:02d} CitySeeker", fill=(255, 0, 0) if (i + j) % 2 else (0, 0, 255),
                      font=font)
    return np.asarray(img)


def step_yaws(steps: int = STEPS, seed: int = 0) -> list[float]:
    """Yaws a walk would ask for: 2-4 walkable headings per node, relative to a random car heading,
    written as providers do (some negative, some above 360) and with the seam included."""
    rng = np.random.default_rng(seed)
    yaws = [180.0, -180.0]
    for _ in range(steps):
        car = rng.uniform(0.0, 360.0)
        headings = (car + rng.choice([0.0, 90.0, 180.0, 270.0], size=rng.integers(2, 5), replace=False)
                    + rng.uniform(-8.0, 8.0)) % 360.0
        yaws += [float(h - car + rng.choice([0.0, 360.0, -360.0])) for h in headings]
    return yaws


def stats(times: list[float]) -> tuple[float, float]:
    return float(np.median(times) * 1e3), float(np.percentile(times, 90) * 1e3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pano", type=Path, help="a real panorama (default: a synthetic one)")
    parser.add_argument("--repeats", type=int, default=3, help="passes over the yaw list")
    parser.add_argument("--size", type=size_arg, default=(4096, 2048), help="synthetic panorama size")
    parser.add_argument("--out-size", type=size_arg, default=(1024, 512), help="view size")
    parser.add_argument("--fov", type=float, default=120.0, help="horizontal field of view, degrees")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")

    pano = load_panorama(args.pano) if args.pano else synthetic_pano(*args.size)
    out_w, out_h = args.out_size
    yaws = step_yaws()
    cutter = PanoramaCutter(args.fov, out_w, out_h)
    cutter.cut(pano, 0.0)  # warm-up: builds the one grid every later yaw reuses

    # Each method in its own loop over the same yaws, outputs dropped at once: keeping hundreds of
    # MB alive makes each new output land on never-touched pages, which in a VM costs more than a
    # cut. The comparison runs in a separate, untimed pass.
    grids = [perspective_maps(pano.shape, y, args.fov, out_w, out_h) for y in yaws[:8]]
    methods = {
        "reference": lambda i: cut_uncached(pano, yaws[i], args.fov, out_w, out_h),
        "cached": lambda i: cutter.cut(pano, yaws[i]),
        "remap": lambda i: cv2.remap(pano, *grids[i % len(grids)], cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP),
    }
    times: dict[str, list[float]] = {name: [] for name in methods}
    clock = time.perf_counter
    for _ in range(args.repeats):
        for name, fn in methods.items():
            for i in range(len(yaws)):
                t0 = clock()
                fn(i)
                times[name].append(clock() - t0)
    diff = differing = 0
    for yaw in yaws:
        d = np.abs(cut_uncached(pano, yaw, args.fov, out_w, out_h).astype(np.int16) - cutter.cut(pano, yaw))
        diff = max(diff, int(d.max()))
        differing += int(d.any(axis=-1).sum())

    ref_med, ref_p90 = stats(times["reference"])
    fast_med, fast_p90 = stats(times["cached"])
    remap_med, remap_p90 = stats(times["remap"])
    speedup = ref_med / fast_med
    print(f"command: python {' '.join(sys.argv)}")
    print(f"cpus: {os.cpu_count()} (OpenCV threads {cv2.getNumThreads()}); opencv {cv2.__version__}, "
          f"numpy {np.__version__}")
    source = str(args.pano) if args.pano else "synthetic"
    print(f"panorama: {source} {pano.shape[1]}x{pano.shape[0]}; view {out_w}x{out_h} at {args.fov:g} deg; "
          f"{len(yaws)} yaws x {args.repeats} repeats; grids cached: {cutter.grid_count}")
    print(f"{'':<28}{'median ms':>10}{'p90 ms':>10}")
    print(f"{'reference (grid per cut)':<28}{ref_med:>10.2f}{ref_p90:>10.2f}")
    print(f"{'cached cutter':<28}{fast_med:>10.2f}{fast_p90:>10.2f}")
    print(f"{'cv2.remap only (float grid)':<28}{remap_med:>10.2f}{remap_p90:>10.2f}")
    print(f"speedup (median): {speedup:.1f}x (target >= {MIN_SPEEDUP:g}x)")
    print(f"max abs pixel difference over {len(yaws)} yaws: {diff} (limit {MAX_DIFF}); "
          f"pixels differing: {differing} of {len(yaws) * out_w * out_h}")
    ok = speedup >= MIN_SPEEDUP and diff <= MAX_DIFF
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
