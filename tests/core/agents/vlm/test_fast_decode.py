"""The transformers backend's fast path (vision cache, prefix reuse, static cache, compiled decode step)
against `generate`, on a trace recorded from a real two-call run of the VLM policy on the packaged
Monaco world: every switch gives the tokens greedy `generate` gives. A tiny random Qwen2.5-VL through
the real loading code; the CPU stands in for the GPU (the compiled step compiles for the CPU)."""
from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from cityseeker_ros.core.agents.vlm.backend import GenerationRequest, Message, make_backend  # noqa: E402
from cityseeker_ros.core.agents.vlm.fast_decode import STATIC_BUCKET  # noqa: E402
from cityseeker_ros.core.agents.vlm.replay import differing, replay  # noqa: E402
from cityseeker_ros.core.evaluation.benchmark import Benchmark  # noqa: E402
from cityseeker_ros.core.evaluation.config import BenchmarkConfig  # noqa: E402
from cityseeker_ros.core.evaluation.decision_trace import record_decision_trace  # noqa: E402
from cityseeker_ros.core.infra.errors import ConfigError  # noqa: E402

TOKENS = 12  # forced per reply (end-of-sequence ignored): every reply runs the whole decode loop
ALL_ON = {"vision_cache_mb": 64, "prefix_cache_entries": 4, "static_cache": True}


@pytest.fixture(scope="module")
def trace(monaco_dir, tiny_checkpoints, tmp_path_factory):
    """50 decisions of a two-call run (stop prompt on the views, so both calls of a step show them)."""
    requests, sizes = record_decision_trace(monaco_dir, tiny_checkpoints["qwen2.5-vl"],
                                            tmp_path_factory.mktemp("trace"), 50, policy={"stop_view": "views"})
    return [GenerationRequest(r.messages, max_new_tokens=TOKENS) for r in requests], sizes


def backend(tiny_checkpoints, **switches):
    return make_backend("transformers", model=str(tiny_checkpoints["qwen2.5-vl"]), dtype="float32",
                        device_map="cpu", ignore_eos=True, **switches)


def test_all_switches_give_the_tokens_of_generate_over_a_50_decision_trace(trace, tiny_checkpoints):
    requests, sizes = trace
    assert len(sizes) == 50 and len(requests) == sum(sizes) >= 100  # a stop and a choice call per step
    off, on = replay(requests, {"off": backend(tiny_checkpoints), "on": backend(tiny_checkpoints, **ALL_ON)})
    assert differing(off, on) == []
    assert all(g.completion_tokens == TOKENS and len(g.token_ids) == TOKENS for g in on.generations)
    assert [g.text for g in off.generations] == [g.text for g in on.generations]
    # The choice call shows the stop call's views, and walks revisit nodes: most images are reused.
    assert on.vision_hit_rate() > 0.5 and on.prefix_share() > 0.05
    assert off.vision_hit_rate() is None and all(g.cache is None for g in off.generations)
    first = on.generations[0].cache
    assert first.vision_hits == 0 and first.vision_misses == len(requests[0].images) and first.prefix_tokens == 0


@pytest.mark.parametrize("switches", [{"vision_cache_mb": 64}, {"prefix_cache_entries": 2}, {"static_cache": True}],
                         ids=["vision", "prefix", "static"])
def test_each_switch_alone_gives_the_tokens_of_generate(trace, tiny_checkpoints, switches):
    requests, sizes = trace
    head = requests[:sum(sizes[:8])]
    off, on = replay(head, {"off": backend(tiny_checkpoints), "on": backend(tiny_checkpoints, **switches)})
    assert differing(off, on) == []


