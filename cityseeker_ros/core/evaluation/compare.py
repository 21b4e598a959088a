"""Runs side by side over the same episodes: success with a confidence interval, cost, loops
and end reasons per row, and one reading line per agent.

A policy's numbers mean something only beside other rows on the same episodes (`make demo`
puts `ocr-embed` beside `random`, `sign-oracle` and `oracle`). Rows over different episode sets
or different data would compare unlike things, so they are refused with the runs that differ
named. Each row shows the family's success measure with a 95% interval from a paired bootstrap
over episodes and seeds (bootstrap.py), and its difference from the first row with the same
draws; the calls, tokens and seconds per step its policy recorded (step_costs.py); how its walks
looped (loops.py: one backtrack is no loop, VLN-MME's persistent looping is); and how episodes
ended. A reading line per agent places it between chance and the ceiling where those rows are
present, or against the first row otherwise. Runs of several task families are compared family
by family, each against its own first row.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.evaluation.agent_settings import CONNECTION
from cityseeker_ros.core.evaluation.bootstrap import LEVEL, Interval, percentile_interval, resampled_means
from cityseeker_ros.core.evaluation.loops import LOOP_CLASSES, loop_shares
from cityseeker_ros.core.evaluation.report.page import load_episodes, load_summary
from cityseeker_ros.core.evaluation.report.tables import Table, fmt, fmt_mean_sd, metric_header
from cityseeker_ros.core.evaluation.step_costs import RunCost, run_cost
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.family import TaskFamily, family_of_config

WIDTH = 100  # the printed tables stay within this many columns where they can


@dataclass(frozen=True)
class Run:
    """One benchmark output folder: its summary and episode records; `label` names its row
    where the caller knows better than the settings (an ablation's policy label and cell)."""

    out: Path
    summary: dict[str, Any]
    records: tuple[dict[str, Any], ...] = ()
    label: Optional[str] = None

    @property
    def config(self) -> dict[str, Any]:
        return self.summary.get("config") or {}

    @property
    def policy(self) -> str:
        return str(self.config.get("policy", "?"))

    @property
    def family(self) -> TaskFamily:
        return family_of_config(self.config)

    @property
    def seeds(self) -> list[Any]:
        given = self.config.get("seeds")
        return list(given) if given else sorted({r.get("seed", 0) for r in self.records}, key=str)

    @property
    def episodes(self) -> frozenset[str]:
        return frozenset(str(r["episode_id"]) for r in self.records)

    @property
    def scored(self) -> list[dict[str, Any]]:
        """The records of the run's seeds (a folder may keep others from an earlier run)."""
        seeds = set(self.seeds)
        return [r for r in self.records if r.get("seed", 0) in seeds]

    def mean_sd(self, key: str) -> tuple[Optional[float], Optional[float]]:
        return self.summary["overall"].get(key), (self.summary.get("overall_sd") or {}).get(key)


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def run_name(run: Run) -> str:
    """The row's name: the label, or the policy with the switches the run set (its
    `policy_params`, not where the model is served), its strategies and rounds; oracles marked."""
    cfg = run.config
    if run.label:
        name = run.label
    else:
        switches = cfg.get("switches") or {}
        given = {k: switches.get(k, v) for k, v in (cfg.get("policy_params") or {}).items() if k not in CONNECTION}
        parts = [run.policy, *(f"{k}={_value_text(v)}" for k, v in sorted(given.items()))]
        strategies = [("oracle:" if s.get("oracle") else "") + str(s.get("name")) for s in cfg.get("strategies") or []
                      if isinstance(s, dict)]
        if strategies:
            parts.append("with " + "+".join(strategies))
        if int(cfg.get("rounds") or 1) > 1:
            parts.append(f"rounds={cfg['rounds']}")
        name = " ".join(parts)
    return name + (" [ORACLE]" if cfg.get("privileged") else "")


def row_names(runs: Sequence[Run]) -> list[str]:
    """Each run's name; names two runs share get the run's folder added."""
    names = [run_name(r) for r in runs]
    return [f"{n} ({r.out.name})" if names.count(n) > 1 else n for n, r in zip(names, runs)]


def read_run(out: Path, label: Optional[str] = None) -> Run:
    out = Path(out)
    summary = load_summary(out / "summary.json")
    return Run(out, summary, tuple(load_episodes(out / "episodes.jsonl")), label)


def check_same_episodes(runs: Sequence[Run]) -> None:
    """Runs of one family over the same episodes and data files, else a ConfigError naming the two."""
    first = runs[0]

    def files(run: Run) -> dict[str, Any]:
        return {Path(p).name: h for p, h in (run.config.get("data_files") or {}).items()}
    for run in runs[1:]:
        if run.family.name != first.family.name:
            raise ConfigError(f"compare: {run.out} ran {run.family.name} and {first.out} {first.family.name}: "
                              "their measures differ; compare runs of one task family")
    for run in runs[1:]:
        if run.episodes != first.episodes:
            only = sorted(run.episodes ^ first.episodes)
            raise ConfigError(f"compare: {run.out} and {first.out} ran different episodes ({len(only)} in one only, "
                              f"e.g. {', '.join(only[:3])}); run both with the same --data, --per-category and "
                              "--limit")
        if files(run) != files(first):
            raise ConfigError(f"compare: {run.out} and {first.out} ran on different data files (sha256 differs)")


def load_runs(outs: Sequence[Path]) -> list[Run]:
    """Benchmark output folders (summary.json and episodes.jsonl each) of one family over the same
    episodes and data, or a ConfigError naming the two that differ."""
    if len(outs) < 2:
        raise ConfigError("compare: give at least two run folders")
    runs = [read_run(out) for out in outs]
    check_same_episodes(runs)
    return runs


def load_run_groups(outs: Sequence[Path]) -> list[list[Run]]:
    """Folders of one or several task families: one group per family, in the order the folders
    first name it, each of two runs or more over the same episodes."""
    if len(outs) < 2:
        raise ConfigError("compare: give at least two run folders")
    groups: dict[str, list[Run]] = {}
    for out in outs:
        run = read_run(out)
        groups.setdefault(run.family.name, []).append(run)
    for name, runs in groups.items():
        if len(runs) < 2:
            raise ConfigError(f"compare: {runs[0].out} is the only {name} run; give two runs or more of each "
                              "task family")
        check_same_episodes(runs)
    return list(groups.values())


# ---------------------------------------------------------------- the comparison


def success_values(run: Run, keys: Sequence[tuple[Any, str]], metric: str) -> np.ndarray:
    """(episodes, seeds) values of the success measure, episodes in `keys` order; a missing
    (episode, seed) record is refused, naming it."""
    seeds = run.seeds
    index = {(r.get("city"), str(r["episode_id"]), r.get("seed", 0)): r for r in run.scored}
    values = np.empty((len(keys), len(seeds)))
    for i, (city, episode) in enumerate(keys):
        for j, seed in enumerate(seeds):
            record = index.get((city, episode, seed))
            if record is None:
                raise ConfigError(f"compare: {run.out / 'episodes.jsonl'} has no record of episode {episode} "
                                  f"seed {seed}; finish the run (rerun its command) before comparing")
            try:
                values[i, j] = float(record["metrics"][metric])
            except (KeyError, TypeError, ValueError):
                raise ConfigError(f"compare: {run.out / 'episodes.jsonl'}: episode {episode} seed {seed}: field "
                                  f"'metrics.{metric}' missing or not a number") from None
    return values


@dataclass(frozen=True)
class Row:
    """One run as the comparison shows it."""

    number: int
    name: str
    run: Run
    success: Interval
    difference: Optional[Interval]  # against the first row; None for the first row
    cost: RunCost
    loops: dict[str, float]  # % of episode records per loop class
    end_reasons: dict[str, int]


@dataclass(frozen=True)
class Comparison:
    family: TaskFamily
    rows: tuple[Row, ...]
    # (rows, resamples): each row's success under each bootstrap resample, the same draws for
    # every row, so any two rows' paired difference is read from here.
    samples: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.empty((0, 0)))

    @property
    def label(self) -> str:
        return self.family.spec(self.family.success_metric).label


