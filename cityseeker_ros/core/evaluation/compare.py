"""Runs side by side: one row per output folder, over the same episodes, and one line that
reads them.

A policy's numbers mean something only beside a baseline's on the same episodes (`make demo`
puts `ocr-embed` beside `random`, `sign-oracle` and `oracle`). Rows over different episode sets
or different data would compare unlike things, so they are refused with the runs that differ
named. With chance (random) and the ceiling (oracle) among the rows, `reading` says where the
agent stands between them, and with perfect reading (sign-oracle) whether seeing or deciding
failed.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.evaluation.report.page import load_episodes, load_summary
from cityseeker_ros.core.evaluation.report.tables import Table, fmt_mean_sd, metric_header
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.family import TaskFamily, family_of_config


def _run_name(out: Path, summary: dict) -> str:
    cfg = summary.get("config", {})
    marks = " [ORACLE]" if cfg.get("privileged") else ""
    return f"{cfg.get('policy', '?')}{marks} ({out.name})"


@dataclass(frozen=True)
class Run:
    out: Path
    summary: dict[str, Any]
    episodes: frozenset[str]

    @property
    def policy(self) -> str:
        return str(self.summary.get("config", {}).get("policy", "?"))

    @property
    def family(self) -> TaskFamily:
        return family_of_config(self.summary.get("config", {}))

    def mean_sd(self, key: str) -> tuple[Optional[float], Optional[float]]:
        return self.summary["overall"].get(key), (self.summary.get("overall_sd") or {}).get(key)


def load_runs(outs: Sequence[Path]) -> list[Run]:
    """Benchmark output folders (summary.json and episodes.jsonl each) over the same episodes
    and data, or a ConfigError naming the two that differ."""
    if len(outs) < 2:
        raise ConfigError("compare: give at least two run folders")
    runs, files = [], []
    for out in outs:
        out = Path(out)
        summary = load_summary(out / "summary.json")
        episodes = frozenset(r["episode_id"] for r in load_episodes(out / "episodes.jsonl"))
        runs.append(Run(out, summary, episodes))
        files.append({Path(p).name: h for p, h in summary.get("config", {}).get("data_files", {}).items()})
    first = runs[0]
    for run in runs[1:]:
        if run.family.name != first.family.name:
            raise ConfigError(f"compare: {run.out} ran {run.family.name} and {first.out} {first.family.name}: "
                              "their measures differ; compare runs of one task family")
    for run, data in zip(runs[1:], files[1:]):
        if run.episodes != first.episodes:
            only = sorted(run.episodes ^ first.episodes)
            raise ConfigError(f"compare: {run.out} and {first.out} ran different episodes ({len(only)} in one only, "
                              f"e.g. {', '.join(only[:3])}); run both with the same --data, --per-category and "
                              "--limit")
        if data != files[0]:
            raise ConfigError(f"compare: {run.out} and {first.out} ran on different data files (sha256 differs)")
    return runs


def comparison(outs: Sequence[Path]) -> Table:
    """The comparison table of benchmark output folders."""
    return comparison_table(load_runs(outs))


def comparison_table(runs: Sequence[Run]) -> Table:
    family = runs[0].family
    columns = family.headline
    rows = []
    for run in runs:
        out, summary, episodes = run.out, run.summary, run.episodes
        overall, sd = summary["overall"], summary.get("overall_sd") or {}
        seeds = len(summary.get("config", {}).get("seeds") or [0])
        ends = summary.get("end_reasons", {})
        rows.append((_run_name(out, summary), f"{len(episodes)} x {seeds}",
                     *(fmt_mean_sd(overall.get(k), sd.get(k)) for k in columns),
                     ", ".join(f"{n} {reason}" for reason, n in ends.items())))
    header = ("Run", "Episodes x seeds", *(metric_header(family, k) for k in columns), "End reasons")
    lower = [family.spec(k).label for k in columns if "lower is better" in family.spec(k).meaning]
    note = ("Same episodes and data in every row. "
            + (f"Lower is better for {' and '.join(lower)}; " if lower else "")
            + "mean ± SD over seeds where a run has several.")
    return Table("Side by side", header, tuple(rows), note)


def reading(runs: Sequence[Run]) -> Optional[str]:
    """One line: where the first agent stands between chance and the ceiling on the family's success
    measure (chance, ceiling and perfect perception are each family's: random, oracle and sign-oracle
    for needs; question-random, question-oracle and question-sign-oracle for questions), and, with
    a perfect-reading row, whether seeing or deciding failed. None without chance and ceiling
    rows, or without an agent that is neither."""
    family = runs[0].family
    chance, ceiling, perfect_reading = family.chance, family.oracle, family.perfect_perception
    metric = family.success_metric
    label = family.spec(metric).label
    by_policy = {run.policy: run for run in runs}
    agents = [run for run in runs if run.policy not in (chance, ceiling, perfect_reading)]
    if chance not in by_policy or ceiling not in by_policy or not agents:
        return None
    agent = agents[0]
    (a, _), (c, c_sd), (o, _) = (r.mean_sd(metric) for r in (agent, by_policy[chance], by_policy[ceiling]))
    if a is None or c is None or o is None:
        return None
    one_episode = 100.0 / max(len(agent.episodes), 1)
    if abs(a - c) <= max(c_sd or 0.0, 0.0) or abs(a - c) < one_episode:
        place = f"at chance ({chance} {fmt_mean_sd(c, c_sd)})"
    else:
        place = f"{'above' if a > c else 'below'} chance ({chance} {fmt_mean_sd(c, c_sd)})"
    share = 100.0 * (a - c) / (o - c) if o != c else 0.0
    line = (f"Reading: {agent.policy} reaches {label} {a:.1f}, {place}, {share:.0f}% of the way to the "
            f"ceiling ({ceiling} {o:.1f})")
    perfect = by_policy.get(perfect_reading) if perfect_reading else None
    r = perfect.mean_sd(metric)[0] if perfect else None
    if r is None:
        return line + "."
    if r - a >= one_episode:
        verdict = f"perfect reading lifts the same decisions to {r:.1f}: seeing fails first"
    else:
        verdict = f"perfect reading ({perfect_reading}) reaches {r:.1f}: deciding fails, not seeing"
    return f"{line}; {verdict}."
