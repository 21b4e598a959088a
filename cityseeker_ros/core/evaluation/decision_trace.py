"""A real run's VLM requests, to replay: a serial two-call benchmark of the VLM policy on a world,
its requests written by the recording backend (core/agents/vlm/trace.py), and how many requests
each decision sent (from the run's own records), so that a replay can be summed per decision.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cityseeker_ros.core.agents.vlm.backend import GenerationRequest
from cityseeker_ros.core.agents.vlm.trace import load_trace
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError

STEPS_PER_EPISODE = 10


def requests_per_decision(episodes_jsonl: Path | str) -> list[int]:
    """How many requests each decision of a serial run sent (its `raw` replies), in order."""
    counts = []
    for number, line in enumerate(Path(episodes_jsonl).read_text(encoding="utf-8").splitlines(), 1):
        try:
            counts += [len(d["raw"]) for d in json.loads(line)["decisions"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{episodes_jsonl} line {number}: no decisions with raw replies ({exc})") from None
    return counts


def record_decision_trace(world: Path | str, checkpoint: Path | str, out: Path | str, decisions: int,
                          policy: dict[str, Any] | None = None,
                          backend: dict[str, Any] | None = None) -> tuple[list[GenerationRequest], list[int]]:
    """At least `decisions` decisions of the VLM policy (two-call, no retries unless `policy` says)
    on `world`'s rendered views, through a transformers backend on `checkpoint` (extra `backend`
    parameters), recorded into `out`: the first `decisions` decisions' requests and their sizes."""
    out = Path(out)
    params = {"mode": "two-call", "max_new_tokens": 16, "retries": 0, **(policy or {}), "backend": "recording",
              "backend_params": {"inner": "transformers", "model": str(checkpoint), "device_map": "cpu",
                                 **(backend or {}), "trace_out": str(out)}}
    config = BenchmarkConfig(data=str(world), policy="vlm", policy_params=params, views="rendered",
                             limit=-(-decisions // STEPS_PER_EPISODE) + 1, max_steps=STEPS_PER_EPISODE)
    Benchmark(config).run(out / "run", progress=False)
    sizes = requests_per_decision(out / "run" / "episodes.jsonl")[:decisions]
    if len(sizes) < decisions:
        raise ConfigError(f"decision trace: the run on {world} made {len(sizes)} decisions, fewer than {decisions}")
    return load_trace(out)[:sum(sizes)], sizes
