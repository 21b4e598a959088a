"""Seconds per navigation decision of a VLM backend, and what that means for a whole run.

One decision = one request shaped like the VLM policy's: a system prompt, N street views of
WxH pixels with their headings, the question; exactly --new-tokens tokens are generated
(end-of-sequence is ignored), so every model and quantisation pays for the same output.
Targets: p50 <= 0.4 s per decision at batch 1, and the 44k decisions of a full benchmark
(8 cities x ~1,257 episodes x ~35 steps) in <= 30 minutes at the best batch size. They apply
to a 7B model on an H100; on a CPU the figures are for whatever (tiny) model runs there.

Latency does not depend on weight values, so full-size architectures with random weights
stand in for checkpoints that cannot be downloaded here:

    python benchmarks/decision_latency.py --arch qwen2.5-vl --size tiny --device cpu
    python benchmarks/decision_latency.py --arch qwen2.5-vl --size 7b --dtype bfloat16 --device cuda
    python benchmarks/decision_latency.py --arch qwen2.5-vl --size 32b --quantization bnb-4bit --device cuda
    python benchmarks/decision_latency.py --model /models/Qwen2.5-VL-7B-Instruct --device cuda
    python benchmarks/decision_latency.py --backend openai --base-url http://127.0.0.1:8000/v1 --model qwen-vl
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import cityseeker_ros.core.agents.vlm.openai_backend  # noqa: F401  (registers "openai")
import cityseeker_ros.core.agents.vlm.transformers_backend  # noqa: F401  (registers "transformers")
from cityseeker_ros.core.agents.vlm.backend import Backend, BackendError, GenerationRequest, Message, make_backend
from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError

P50_TARGET_S = 0.4
RUN_TARGET_S = 30 * 60.0
RUN_DECISIONS = 44_000

SYSTEM = ("You are a pedestrian navigating a city to satisfy a person's need. At each intersection you see "
          "street views, one per walkable heading. Choose the heading that leads towards a place that meets "
          "the need, or stop when you have arrived. Answer with JSON: {\"heading\": <degrees>, "
          "\"stop\": <true|false>, \"confidence\": <0..1>, \"reason\": \"<short>\"}.")
QUESTION = ("Need: I have a headache and would like to buy some painkillers nearby. Steps taken: 6 of 35. "
            "Visited: 3 intersections, last heading 90. Which heading do you choose?")


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {text!r}") from None
    return w, h


def decision_request(views: int, size: tuple[int, int], new_tokens: int, seed: int) -> GenerationRequest:
    """A policy-shaped request; pixel values are noise (they cost the same as streets)."""
    rng = np.random.default_rng(seed)
    width, height = size
    content: list[Any] = [f"There are {views} walkable headings."]
    for i in range(views):
        content.append(f"View {i + 1}, heading {round(i * 360 / views)} degrees:")
        content.append(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
    content.append(QUESTION)
    return GenerationRequest(messages=(Message("system", (SYSTEM,)), Message("user", tuple(content))),
                             max_new_tokens=new_tokens, temperature=0.0)


def build_backend(args: argparse.Namespace, max_batch: int) -> tuple[Backend, str]:
    """The backend to time and a one-line description of what it runs."""
    if args.backend == "openai":
        if not args.base_url or not args.model:
            raise ConfigError("--backend openai needs --base-url and --model (the served model name)")
        extra = {"min_tokens": args.new_tokens, "ignore_eos": True}  # vLLM / SGLang sampling extensions
        backend = make_backend("openai", base_url=args.base_url, model=args.model, max_concurrency=max_batch,
                               extra_body=extra, timeout_s=600.0)
        return backend, f"openai server {args.base_url} model {args.model}"
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    common = {"quantization": args.quantization, "max_batch_size": max_batch, "ignore_eos": True,
              "min_pixels": args.min_pixels, "max_pixels": args.max_pixels}
    if args.model:
        backend = make_backend("transformers", model=args.model, dtype=args.dtype or "auto", device_map=device,
                               attn_implementation=args.attn_implementation, **common)
        return backend, f"checkpoint {args.model}"
    from cityseeker_ros.core.agents.vlm.random_models import build_random_checkpoint, build_random_model
    from cityseeker_ros.core.agents.vlm.transformers_backend import TransformersBackend

    folder = Path(tempfile.mkdtemp(prefix=f"random-{args.arch}-{args.size}-"))
    build_random_checkpoint(args.arch, folder, size=args.size, seed=args.seed)
    if args.size == "tiny":  # a real checkpoint folder: time the real loading path
        backend = make_backend("transformers", model=str(folder), dtype=args.dtype or "auto", device_map=device,
                               attn_implementation=args.attn_implementation, **common)
    else:
        dtype = args.dtype if args.dtype not in (None, "auto") else ("bfloat16" if device != "cpu" else "float32")
        t0 = time.perf_counter()
        model = build_random_model(args.arch, args.size, dtype, device, quantization=args.quantization,
                                   seed=args.seed)
        if args.attn_implementation:
            model.set_attn_implementation(args.attn_implementation)
        print(f"built random {args.arch}-{args.size} on {device} in {time.perf_counter() - t0:.1f} s")
        backend = TransformersBackend.from_model(model, folder, **common)
    return backend, f"random-weight {args.arch} {args.size}"


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def gpu_note() -> str:
    try:
        import torch
    except ImportError:
        return ""
    if not torch.cuda.is_available():
        return ""
    return f", peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB"


def reset_gpu_peak() -> None:
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()


def device_name(args: argparse.Namespace) -> str:
    if args.backend == "openai":
        return "remote server"
    import torch

    if (args.device or "").startswith("cpu") or not torch.cuda.is_available():
        return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
    return torch.cuda.get_device_name()


def run(args: argparse.Namespace) -> dict[str, Any]:
    batch_sizes = sorted({int(b) for b in args.batch_sizes.split(",")})
    if not batch_sizes or batch_sizes[0] < 1:
        raise ConfigError(f"--batch-sizes must be positive integers, got {args.batch_sizes!r}")
    t0 = time.perf_counter()
    backend, what = build_backend(args, max(batch_sizes))
    print(f"loaded {what} in {time.perf_counter() - t0:.1f} s on {device_name(args)}")
    print(f"backend: {json.dumps(backend.describe(), default=str)}")
    pool = [decision_request(args.views, args.view_size, args.new_tokens, seed) for seed in range(max(batch_sizes))]
    first = backend.generate(pool[:1])[0]  # warm-up: kernels, caches, allocator
    print(f"decision: {args.views} views of {args.view_size[0]}x{args.view_size[1]}, {first.prompt_tokens} prompt "
          f"tokens, {first.completion_tokens} generated (asked {args.new_tokens}); warm-up "
          f"{first.latency.preprocess_s + first.latency.generate_s:.3f} s")
    report: dict[str, Any] = {"what": what, "device": device_name(args), "backend": backend.describe(),
                              "views": args.views, "view_size": list(args.view_size), "new_tokens": args.new_tokens,
                              "prompt_tokens": first.prompt_tokens, "batches": {}}

    singles, pre = [], []
    for _ in range(args.repeats):
        gen = backend.generate(pool[:1])[0]
        singles.append(gen.latency.preprocess_s + gen.latency.generate_s)
        pre.append(gen.latency.preprocess_s)
    p50, p95 = percentile(singles, 50), percentile(singles, 95)
    report["batch1"] = {"p50_s": p50, "p95_s": p95, "preprocess_p50_s": percentile(pre, 50), "runs": singles}
    print(f"\nbatch 1, {args.repeats} decisions: p50 {p50:.3f} s  p95 {p95:.3f} s  "
          f"(preprocessing p50 {percentile(pre, 50) * 1000:.0f} ms)")

    print(f"\n{'batch':>5} {'s/batch p50':>12} {'decisions/s':>12}  notes")
    best: tuple[float, int] = (0.0, 0)
    for b in batch_sizes:
        reset_gpu_peak()
        times, tokens_ok = [], True
        try:
            backend.generate(pool[:b])  # warm-up at this shape
            for _ in range(args.repeats):
                t = time.perf_counter()
                gens = backend.generate(pool[:b])
                times.append(time.perf_counter() - t)
                tokens_ok &= all(g.completion_tokens in (None, args.new_tokens) for g in gens)
        except BackendError as exc:
            print(f"{b:>5} {'-':>12} {'-':>12}  failed: {exc}")
            report["batches"][b] = {"error": str(exc)}
            continue
        per_batch = statistics.median(times)
        rate = b / per_batch
        best = max(best, (rate, b))
        note = ("" if tokens_ok else "token count differs from --new-tokens; ") + gpu_note().lstrip(", ")
        print(f"{b:>5} {per_batch:>12.3f} {rate:>12.2f}  {note}")
        report["batches"][b] = {"s_per_batch_p50": per_batch, "decisions_per_s": rate, "runs": times}

    print()
    target_note = ("" if report["device"].startswith(("NVIDIA", "remote")) else
                   "  [CPU figures: the targets are for a 7B model on an H100]")
    verdict = "meets" if p50 <= P50_TARGET_S else "misses"
    print(f"p50 at batch 1: {p50:.3f} s vs the {P50_TARGET_S} s target: {verdict} it{target_note}")
    if best[0] > 0:
        run_s = RUN_DECISIONS / best[0]
        verdict = "meets" if run_s <= RUN_TARGET_S else "misses"
        print(f"{RUN_DECISIONS:,} decisions at batch {best[1]} ({best[0]:.2f} decisions/s): {run_s / 60:.1f} min vs "
              f"the {RUN_TARGET_S / 60:.0f} min target: {verdict} it{target_note}")
        report["projection"] = {"best_batch": best[1], "decisions_per_s": best[0], "run_min": run_s / 60}
    backend.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("transformers", "openai"), default="transformers")
    parser.add_argument("--model", help="checkpoint folder (transformers) or served model name (openai)")
    parser.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--arch", help="random weights of this family instead of --model (qwen2.5-vl, llava, ...)")
    parser.add_argument("--size", default="tiny", help="tiny, or for qwen2.5-vl 3b, 7b, 32b")
    parser.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"))
    parser.add_argument("--quantization", default="none")
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--view-size", type=parse_size, default=(1024, 512), help="WIDTHxHEIGHT")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--batch-sizes", default="1,4,16")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", help="cpu, cuda, cuda:1, auto (default: cuda when available)")
    parser.add_argument("--min-pixels", type=int)
    parser.add_argument("--max-pixels", type=int)
    parser.add_argument("--attn-implementation", help="sdpa, flash_attention_2, eager")
    parser.add_argument("--threads", type=int, help="torch CPU threads (1 avoids oversubscription on a busy machine)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.backend == "transformers" and bool(args.model) == bool(args.arch):
        parser.error("give either --model or --arch")
    print(f"command: python {' '.join(sys.argv)}")
    try:
        report = run(args)
    except CitySeekerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
