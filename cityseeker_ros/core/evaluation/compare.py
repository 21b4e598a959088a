"""Runs side by side: one row per output folder, over the same episodes.

A policy's numbers mean something only beside a baseline's on the same episodes (`make demo`
puts `ocr-embed` beside `random`). Rows over different episode sets or different data would
compare unlike things, so they are refused with the runs that differ named.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cityseeker_ros.core.evaluation.report.page import load_episodes, load_summary
from cityseeker_ros.core.evaluation.report.tables import Table, fmt_mean_sd, metric_header
from cityseeker_ros.core.infra.errors import ConfigError

COLUMNS = ("tce", "tcp50", "tcc", "spl", "osr", "spd", "dtw_per_ref_m", "as")


def _run_name(out: Path, summary: dict) -> str:
    cfg = summary.get("config", {})
    marks = " [ORACLE]" if cfg.get("privileged") else ""
    return f"{cfg.get('policy', '?')}{marks} ({out.name})"


def comparison(outs: Sequence[Path]) -> Table:
    """The comparison table of benchmark output folders (summary.json and episodes.jsonl each)."""
    if len(outs) < 2:
        raise ConfigError("compare: give at least two run folders")
    runs = []
    for out in outs:
        out = Path(out)
        summary = load_summary(out / "summary.json")
        episodes = {r["episode_id"] for r in load_episodes(out / "episodes.jsonl")}
        files = summary.get("config", {}).get("data_files", {})
        runs.append((out, summary, episodes, {Path(p).name: h for p, h in files.items()}))
    first_out, _, first_episodes, first_files = runs[0]
    for out, _, episodes, files in runs[1:]:
        if episodes != first_episodes:
            only = sorted(episodes ^ first_episodes)
            raise ConfigError(f"compare: {out} and {first_out} ran different episodes ({len(only)} in one only, "
                              f"e.g. {', '.join(only[:3])}); run both with the same --data, --per-category and "
                              "--limit")
        if files != first_files:
            raise ConfigError(f"compare: {out} and {first_out} ran on different data files (sha256 differs)")
    rows = []
    for out, summary, episodes, _ in runs:
        overall, sd = summary["overall"], summary.get("overall_sd") or {}
        seeds = len(summary.get("config", {}).get("seeds") or [0])
        ends = summary.get("end_reasons", {})
        rows.append((_run_name(out, summary), f"{len(episodes)} x {seeds}",
                     *(fmt_mean_sd(overall.get(k), sd.get(k)) for k in COLUMNS),
                     ", ".join(f"{n} {reason}" for reason, n in ends.items())))
    header = ("Run", "Episodes x seeds", *(metric_header(k) for k in COLUMNS), "End reasons")
    note = ("Same episodes and data in every row. Lower is better for SPD and dtw_per_ref_m; "
            "mean ± SD over seeds where a run has several.")
    return Table("Side by side", header, tuple(rows), note)