def compare(runs: Sequence[Run]) -> Comparison:
    """The comparison of runs of one family over the same episodes (load_runs checked them)."""
    family = runs[0].family
    metric = family.success_metric
    keys = sorted({(r.get("city"), str(r["episode_id"])) for r in runs[0].scored}, key=lambda k: (str(k[0]), k[1]))
    if not keys:
        raise ConfigError(f"compare: {runs[0].out / 'episodes.jsonl'} holds no episode records")
    values = [success_values(run, keys, metric) for run in runs]
    samples = resampled_means(values)
    means = [float(v.mean()) for v in values]
    names = row_names(runs)
    rows = tuple(Row(n + 1, names[n], run, percentile_interval(means[n], samples[n]),
                     None if n == 0 else percentile_interval(means[n] - means[0], samples[n] - samples[0]),
                     run_cost(run.scored), loop_shares(run.scored),
                     _count(r.get("end_reason", "unknown") for r in run.scored))
                 for n, run in enumerate(runs))
    return Comparison(family, rows, samples)


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- tables


def signed(value: Optional[float]) -> str:
    text = fmt(value)
    return text if not text or text.startswith("-") else f"+{text}"


def interval_text(interval: Optional[Interval], difference: bool = False) -> str:
    if interval is None:
        return ""
    f = signed if difference else fmt
    return f"{f(interval.estimate)} [{f(interval.low)}, {f(interval.high)}]"


