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

`--compare-switches` times the local backend's fast-path switches (fast_decode.py) instead, on a
recorded trace: a two-call VLM run on a world (the Monaco demo world, built when missing; or
`--trace` for one recorded before), replayed request by request through the backend with every
switch off, each alone and all on, side by side in one process. Each reply is forced to
--new-tokens tokens (end-of-sequence ignored), and the tokens of every variant are compared with
the switches-off ones:

    python benchmarks/decision_latency.py --arch qwen2.5-vl --size tiny --threads 1 --compare-switches
    python benchmarks/decision_latency.py --arch qwen2.5-vl --size 7b --dtype bfloat16 --compare-switches
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
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


SWITCHES: dict[str, dict[str, Any]] = {
    "off": {},
    "vision cache": {"vision_cache_mb": 2048},
    "prefix cache": {"prefix_cache_entries": 4},
    "static cache": {"static_cache": True},
    "compiled": {"static_cache": True, "compile_decode": True},
    "all on": {"vision_cache_mb": 2048, "prefix_cache_entries": 4, "static_cache": True, "compile_decode": True},
}


def chosen_switches(compile_decode: bool) -> dict[str, dict[str, Any]]:
    """The variants to time: without the compiled ones when compilation is left out."""
    chosen = {n: s for n, s in SWITCHES.items() if compile_decode or not s.get("compile_decode")}
    chosen["all on"] = {**SWITCHES["all on"], "compile_decode": compile_decode}
    return chosen


def switch_backends(args: argparse.Namespace) -> tuple[Callable[[dict[str, Any]], Backend], str, Path]:
    """A maker of backends with given switches (the same weights; replies forced to their request's
    length), what they run, and the folder holding the checkpoint's tokenizer."""
    import torch

    from cityseeker_ros.core.agents.vlm.fast_decode import FastSwitches
    from cityseeker_ros.core.agents.vlm.random_models import build_random_checkpoint, build_random_model
    from cityseeker_ros.core.agents.vlm.transformers_backend import TransformersBackend

    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    common = {"quantization": args.quantization, "ignore_eos": True, "min_pixels": args.min_pixels,
              "max_pixels": args.max_pixels, "max_batch_size": 1}
    if args.model or args.size == "tiny":
        folder = Path(args.model) if args.model else Path(tempfile.mkdtemp(prefix=f"random-{args.arch}-tiny-"))
        if not args.model:
            build_random_checkpoint(args.arch, folder, size="tiny", seed=args.seed)
        def make(switches: dict[str, Any]) -> Backend:
            return make_backend("transformers", model=str(folder), dtype=args.dtype or "auto", device_map=device,
                                attn_implementation=args.attn_implementation, **common, **switches)
        return make, f"checkpoint {args.model}" if args.model else f"random-weight {args.arch} tiny", folder
    folder = Path(tempfile.mkdtemp(prefix=f"random-{args.arch}-{args.size}-"))
    build_random_checkpoint(args.arch, folder, size=args.size, seed=args.seed)
    dtype = args.dtype if args.dtype not in (None, "auto") else ("bfloat16" if device != "cpu" else "float32")
    model = build_random_model(args.arch, args.size, dtype, device, quantization=args.quantization, seed=args.seed)
    def make_around(switches: dict[str, Any]) -> Backend:
        return TransformersBackend.from_model(model, folder, switches=FastSwitches(**switches), **common)
    return make_around, f"random-weight {args.arch} {args.size}", folder


