"""CitySeeker needs became the first task family without a byte of their results moving.

The digests below were made by the code before task families existed (commit f964bd1), with
the same runs: `benchmark` in process, four policies that read no image, seeds 0 and 1, the
first 4 episodes of each category. Each pair is the sha256 (first 16 hex digits) of
episodes.jsonl and of summary.json without its `config` (which holds the time of the run and
the package's version). To remake them after a deliberate change to needs' results, run the
same function under the old code (PYTHONPATH pointing at a checkout of it); the Monaco ones
again whenever the builder changes Monaco's needs tasks (as item 0 of issue 24 did).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig

POLICIES = ("random", "forward", "first-heading", "oracle")
BEFORE_FAMILIES_HK6 = {
    "random": ["653b57af373b26df", "98d3f981c16c518a"],
    "forward": ["2bc632acea004e4d", "7c20885eaed18791"],
    "first-heading": ["cf62035ae4287724", "056e2b1830cfe166"],
    "oracle": ["ec00bfa22d991074", "c32d7eba1a52604e"],
}

BEFORE_FAMILIES_MONACO = {
    "random": ["399568cd6a72952c", "e37e1d8e1ae8eb7d"],
    "forward": ["65507e992012edbb", "47c88dc391c779c9"],
    "first-heading": ["8d63bbfa053e8861", "5b9ffd5b28453532"],
    "oracle": ["6748f230f286300a", "84aabb801ef44228"],
}


def digests(data: Path, policy: str, out: Path) -> list[str]:
    config = BenchmarkConfig(data=str(data), policy=policy, seeds=[0, 1], per_category=4)
    Benchmark(config).run(out, progress=False)
    records = (out / "episodes.jsonl").read_bytes()
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    summary.pop("config")
    return [hashlib.sha256(records).hexdigest()[:16],
            hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()[:16]]


@pytest.mark.parametrize("policy", POLICIES)
def test_hongkong_records_and_summaries_are_the_bytes_made_before_families(hk6, tmp_path, policy):
    assert digests(hk6, policy, tmp_path) == BEFORE_FAMILIES_HK6[policy]


@pytest.mark.parametrize("policy", POLICIES)
def test_monaco_records_and_summaries_of_blind_policies_are_the_bytes_made_before_families(monaco_dir, tmp_path,
                                                                                       policy):
    """The Monaco world this builder makes (builder 3), as the old code scores it: remake these
    when a builder change moves its needs tasks."""
    assert digests(monaco_dir, policy, tmp_path) == BEFORE_FAMILIES_MONACO[policy]


def test_a_needs_record_names_no_family_and_reads_back_as_needs(hk6, tmp_path):
    """Records of the first family carry no `family` field (the bytes above), and a reader of
    records finds their family all the same."""
    from cityseeker_ros.core.tasks.family import family_of_record

    Benchmark(BenchmarkConfig(data=str(hk6), policy="random", limit=2)).run(tmp_path, progress=False)
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert records and all("family" not in r for r in records)
    assert {family_of_record(r).name for r in records} == {"needs"}