def _per_step(value: Optional[float], decimals: int) -> str:
    return "" if value is None else fmt(value, decimals)


def tokens_text(cost: RunCost) -> str:
    if cost.tokens_in_per_step is None and cost.tokens_out_per_step is None:
        return ""
    return f"{_per_step(cost.tokens_in_per_step, 0) or '?'}/{_per_step(cost.tokens_out_per_step, 0) or '?'}"


def success_table(comparison: Comparison) -> Table:
    """Success with its interval, the difference from row 1, and cost per step."""
    family, label = comparison.family, comparison.label
    unit = family.spec(family.success_metric).unit
    rows = tuple((str(r.number), r.name, f"{len(r.run.episodes)} x {len(r.run.seeds)}",
                  interval_text(r.success), interval_text(r.difference, difference=True),
                  _per_step(r.cost.calls_per_step, 2), tokens_text(r.cost), _per_step(r.cost.seconds_per_step, 2))
                 for r in comparison.rows)
    pct = f"{LEVEL:.0%}"
    header = ("#", "Run", "Ep x seeds", f"{label} ({unit}) [{pct} CI]", "Δ vs #1 [CI]", "Calls/step",
              "Tokens in/out", "s/step")
    note = (f"{family.title}: {label} is the success measure. {pct} intervals: paired bootstrap over episodes and "
            f"seeds (the same draws for every row), seeded, so the same records give the same intervals; Δ is "
            "the row minus row 1, with its interval. Cost per step as the policy recorded it: model calls, "
            "tokens in/out, seconds; blank where it records none. Same episodes and data in every row.")
    return Table(f"Success and cost: {family.name}", header, rows, note)


def loops_table(comparison: Comparison) -> Table:
    """How walks looped (loops.py) and how episodes ended, per row."""
    rows = tuple((str(r.number), r.name, "/".join(fmt(r.loops[k], 0) for k in LOOP_CLASSES),
                  ", ".join(f"{n} {reason}" for reason, n in r.end_reasons.items())) for r in comparison.rows)
    note = ("Loops: % of episode records whose walk returned to no visited node / exactly once (one "
            "backtrack, not a loop) / twice or more (a repeated cycle) / ended in 4 or more returns in a "
            "row (persistent looping, VLN-MME Section 4.3 and Appendix E.2); docs/benchmark.md.")
    return Table(f"Loops and end reasons: {comparison.family.name}",
                 ("#", "Run", "Loops % none/backtrack/cycle/persistent", "End reasons"), rows, note)


def comparison_table(runs: Sequence[Run]) -> Table:
    """Every headline measure of the family, one row per run (mean ± SD over seeds)."""
    family = runs[0].family
    columns = family.headline
    rows = []
    for name, run in zip(row_names(runs), runs):
        overall, sd = run.summary["overall"], run.summary.get("overall_sd") or {}
        rows.append((name, f"{len(run.episodes)} x {len(run.seeds)}",
                     *(fmt_mean_sd(overall.get(k), sd.get(k)) for k in columns),
                     ", ".join(f"{n} {reason}" for reason, n in run.summary.get("end_reasons", {}).items())))
    header = ("Run", "Episodes x seeds", *(metric_header(family, k) for k in columns), "End reasons")
    return Table("Side by side", header, tuple(rows), _measures_note(family))


def _measures_note(family: TaskFamily) -> str:
    lower = [family.spec(k).label for k in family.headline if "lower is better" in family.spec(k).meaning]
    return ("Same episodes and data in every row. " + (f"Lower is better for {' and '.join(lower)}; " if lower else "")
            + "mean ± SD over seeds where a run has several.")