def compare_switches(args: argparse.Namespace) -> dict[str, Any]:
    from cityseeker_ros.core.agents.vlm.replay import differing, replay
    from cityseeker_ros.core.agents.vlm.trace import load_trace
    from cityseeker_ros.core.evaluation.decision_trace import record_decision_trace, requests_per_decision

    make, what, folder = switch_backends(args)
    backends = {name: make(switches) for name, switches in chosen_switches(args.compile).items()}
    print(f"loaded {what} on {device_name(args)}, variants: {', '.join(backends)}")
    t0 = time.perf_counter()
    if args.trace:
        requests = load_trace(args.trace)
        sizes = requests_per_decision(Path(args.trace) / "run" / "episodes.jsonl")
        requests = requests[:sum(sizes)]
    else:
        world = Path(args.world)
        if not (world / "scene.json").is_file():
            from cityseeker_ros.core.worlds.build import build_world

            print(f"building the Monaco world into {world} (a few minutes, once)")
            build_world("monaco", world, name="monaco", stream=sys.stdout)
        out = Path(tempfile.mkdtemp(prefix="decision-trace-"))
        tiny = folder if args.size == "tiny" or args.model else build_tiny(args)  # the replies do not matter
        requests, sizes = record_decision_trace(world, tiny, out, args.trace_steps)
        print(f"recorded the trace into {out} in {time.perf_counter() - t0:.0f} s")
    requests = [replace(r, max_new_tokens=args.new_tokens) for r in requests]
    images = [im for r in requests for im in r.images]
    distinct = len({(im.shape, im.tobytes()) for im in images})
    print(f"trace: {len(sizes)} decisions, {len(requests)} requests ({len(requests) / len(sizes):.2f} per decision), "
          f"{len(images)} images ({distinct} distinct), {args.new_tokens} tokens forced per reply")
    variants = replay(requests, backends)
    off = variants[0]
    report: dict[str, Any] = {"what": what, "device": device_name(args), "decisions": len(sizes),
                              "requests": len(requests), "images": len(images), "distinct_images": distinct,
                              "new_tokens": args.new_tokens, "variants": {}}
    print("\nseconds per decision (p50, mean), then per request (means): preprocessing (template, images, "
          "tokens), vision tower, prefill, decode")
    print(f"{'variant':<13} {'p50':>6} {'mean':>6} {'preproc':>8} {'vision':>7} {'prefill':>8} {'decode':>7} "
          f"{'vision hits':>11} {'prefix reused':>13}  tokens")
    means: dict[str, float] = {}
    compiling_any = {i for variant in variants for i in variant.compiling()}
    steady = [d for d in per_request_decisions(sizes) if not compiling_any & set(d)]  # the same for every variant
    for variant in variants:
        compiling = set(variant.compiling())
        per = [sum(variant.seconds[i] for i in decision) for decision in steady]
        means[variant.name] = statistics.fmean(per)
        wrong = differing(off, variant)
        phases = {p: variant.phase_mean(p, [i for d in steady for i in d])
                  for p in ("preprocess", "vision", "prefill", "decode")}
        hits, share = variant.vision_hit_rate(), variant.prefix_share()
        shown = lambda v, pct=False: "-" if v is None else f"{v:.0%}" if pct else f"{v:.3f}"  # noqa: E731
        print(f"{variant.name:<13} {statistics.median(per):>6.3f} {means[variant.name]:>6.3f} "
              f"{shown(phases['preprocess']):>8} {shown(phases['vision']):>7} {shown(phases['prefill']):>8} "
              f"{shown(phases['decode']):>7} "
              f"{shown(hits, True):>11} {shown(share, True):>13}  "
              f"{'same' if not wrong else f'{len(wrong)} of {len(requests)} differ'}"
              + (f"; compiling: {len(compiling)} requests, {sum(variant.seconds[i] for i in compiling):.1f} s, "
                 f"left out" if compiling else ""))
        report["variants"][variant.name] = {"p50_s": statistics.median(per), "mean_s": means[variant.name],
                                            **{f"{p}_mean_s": v for p, v in phases.items()},
                                            "vision_hit_rate": hits, "prefix_share": share,
                                            "differing_requests": wrong, "compiling_s": sum(
                                                variant.seconds[i] for i in compiling)}
    for backend in backends.values():
        backend.close()
    speedup = means["off"] / means["all on"]
    saved = vision_saved(off, variants[-1], [i for d in steady for i in d])
    same = not report["variants"]["all on"]["differing_requests"]
    print(f"\nrun estimate ({RUN_DECISIONS:,} decisions at the trace's {len(requests) / len(sizes):.2f} requests "
          f"each, batch 1): off {RUN_DECISIONS * means['off'] / 60:.0f} min, all on "
          f"{RUN_DECISIONS * means['all on'] / 60:.0f} min (target {RUN_TARGET_S / 60:.0f} min on a GPU)")
    if saved is not None:
        print(f"vision work saved: {saved:.0%} of the switches-off seconds of preprocessing and vision tower")
    short = short_reply_tokens(folder)
    shorter = [replace(r, max_new_tokens=short) for r in requests]
    pair = replay(shorter, {"off": make({}), "all on": make(chosen_switches(args.compile)["all on"])})
    compiled_short = {i for v in pair for i in v.compiling()}
    steady_short = [d for d in per_request_decisions(sizes) if not compiled_short & set(d)]
    short_means = [statistics.fmean(sum(v.seconds[i] for i in d) for d in steady_short) for v in pair]
    print(f"short replies ({short} tokens: the short schema's example reply in this tokenizer, end-of-sequence "
          f"included): off {short_means[0]:.3f} s, all on {short_means[1]:.3f} s per decision "
          f"({means['off'] / short_means[1]:.1f}x the {args.new_tokens}-token switches-off figure; run estimate "
          f"{RUN_DECISIONS * short_means[1] / 60:.0f} min)")
    print(f"speed-up {speedup:.1f}x (switches on vs off, {'same tokens' if same else 'tokens differ'})")
    report.update(speedup=speedup, same_tokens=same, vision_saved=saved, short_reply_tokens=short,
                  short_off_mean_s=short_means[0], short_on_mean_s=short_means[1])
    return report


