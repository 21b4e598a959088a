"""A BCR ablation: every policy under every cell (a set of strategies), one benchmark run each,
and one table in the shape of the paper's Table 3 (rows: policies; columns: cells).

Each run lives in OUT/<policy-label>/<cell-label>/ and is an ordinary benchmark output folder,
so an interrupted ablation resumes through the benchmark's own resume, and any one cell can be
reported with `cityseeker report`. Every cell runs the same rounds (scored on the final round),
so cells differ only by their strategies.

Command-line syntax (YAML `cells:`/`policies:` lists take the same strings, or mappings):

- cells: `baseline,B1,oracle:B2,oracle:B2+oracle:B3:k=5;confidence_trigger=false` — a comma
  between cells, `+` between the strategies of a cell, `;` between a strategy's parameters
  (`--strategy`'s comma, which here separates cells); `baseline` is the cell with no strategies.
  The label of a cell is its text.
- policies: `[LABEL=]NAME[:KEY=VALUE,...]`, e.g. `random` or
  `small=vlm:backend=transformers,model=/models/x` (values read as JSON where they parse).
"""
from __future__ import annotations

import html
import re
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, TextIO

from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.compare import Comparison, check_same_episodes, compare, read_run, readings
from cityseeker_ros.core.evaluation.compare import tables as comparison_tables
from cityseeker_ros.core.evaluation.config import SUMMARY_FILE, BenchmarkConfig
from cityseeker_ros.core.evaluation.report.comparison import PLOT_CSS, comparison_markdown, cost_success_svg
from cityseeker_ros.core.evaluation.report.page import CSS, SYNTHETIC_TEXT
from cityseeker_ros.core.evaluation.report.tables import Table, fmt, fmt_mean_sd, render_table_html, render_table_md
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.files import write_json_atomic, write_text_atomic
from cityseeker_ros.core.infra.key_value import parse_key_value
from cityseeker_ros.core.infra.progress import say
from cityseeker_ros.core.infra.redact import redact, redact_command
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY
from cityseeker_ros.core.tasks.family import family_of_config

DEFAULT_CELLS = "baseline,B1,oracle:B2,oracle:B3,C1,C2,R1,R2,R3,oracle:B2+oracle:B3+C1+R3"
BASELINE = "baseline"
RECALLING = ("R1", "R2", "C1", "C2")  # strategies that read earlier rounds (C1/C2 also files)
DAGGER = "†"
ORACLE_NOTE = f"{DAGGER} privileged information: reads the route to the goal (an oracle strategy)."
JSON_FILE, MD_FILE, HTML_FILE = "ablation.json", "ablation.md", "ablation.html"


# ---------------------------------------------------------------- parsing

def parse_cell(text: str) -> dict[str, Any]:
    """One cell of `--cells`: `baseline`, or strategies joined by '+', parameters by ';'."""
    from cityseeker_ros.core.strategies import parse_strategy

    label = text.strip()
    if not label:
        raise ConfigError("--cells: empty cell (two commas in a row?)")
    if label == BASELINE:
        return {"label": label, "strategies": []}
    parts = [p.strip() for p in label.split("+")]
    if not all(parts):
        raise ConfigError(f"--cells: cell {label!r} has an empty strategy")
    return {"label": label, "strategies": [parse_strategy(p.replace(";", ",")) for p in parts]}


def cells_from(values: Any) -> list[dict[str, Any]]:
    """Cells from `--cells` text, or a YAML list of cell strings / {label, strategies} mappings."""
    from cityseeker_ros.core.strategies import parse_strategy

    if isinstance(values, str):
        return [parse_cell(t) for t in values.split(",")]
    if not isinstance(values, list) or not values:
        raise ConfigError(f"cells must be a non-empty list, got {values!r}")
    cells = []
    for v in values:
        if isinstance(v, str):
            cells.append(parse_cell(v))
        elif isinstance(v, dict) and isinstance(v.get("label"), str) and isinstance(v.get("strategies", []), list):
            unknown = set(v) - {"label", "strategies"}
            if unknown:
                raise ConfigError(f"cell {v['label']!r}: unknown key(s) {', '.join(sorted(unknown))}")
            cells.append({"label": v["label"], "strategies": [parse_strategy(s) if isinstance(s, str) else s
                                                              for s in v.get("strategies", [])]})
        else:
            raise ConfigError(f"a cell must be a string or a mapping with label and strategies, got {v!r}")
    return cells


_PARAM_SPLIT = re.compile(r",(?=\s*[A-Za-z_][\w.-]*=)")  # a comma that starts the next KEY=


