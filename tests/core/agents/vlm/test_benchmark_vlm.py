"""The VLM policy inside the real benchmark: a tiny random Qwen2.5-VL loaded through the real
transformers path, deciding on rendered Monaco views, in lockstep batches. Its replies are
noise, so this checks the plumbing (records, parse-error rate, errors), not the skill."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.cli import main
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError

VIEWS = {"width": 96, "height": 72}


def _config(monaco_dir, **kw) -> BenchmarkConfig:
    base = dict(data=str(monaco_dir), policy="vlm", views="rendered", view_params=VIEWS, limit=3, max_steps=3)
    return BenchmarkConfig(**{**base, **kw})


def test_tiny_qwen_runs_a_benchmark_with_decision_records(monaco_dir, tiny_checkpoints, tmp_path):
    params = {"backend": "transformers", "model": str(tiny_checkpoints["qwen2.5-vl"]), "max_new_tokens": 8,
              "mode": "single-call"}
    serial = Benchmark(_config(monaco_dir, policy_params=params)).run(tmp_path / "serial", progress=False)
    batched = Benchmark(_config(monaco_dir, policy_params=params, batch_size=3)).run(tmp_path / "batched",
                                                                                     progress=False)
    d = serial["decisions"]
    assert d["count"] >= 3 and 0.0 <= d["parse_error_rate"] <= 100.0
    assert {"preprocess", "generate", "parse", "total"} <= set(d["latency_s"])
    records = [json.loads(x) for x in (tmp_path / "serial" / "episodes.jsonl").read_text().splitlines()]
    step = records[0]["decisions"][0]
    hashes = step["prompt_hash"] if isinstance(step["prompt_hash"], list) else [step["prompt_hash"]]
    assert all(len(h) == 16 for h in hashes) and len(step["raw"]) == len(hashes) == step["retries"] + 1
    assert "decision" in step and "fallback" in step
    assert all(r["end_reason"] != "error" for r in records)
    # Greedy decoding: the lockstep batch decides exactly as one episode at a time.
    strip = lambda rs: [{k: v for k, v in r.items() if k != "decisions"} for r in rs]  # noqa: E731
    batched_records = [json.loads(x) for x in (tmp_path / "batched" / "episodes.jsonl").read_text().splitlines()]
    assert strip(batched_records) == strip(records) and batched["decisions"]["count"] == d["count"]


def test_an_unreachable_server_ends_episodes_with_error_and_the_run_goes_on(monaco_dir, tmp_path):
    params = {"backend": "openai", "model": "m", "backend_params": {
        "base_url": "http://127.0.0.1:9/v1", "check_on_start": False, "retries": 0, "timeout_s": 2}}
    summary = Benchmark(_config(monaco_dir, policy_params=params)).run(tmp_path / "run", progress=False)
    assert summary["end_reasons"] == {"error": 3} and summary["overall"]["episodes"] == 3


@pytest.mark.parametrize("extra, message", [
    (["--backend", "transformers", "--model", "/no/such/model"], "/no/such/model"),
    (["--backend", "nope"], "unknown VLM backend 'nope'; known: openai, recording, transformers"),
    (["--backend", "openai", "--model", "m", "--backend-param", "base_url=http://127.0.0.1:9/v1",
      "--backend-param", "retries=0", "--backend-param", "timeout_s=2"], "127.0.0.1:9"),
])
def test_bad_configuration_fails_at_start_up(monaco_dir, tiny_checkpoints, tmp_path, capsys, extra, message):
    args = ["benchmark", "--data", str(monaco_dir), "--policy", "vlm", "--limit", "1", "--out", str(tmp_path / "o"),
            "--no-progress", *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("cityseeker: error:") and message in err, err
    assert not (tmp_path / "o" / "episodes.jsonl").exists()


def test_unknown_quantisation_is_named(monaco_dir, tiny_checkpoints):
    params = {"backend": "transformers", "model": str(tiny_checkpoints["llava"]),
              "backend_params": {"quantization": "int3-magic"}}
    with pytest.raises(ConfigError, match="unknown quantization 'int3-magic'; known: .*quanto-int8"):
        Benchmark(_config(monaco_dir, policy_params=params))