def short_reply_tokens(folder: Path) -> int:
    """The tokens of a typical short reply (the choice prompt's example) in the checkpoint's tokenizer."""
    from transformers import AutoTokenizer

    from cityseeker_ros.core.agents.vlm.prompts import SHORT_CHOICE_EXAMPLE

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return len(tokenizer(SHORT_CHOICE_EXAMPLE)["input_ids"]) + 1


def build_tiny(args: argparse.Namespace) -> Path:
    """A tiny checkpoint of the family, to record the trace with (a random full-size model's replies
    are as meaningless, and far slower on the CPU that records)."""
    from cityseeker_ros.core.agents.vlm.random_models import build_random_checkpoint

    folder = Path(tempfile.mkdtemp(prefix=f"random-{args.arch}-tiny-"))
    return build_random_checkpoint(args.arch, folder, size="tiny", seed=args.seed)


def per_request_decisions(sizes: list[int]) -> list[list[int]]:
    """The request indices of each decision."""
    out, start = [], 0
    for n in sizes:
        out.append(list(range(start, start + n)))
        start += n
    return out


def vision_saved(off: Any, on: Any, among: list[int]) -> float | None:
    """The share of the seconds before prefill (preprocessing: the template, the images and the tokens;
    and the vision tower) that the switches saved: the images' share of it is what the cache skips."""
    before = (off.phase_mean("vision", among) or 0) + (off.phase_mean("preprocess", among) or 0)
    after = (on.phase_mean("vision", among) or 0) + (on.phase_mean("preprocess", among) or 0)
    return None if not before else 1 - after / before


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
    parser.add_argument("--compare-switches", action="store_true",
                        help="time the fast-path switches on a recorded two-call trace (see above)")
    parser.add_argument("--trace", type=Path, help="with --compare-switches: a trace folder this benchmark recorded "
                        "before (printed as it records; it holds run/episodes.jsonl)")
    parser.add_argument("--trace-steps", type=int, default=50, help="decisions in the recorded trace")
    parser.add_argument("--world", default="worlds/monaco", help="the world the trace is recorded on")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                        help="include the compiled decode step (torch.compile: minutes to compile on a CPU)")
    args = parser.parse_args(argv)
    if args.backend == "transformers" and bool(args.model) == bool(args.arch):
        parser.error("give either --model or --arch")
    print(f"command: python {' '.join(sys.argv)}")
    try:
        report = compare_switches(args) if args.compare_switches else run(args)
    except CitySeekerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