def parse_policy(text: str) -> dict[str, Any]:
    """`[LABEL=]NAME[:KEY=VALUE,...]`: the label defaults to the policy name."""
    head, _, rest = text.strip().partition(":")
    label, eq, name = head.partition("=")
    if not eq:
        label, name = head, head
    label, name = label.strip(), name.strip()
    if not name or not label:
        raise ConfigError(f"--policy {text!r}: expected [LABEL=]NAME[:KEY=VALUE,...]")
    params = dict(parse_key_value(item, where=f"--policy {text!r}")
                  for item in filter(None, (p.strip() for p in _PARAM_SPLIT.split(rest))))
    return {"label": label, "policy": name, "params": params}


def policies_from(values: Any) -> list[dict[str, Any]]:
    """Policies from `--policy` strings, or YAML strings / {label, policy, params} mappings."""
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list) or not values:
        raise ConfigError("at least one --policy is required (on the command line or as policies: in --config)")
    out = []
    for v in values:
        if isinstance(v, str):
            out.append(parse_policy(v))
        elif isinstance(v, dict) and isinstance(v.get("policy"), str) and isinstance(v.get("params", {}), dict):
            unknown = set(v) - {"label", "policy", "params"}
            if unknown:
                raise ConfigError(f"policy {v['policy']!r}: unknown key(s) {', '.join(sorted(unknown))}")
            out.append({"label": str(v.get("label") or v["policy"]), "policy": v["policy"],
                        "params": dict(v.get("params", {}))})
        else:
            raise ConfigError(f"a policy must be a string or a mapping with policy (and label, params), got {v!r}")
    return out