def test_the_compiled_decode_step_gives_the_tokens_of_generate_and_compiles_once(trace, tiny_checkpoints):
    """torch.compile on the CPU (the GPU's case compiles the same graph for CUDA): the first call
    compiles and says so; later prompts in the same length bucket reuse it."""
    requests, _ = trace
    head = requests[:6]
    off, on = replay(head, {"off": backend(tiny_checkpoints),
                            "on": backend(tiny_checkpoints, **ALL_ON, compile_decode=True)})
    assert differing(off, on) == []
    buckets = [-(-(g.prompt_tokens + TOKENS) // STATIC_BUCKET) for g in on.generations]
    assert on.compiling() == [buckets.index(b) for b in dict.fromkeys(buckets)]  # once per length bucket


def test_a_revisit_hits_and_a_full_cache_drops_the_least_recently_used_image(tiny_checkpoints):
    rng = np.random.default_rng(3)
    a, b, c, d = (rng.integers(0, 256, (56, 84, 3), dtype=np.uint8) for _ in range(4))

    def ask(*images):
        content = []
        for i, image in enumerate(images):
            content += [f"View {i}:", image]
        return GenerationRequest((Message("system", ("Choose.",)), Message("user", (*content, "Which?"))),
                                 max_new_tokens=2)

    roomy = backend(tiny_checkpoints, vision_cache_mb=1)
    hits = [roomy.generate([r])[0].cache.vision_hits for r in (ask(a, b), ask(b, a), ask(c), ask(a, c))]
    assert hits == [0, 2, 0, 2]
    cache = roomy._fast.vision  # type: ignore[union-attr]
    per_entry = cache.bytes // len(cache)
    cache.max_bytes = 2 * per_entry  # from now on it holds two
    roomy.generate([ask(b)])  # b becomes the most recently used; a and c the least
    roomy.generate([ask(d)])  # d goes in: the two least recently used make room
    assert len(cache) == 2 and cache.evictions == 2 and cache.bytes <= cache.max_bytes
    assert roomy.generate([ask(b)])[0].cache.vision_hits == 1
    assert roomy.generate([ask(a)])[0].cache.vision_hits == 0  # a was dropped


def test_a_short_benchmark_keeps_its_records_with_the_switches_on(monaco_dir, tiny_checkpoints, tmp_path):
    def run(name, **switches):
        policy = {"backend": "transformers", "model": str(tiny_checkpoints["qwen2.5-vl"]), "max_new_tokens": 6,
                  "stop_view": "views", "backend_params": {"device_map": "cpu", **switches}}
        config = BenchmarkConfig(data=str(monaco_dir), policy="vlm", policy_params=policy, views="rendered",
                                 view_params={"width": 96, "height": 72}, limit=2, max_steps=3)
        Benchmark(config).run(tmp_path / name, progress=False)
        return [json.loads(x) for x in (tmp_path / name / "episodes.jsonl").read_text().splitlines()]

    off, on = run("off"), run("on", **ALL_ON)

    def without_timing(records):
        out = []
        for record in records:
            record = {k: v for k, v in record.items() if k not in ("wall_s", "latency_s")}
            record["decisions"] = [{k: v for k, v in d.items() if k not in ("latency_s", "cache")}
                                   for d in record["decisions"]]
            out.append(record)
        return out

    assert without_timing(on) == without_timing(off)
    decisions = [d for r in on for d in r["decisions"]]
    assert all({"vision", "prefill", "decode"} <= set(d["latency_s"]) for d in decisions)
    assert sum(d["cache"]["vision_hits"] for d in decisions) > 0
    assert all("cache" not in d for r in off for d in r["decisions"])
    summary = json.loads((tmp_path / "on" / "summary.json").read_text())["decisions"]
    assert summary["cache"]["vision_hits"] == sum(d["cache"]["vision_hits"] for d in decisions)
    assert {"vision", "prefill", "decode"} <= set(summary["latency_s"])


@pytest.mark.parametrize("switches, message", [
    ({"vision_cache_mb": -1}, "vision_cache_mb must be a number from 0 (off) to 1e6, got -1"),
    ({"prefix_cache_entries": 1.5}, "prefix_cache_entries must be an integer from 0 (off) to 64, got 1.5"),
    ({"static_cache": "yes"}, "static_cache must be true or false, got 'yes'"),
    ({"compile_decode": True}, "compile_decode needs static_cache true"),
])
def test_bad_switches_are_named_before_loading(tiny_checkpoints, switches, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        backend(tiny_checkpoints, **switches)


def test_the_backend_describes_its_switches(tiny_checkpoints):
    assert backend(tiny_checkpoints).describe()["fast_path"] == "off"
    assert backend(tiny_checkpoints, **ALL_ON).describe()["fast_path"] == {**ALL_ON, "compile_decode": False}


def test_a_family_the_fast_path_cannot_serve_is_refused_at_start_up(tiny_checkpoints):
    with pytest.raises(ConfigError, match="work on qwen2_vl, qwen2_5_vl checkpoints; this one is llava"):
        make_backend("transformers", model=str(tiny_checkpoints["llava"]), device_map="cpu", static_cache=True)


def test_generate_reports_its_phases_without_the_switches(tiny_checkpoints):
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (56, 84, 3), dtype=np.uint8)
    request = GenerationRequest((Message("user", ("View:", image, "Which?")),), max_new_tokens=4)
    latency = backend(tiny_checkpoints).generate([request])[0].latency
    assert latency.vision_s > 0 and latency.prefill_s > 0 and latency.decode_s > 0
    assert latency.vision_s + latency.prefill_s + latency.decode_s == pytest.approx(latency.generate_s, rel=0.2)


def test_a_reply_ends_at_end_of_sequence_as_generate_ends_it(tiny_checkpoints):
    """The random model never chooses its real end-of-sequence token, so the third token it would
    write is made the end-of-sequence token: both paths stop there, counting it."""
    from cityseeker_ros.core.agents.vlm.fast_decode import FastSwitches
    from cityseeker_ros.core.agents.vlm.transformers_backend import TransformersBackend

    rng = np.random.default_rng(5)
    request = GenerationRequest((Message("user", ("View:", rng.integers(0, 256, (56, 84, 3), dtype=np.uint8),
                                                  "Which?")),), max_new_tokens=10)
    loaded = backend(tiny_checkpoints)
    third = loaded.generate([request])[0].token_ids[2]
    model = loaded._model
    model.generation_config.eos_token_id = third
    path = tiny_checkpoints["qwen2.5-vl"]
    off = TransformersBackend.from_model(model, path).generate([request])[0]
    on = TransformersBackend.from_model(model, path, switches=FastSwitches(**ALL_ON)).generate([request])[0]
    assert off.token_ids == on.token_ids and len(on.token_ids) == on.completion_tokens == 3
    assert on.token_ids[-1] == third and off.text == on.text
