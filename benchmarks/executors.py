"""Episodes per second of one benchmark run under each executor: serial, the local process pool
and Ray, for a cheap policy (random, headings only) and a costly one (ocr-embed on rendered views).

Each run is a fresh process (as from the command line: a process that already ran a model must
not fork workers, torch's thread pools hang in the children) writing into a fresh folder, timed
from `Benchmark(...)` (data loaded, model prepared) to summary.json. A Ray run starts its local
instance before the clock starts; that start is reported apart (`ray_start_s`). The
episodes.jsonl of every run is compared with the serial one (less the seconds each decision
took): a figure for a run that wrote other results would be meaningless.

    python benchmarks/executors.py --data ../shared/data/cityseeker/HongKong_6 --limit 60
    python benchmarks/executors.py --data /tmp/monaco --costly-limit 6 --workers 2
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig


def one_run(out: Path, config: dict[str, Any]) -> dict[str, Any]:
    """The child's side: one run, timed; what the parent needs as JSON."""
    ray_start_s = None
    if config.get("executor") == "ray":
        from cityseeker_ros.core.evaluation.executors.ray import connect

        started = time.perf_counter()
        connect(None)
        ray_start_s = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    Benchmark(BenchmarkConfig(**config)).run(out, progress=False)
    seconds = time.perf_counter() - started
    data = (out / "episodes.jsonl").read_bytes()
    return {"seconds": seconds, "episodes": data.count(b"\n"), "sha256": hashlib.sha256(untimed(data)).hexdigest(),
            "ray_start_s": ray_start_s}


def untimed(data: bytes) -> bytes:
    """episodes.jsonl without the measured seconds per decision (`latency_s`), which no two runs share."""
    out = []
    for line in data.splitlines():
        record = json.loads(line)
        for decision in record.get("decisions", ()):
            decision.pop("latency_s", None)
        out.append(json.dumps(record, separators=(",", ":")).encode())
    return b"\n".join(out)


def timed_run(out: Path, **config: Any) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--one", json.dumps(config), "--out", str(out)],
                          check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(name: str, data: str, limit: int, workers: int, seeds: int, repeats: int, folder: Path,
            **config: Any) -> dict[str, Any]:
    """Serial, local pool and Ray runs of one configuration: episodes/s (best of `repeats`)."""
    base = dict(data=data, limit=limit, seeds=list(range(seeds)), **config)
    rows: dict[str, Any] = {}
    serial_hash = None
    for label, extra in (("serial", {}), ("local", {"workers": workers}),
                         ("ray", {"executor": "ray", "workers": workers})):
        best = None
        for r in range(repeats):
            got = timed_run(folder / f"{name}-{label}-{r}", **base, **extra)
            serial_hash = serial_hash or got["sha256"]
            if got["sha256"] != serial_hash:
                raise SystemExit(f"{name} {label}: episodes.jsonl differs from the serial run")
            best = got["seconds"] if best is None else min(best, got["seconds"])
        episodes = got["episodes"]
        rows[label] = {"seconds": round(best, 2), "episodes": episodes, "episodes_per_s": round(episodes / best, 2)}
        if got["ray_start_s"] is not None:
            rows[label]["ray_start_s"] = got["ray_start_s"]
        print(f"{name:10s} {label:7s} {episodes:4d} episodes in {best:7.2f} s = {episodes / best:7.2f} episodes/s",
              file=sys.stderr)
    rows["ray_overhead_vs_local_pct"] = round(100.0 * (rows["ray"]["seconds"] / rows["local"]["seconds"] - 1), 1)
    rows["local_speedup_vs_serial"] = round(rows["serial"]["seconds"] / rows["local"]["seconds"], 2)
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--one", help=argparse.SUPPRESS)  # internal: run this config (JSON) in this process
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--data", help="a city folder (a built world for the costly policy's views)")
    p.add_argument("--costly-data", help="world for ocr-embed with rendered views (default: --data)")
    p.add_argument("--limit", type=int, default=60, help="episodes of the cheap policy (default 60)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--costly-limit", type=int, default=4, help="episodes of the costly policy (default 4)")
    p.add_argument("--costly-max-steps", type=int, default=6)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--skip-costly", action="store_true")
    p.add_argument("--skip-cheap", action="store_true")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()
    if args.one:
        print(json.dumps(one_run(args.out, json.loads(args.one))))
        return 0
    if not args.data:
        p.error("--data is required")
    results: dict[str, Any] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                           "platform": platform.platform(), "load_1min": os.getloadavg()[0]},
                               "workers": args.workers}
    with tempfile.TemporaryDirectory(prefix="executors-") as tmp:
        if not args.skip_cheap:
            results["random"] = compare("random", str(args.data), args.limit, args.workers, args.seeds, args.repeats,
                                        Path(tmp), policy="random")
        if not args.skip_costly:
            results["ocr-embed"] = compare("ocr-embed", str(args.costly_data or args.data), args.costly_limit,
                                           args.workers, 1, 1, Path(tmp), policy="ocr-embed", views="rendered",
                                           max_steps=args.costly_max_steps)
    print(json.dumps(results, indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