def folder_name(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", label).strip("._") or "_"


def is_oracle(cell: dict[str, Any]) -> bool:
    return any(isinstance(s, dict) and s.get("oracle") for s in cell["strategies"])


def display_label(cell: dict[str, Any]) -> str:
    """The column heading: `oracle:` prefixes dropped, a dagger on cells with oracle strategies."""
    text = cell["label"].replace("oracle:", "")
    return text + DAGGER if is_oracle(cell) and DAGGER not in text else text


# ---------------------------------------------------------------- configuration

@dataclass
class AblationConfig:
    data: str
    dataset: str = "auto"
    family: str = DEFAULT_FAMILY
    policies: list[dict[str, Any]] = field(default_factory=lambda: [{"label": "random", "policy": "random",
                                                                     "params": {}}])
    cells: list[dict[str, Any]] = field(default_factory=lambda: cells_from(DEFAULT_CELLS))
    seeds: list[int] = field(default_factory=lambda: [0])
    rounds: int = 1
    max_steps: Optional[int] = None  # None: the family's (BenchmarkConfig.max_steps)
    limit: Optional[int] = None
    workers: int = 1
    batch_size: int = 1
    views: Optional[str] = None
    view_params: dict[str, Any] = field(default_factory=dict)
    max_backtracks: int = 3
    follow_hints: str = "auto"
    executor: str = "local"
    ray_address: Optional[str] = None

    def benchmark_config(self, policy: dict[str, Any], cell: dict[str, Any]) -> BenchmarkConfig:
        return BenchmarkConfig(data=str(self.data), dataset=self.dataset, family=self.family, policy=policy["policy"],
                               policy_params=dict(policy.get("params", {})), seeds=list(self.seeds),
                               max_steps=self.max_steps, limit=self.limit, workers=self.workers,
                               batch_size=self.batch_size, views=self.views, view_params=dict(self.view_params),
                               strategies=[dict(s) for s in cell["strategies"]], rounds=self.rounds,
                               max_backtracks=self.max_backtracks, follow_hints=self.follow_hints,
                               executor=self.executor, ray_address=self.ray_address)

    def runs(self) -> list[tuple[dict[str, Any], dict[str, Any], BenchmarkConfig]]:
        """Every (policy, cell, benchmark config), each validated: a bad name fails here, before any
        run starts, naming the policy and the cell."""
        if not self.policies or not self.cells:
            raise ConfigError("an ablation needs at least one policy and one cell")
        for what, items in (("policy", self.policies), ("cell", self.cells)):
            labels = [folder_name(i["label"]) for i in items]
            dupes = sorted({lab for lab in labels if labels.count(lab) > 1})
            if dupes:
                raise ConfigError(f"{what} label(s) used twice: {', '.join(dupes)}; give each a distinct label"
                                  + (" (LABEL=NAME:...)" if what == "policy" else ""))
        out = []
        for policy in self.policies:
            for cell in self.cells:
                config = self.benchmark_config(policy, cell)
                try:
                    config.validate()
                    config.check_serves()  # every cell's policy before the first cell runs
                except ConfigError as exc:
                    raise ConfigError(f"policy {policy['label']!r}, cell {cell['label']!r}: {exc}") from None
                out.append((policy, cell, config))
        return out


# ---------------------------------------------------------------- running

def run_ablation(config: AblationConfig, out_dir: Path, progress: bool = True,
                 command: Optional[str] = None, progress_stream: Optional[TextIO] = None) -> dict[str, Any]:
    """Run (or resume) every policy x cell into OUT/<policy>/<cell>/, then write ablation.json,
    ablation.md and ablation.html; returns what ablation.json holds. `progress`: a line per run
    and each run's episodes done of total, rate and time left on `progress_stream` (stderr)."""
    out, command = Path(out_dir), command or redact_command(sys.argv)
    runs = config.runs()
    results: dict[str, dict[str, Any]] = {}
    for n, (policy, cell, bench) in enumerate(runs, start=1):
        folder = out / folder_name(policy["label"]) / folder_name(cell["label"])
        step = f"[{n}/{len(runs)}] policy {policy['label']}, cell {cell['label']}"
        if progress:
            say(f"{step} -> {folder}", progress_stream)
        summary = Benchmark(bench).run(folder, progress=progress, command=command, progress_label=step,
                                       progress_stream=progress_stream)
        results.setdefault(policy["label"], {})[cell["label"]] = {
            "path": str(folder), "summary": str(folder / SUMMARY_FILE), "strategies": cell["strategies"],
            "oracle": is_oracle(cell), "synthetic": bool(summary["config"].get("synthetic")),
            "overall": summary["overall"], "overall_sd": summary.get("overall_sd", {}),
            "end_reasons": summary.get("end_reasons", {}),
        }
    baseline = next((c for c in config.cells if c["label"] == BASELINE and not c["strategies"]), None)
    if baseline is not None:
        for cells in results.values():
            base = cells[BASELINE]["overall"]
            for entry in cells.values():
                entry["delta"] = {k: v - base[k] for k, v in entry["overall"].items()
                                  if k not in ("episodes", "seeds") and isinstance(v, (int, float))
                                  and isinstance(base.get(k), (int, float))}
    doc = redact({"config": asdict(config), "out": str(out), "baseline": baseline is not None,
                  "notes": notes(config), "results": results,
                  "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "command": command})
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / JSON_FILE, doc)
    tables = ablation_tables(doc)
    side_by_side = ablation_comparison(doc)
    write_text_atomic(out / MD_FILE, build_markdown(doc, tables, side_by_side))
    write_text_atomic(out / HTML_FILE, build_html(doc, tables, side_by_side))
    return doc


def ablation_comparison(doc: dict[str, Any]) -> Comparison:
    """Every run of the ablation as one comparison (compare.py): success with its paired
    interval against the first policy's first cell, cost per step, loops and end reasons; rows
    named by policy label and cell."""
    config, results = doc["config"], doc["results"]
    runs = [read_run(Path(results[p["label"]][c["label"]]["path"]), f"{p['label']} {display_label(c)}")
            for p in config["policies"] for c in config["cells"]]
    if len(runs) > 1:
        check_same_episodes(runs)
    return compare(runs)


def notes(config: AblationConfig) -> list[str]:
    out = [f"Every cell ran {config.rounds} round(s) per episode and is scored on the final round, "
           "so cells differ only by their strategies."]
    if config.rounds == 1:
        idle = [c["label"] for c in config.cells
                if any(s.get("name") in RECALLING and not s.get("trajectories") for s in c["strategies"])]
        if idle:
            out.append(f"With 1 round, R1, R2, C1 and C2 had no earlier rounds to recall (cells: {', '.join(idle)}); "
                       "run with --rounds 2 or more, or give C1/C2 trajectories files.")
    if any(is_oracle(c) for c in config.cells):
        out.append(ORACLE_NOTE)
    return out


# ---------------------------------------------------------------- tables and documents

def _same(values: list[Any]) -> str:
    distinct = sorted(set(values))
    return fmt(distinct[0]) if len(distinct) == 1 else "–".join(fmt(v) for v in (distinct[0], distinct[-1]))


def ablation_tables(doc: dict[str, Any]) -> list[Table]:
    config, results = doc["config"], doc["results"]
    cells = config["cells"]
    heads = tuple(display_label(c) for c in cells)
    rows, deltas = [], []
    for policy in config["policies"]:
        by_cell = results[policy["label"]]
        entries = [by_cell[c["label"]] for c in cells]
        seeds = _same([e["overall"].get("seeds", 0) for e in entries])
        episodes = _same([e["overall"].get("episodes", 0) for e in entries])
        for key, name in family_of_config(config).ablation:
            rows.append((policy["label"], name,
                         *(fmt_mean_sd(e["overall"].get(key), e["overall_sd"].get(key)) for e in entries),
                         seeds, episodes))
            if doc["baseline"]:
                deltas.append((policy["label"], name, *(f"{e['delta'][key]:+.1f}" if key in e.get("delta", {}) else ""
                                                        for c, e in zip(cells, entries) if c["label"] != BASELINE)))
    seeds_note = ("Mean ± standard deviation of the per-seed means" if any(
        e["overall_sd"] for cells_ in results.values() for e in cells_.values()) else "Means (one seed)")
    family = family_of_config(config)
    better = ", ".join(f"{family.spec(k).label} {'lower' if 'lower is better' in family.spec(k).meaning else 'higher'}"
                       " is better" for k, _ in family.ablation)
    note = (f"{seeds_note}; Episodes: distinct episodes, each run once per seed. {better}. " + " ".join(doc["notes"]))
    tables = [Table("BCR ablation (rows: policies; columns: cells)", ("Policy", "Metric", *heads, "Seeds", "Episodes"),
                    tuple(rows), note)]
    if deltas:
        tables.append(Table("Change against each policy's baseline cell",
                            ("Policy", "Metric", *(h for c, h in zip(cells, heads) if c["label"] != BASELINE)),
                            tuple(deltas), "Cell mean minus the baseline cell's mean, same policy and seeds."))
    cell_rows = tuple((display_label(c), c["label"], " + ".join(_strategy_text(s) for s in c["strategies"]) or "none",
                       "yes" if is_oracle(c) else "no") for c in cells)
    tables.append(Table("Cells", ("Cell", "Given as", "Strategies", "Oracle"), cell_rows))
    run_rows = tuple((p["label"], p["policy"], display_label(c), ", ".join(f"{k} {v}" for k, v in
                                                                          results[p["label"]][c["label"]]["end_reasons"].items()),
                      results[p["label"]][c["label"]]["path"])
                     for p in config["policies"] for c in cells)
    tables.append(Table("Runs", ("Policy", "Policy name", "Cell", "End reasons", "Folder"), run_rows,
                        "Each folder is a benchmark output: `cityseeker report FOLDER` writes its full report."))
    return tables


def _strategy_text(spec: dict[str, Any]) -> str:
    params = ",".join(f"{k}={v}" for k, v in spec.items() if k not in ("name", "oracle"))
    return ("oracle:" if spec.get("oracle") else "") + str(spec.get("name")) + (f"({params})" if params else "")


def _synthetic(doc: dict[str, Any]) -> bool:
    return any(e["synthetic"] for cells in doc["results"].values() for e in cells.values())


def _subtitle(doc: dict[str, Any]) -> str:
    c = doc["config"]
    budget = "the family's" if c["max_steps"] is None else c["max_steps"]
    return (f"data {c['data']} · {len(c['policies'])} policies × {len(c['cells'])} cells · "
            f"{len(c['seeds'])} seed(s) · {c['rounds']} round(s) · step budget {budget}"
            + (f" · first {c['limit']} episodes" if c.get("limit") else "") + f" · {doc['created']}")


def build_markdown(doc: dict[str, Any], tables: list[Table], side_by_side: Optional[Comparison] = None) -> str:
    """ablation.md: the ablation's tables, then (given) every run side by side (compare.py)."""
    lines = ["# CitySeeker BCR ablation", "", _subtitle(doc), ""]
    if _synthetic(doc):
        lines += [f"> **{SYNTHETIC_TEXT}**", ""]
    body = "\n".join(render_table_md(t) for t in tables)
    if side_by_side is not None:
        body += "\n" + comparison_markdown([side_by_side])
    return "\n".join(lines) + "\n" + body


def build_html(doc: dict[str, Any], tables: list[Table], side_by_side: Optional[Comparison] = None) -> str:
    """ablation.html: the tables, then (given) the comparison's tables and cost-against-success plot."""
    e = html.escape
    banner = f'<div class="banner">⚠ {e(SYNTHETIC_TEXT)}</div>' if _synthetic(doc) else ""
    compared = ""
    if side_by_side is not None:
        compared = ("".join(render_table_html(t) for t in comparison_tables(side_by_side)[:2])
                    + f"<h2>Cost against success</h2>{cost_success_svg(side_by_side)}"
                    + "".join(f'<p class="note">{e(line)}</p>' for line in readings(side_by_side)))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>CitySeeker BCR ablation</title><style>{CSS}{PLOT_CSS}</style></head><body>\n"
            f"<h1>CitySeeker BCR ablation</h1><p class=\"note\">{e(_subtitle(doc))}</p>\n{banner}\n"
            + "".join(render_table_html(t) for t in tables) + compared + "</body></html>\n")
