"""What the ROS 2 path adds per step to the VLM policy, in each mode and stop view, side by side.

The VLM policy (`--policy vlm`, OpenAI-compatible backend) asks a fake server on loopback that
answers every prompt at once with a reply each parser reads (keep walking through view A), so
the figure is the stack's own cost: the rendered 640x480 views (and the node's panorama where
the policy shows one), their trip over DDS, the prompts' image encoding, the HTTP round trip.
For each case the same episodes run in process (`policy.act` and `env.step`, per-step times)
and through `cityseeker run benchmark` (the supervisor's view-set-to-view-set period), and the
difference of the medians is the added cost. Target: at most 15 ms p50 added per step in every
mode.

    python benchmarks/vlm_ros_loop.py [--data worlds/monaco] [--episodes 5]
                                      [--cases two-call/panorama,two-call/views,single-call/panorama,...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ros_loop import run_benchmark_over_ros

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.episode_run import episode_rng
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.tasks.environment import Environment

TARGET_MS = 15.0
CASES = ("two-call/panorama", "two-call/views", "single-call/panorama", "single-call/views")
MODEL = "walker"
# Read by the stop, choice and single prompts' parsers alike: not here, go through view A.
REPLY = json.dumps({"observation": "a street", "observations": [{"view": "A", "description": "a street"}],
                    "thoughts": "keep walking", "stop": False, "action": "A", "confidence": 0.5})


class WalkingServer:
    """An OpenAI-compatible server on loopback that answers every chat completion with REPLY."""

    def __init__(self) -> None:
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                server.requests += 1
                self._send({"id": "x", "object": "chat.completion", "model": MODEL,
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": REPLY}}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

        server = self
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def policy_params(url: str, mode: str, stop_view: str) -> dict[str, Any]:
    return {"backend": "openai", "model": MODEL, "backend_params": {"base_url": url}, "mode": mode,
            "stop_view": stop_view}


def in_process_ms(data: Path, episodes: int, params: dict[str, Any], view_params: dict[str, Any]
                  ) -> tuple[list[float], list[float], int]:
    """Per-episode p50 and p95 milliseconds per step (observe, decide, step) and the step count."""
    world = load_dataset(data)[0]
    env = Environment(world, views=make_view_source("rendered", world, view_params))
    policy = make_policy("vlm", **params)
    policy.prepare()
    p50s, p95s, steps = [], [], 0
    for ep in world.episodes[:episodes]:
        obs = env.reset(ep)
        policy.reset(ep, episode_rng(0, ep.episode_id))
        times = []
        while not env.done:
            t0 = time.perf_counter()
            obs = env.step(policy.act(obs)).observation
            times.append(1000 * (time.perf_counter() - t0))
        p50s.append(statistics.median(times))
        p95s.append(statistics.quantiles(times, n=20)[-1] if len(times) > 1 else times[0])
        steps += len(times)
    policy.close()
    return p50s, p95s, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("worlds/monaco"))
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated MODE/STOP_VIEW: {', '.join(CASES)}")
    args = parser.parse_args()
    if not (args.data / "world.json").is_file() and not (args.data / "connections.json").is_file():
        sys.exit(f"--data {args.data}: no world there; build one with `cityseeker world build monaco --out "
                 f"{args.data}`")
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        sys.exit(f"--cases: unknown {unknown}; known: {', '.join(CASES)}")
    view_params = {"width": 640, "height": 480}
    server = WalkingServer()
    print(f"{args.episodes} episodes of {args.data} per case, views rendered at 640x480, a loopback server that "
          "answers at once; ROS 2 over loopback DDS (four processes)")
    print(f"{'case':22} {'in process p50/p95':>20} {'over ROS p50/p95':>18} {'added p50/p95':>15}  target")
    try:
        for case in cases:
            mode, stop_view = case.split("/")
            params = policy_params(server.url, mode, stop_view)
            local50, local95, steps = in_process_ms(args.data, args.episodes, params, view_params)
            extra = ["--backend", "openai", "--model", MODEL, "--backend-param", f"base_url={server.url}",
                     "--param", f"mode={mode}", "--param", f"stop_view={stop_view}", "--views", "rendered",
                     *(a for k, v in view_params.items() for a in ("--view-param", f"{k}={v}"))]
            ros = run_benchmark_over_ros(args.data, args.episodes, False, "vlm", extra)
            in50, in95 = statistics.median(local50), statistics.median(local95)
            ros50, ros95 = statistics.median(ros.p50s), statistics.median(ros.p95s)
            added = ros50 - in50
            print(f"{case:22} {in50:9.1f} / {in95:6.1f} ms {ros50:8.1f} / {ros95:6.1f} ms {added:6.1f} / "
                  f"{ros95 - in95:6.1f} ms  <= {TARGET_MS:g}: {'met' if added <= TARGET_MS else 'NOT met'}"
                  f"  ({steps} steps in process; load {os.getloadavg()[0]:.1f})")
    finally:
        server.close()
    print(f"server answered {server.requests} requests")


if __name__ == "__main__":
    main()