def measures_table(comparison: Comparison) -> Table:
    """comparison_table turned on its side (a row per measure), so many measures fit the width:
    columns are the rows' names where they fit in WIDTH, else their numbers."""
    family, rows = comparison.family, comparison.rows
    cells = [[fmt_mean_sd(*r.run.mean_sd(k)) for r in rows] for k in family.headline]
    labels = [metric_header(family, k) for k in family.headline]
    widths = [max(len(r.name), *(len(c[i]) for c in cells)) for i, r in enumerate(rows)]
    fits = max(map(len, labels)) + sum(w + 3 for w in widths) + 4 <= WIDTH
    header = ("Measure", *(r.name if fits else f"#{r.number}" for r in rows))
    return Table(f"The family's measures: {family.name}", header,
                 tuple((label, *c) for label, c in zip(labels, cells)), _measures_note(family))


def tables(comparison: Comparison) -> list[Table]:
    return [success_table(comparison), loops_table(comparison), measures_table(comparison)]


# ---------------------------------------------------------------- reading


def readings(comparison: Comparison) -> list[str]:
    """One line per agent (every row but the family's chance, ceiling and perfect-perception
    policies): its success with its interval; between chance and the ceiling where both are
    rows (at chance when the paired interval of the difference holds 0), else against row 1;
    with a perfect-perception row, whether seeing or deciding failed; its cost and persistent loops."""
    family, label = comparison.family, comparison.label
    fixed = (family.chance, family.oracle, family.perfect_perception)
    by_policy = {r.run.policy: r for r in comparison.rows}
    chance, ceiling = by_policy.get(family.chance), by_policy.get(family.oracle)
    perfect = by_policy.get(family.perfect_perception) if family.perfect_perception else None
    lines = []
    for row in comparison.rows:
        if row.run.policy in fixed:
            continue
        line = f"Reading: {row.name} reaches {label} {interval_text(row.success)}"
        if chance is not None and ceiling is not None:
            diff = _difference(comparison, row, chance)
            c_mean, c_sd = chance.run.mean_sd(family.success_metric)
            place = ("at chance" if not diff.excludes_zero()
                     else f"{'above' if diff.estimate > 0 else 'below'} chance")
            o, c, a = ceiling.success.estimate, chance.success.estimate, row.success.estimate
            share = 100.0 * (a - c) / (o - c) if o != c else 0.0
            line += (f", {place} ({chance.run.policy} {fmt_mean_sd(c_mean, c_sd)}; difference "
                     f"{interval_text(diff, difference=True)}), {share:.0f}% of the way to the ceiling "
                     f"({ceiling.run.policy} {fmt(o)})")
            if perfect is not None:
                lift = _difference(comparison, perfect, row)
                r = fmt(perfect.success.estimate)
                line += (f"; perfect reading lifts the same decisions to {r}: seeing fails first"
                         if lift.excludes_zero() and lift.estimate > 0 else
                         f"; perfect reading ({perfect.run.policy}) reaches {r}: deciding fails, not seeing")
        elif row.difference is not None:
            first = comparison.rows[0]
            told = "told apart" if row.difference.excludes_zero() else "not told apart on these episodes"
            line += f"; against {first.name} {interval_text(row.difference, difference=True)}, {told}"
        cost = [f"{fmt(row.cost.calls_per_step, 1)} calls" if row.cost.calls_per_step is not None else "",
                f"{fmt((row.cost.tokens_in_per_step or 0) + (row.cost.tokens_out_per_step or 0), 0)} tokens"
                if row.cost.tokens_in_per_step is not None or row.cost.tokens_out_per_step is not None else "",
                f"{fmt(row.cost.seconds_per_step, 2)} s" if row.cost.seconds_per_step is not None else ""]
        cost = [c for c in cost if c]
        if cost:
            line += f"; {', '.join(cost)} per step"
        if row.loops["persistent"]:
            line += f"; {fmt(row.loops['persistent'], 0)}% of episodes end looping"
        lines.append(line + ".")
    return lines


def _difference(comparison: Comparison, row: Row, reference: Row) -> Interval:
    """`row` minus `reference`, paired over the same draws as the comparison's intervals."""
    a, b = row.number - 1, reference.number - 1
    return percentile_interval(row.success.estimate - reference.success.estimate,
                               comparison.samples[a] - comparison.samples[b])


def reading(runs: Sequence[Run]) -> Optional[str]:
    """The reading lines of runs of one family, joined; None when no row is an agent."""
    lines = readings(compare(runs))
    return "\n".join(lines) if lines else None


def comparison(outs: Sequence[Path]) -> Table:
    """The measures table of benchmark output folders (one family)."""
    return comparison_table(load_runs(outs))
