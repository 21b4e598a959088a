"""Turn a benchmark output folder into report.html and report.md.

A run's numbers mean little on their own: the report puts them beside the solvable ceiling
and the paper's published rows, breaks them down by category, city and difficulty, says why
episodes failed (failures.py), and draws a few trajectories to show how the policy
succeeds or fails; a step viewer (steps.py) replays single episodes. The HTML is
self-contained (inline CSS, SVG and the viewer's own script and data, no external URLs) so
it can be archived or mailed with the run; report.md carries the same tables for diffs and chat.
"""
from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from cityseeker_ros.core.evaluation.failures import END_LABELS, succeeded
from cityseeker_ros.core.evaluation.report import failures as report_failures
from cityseeker_ros.core.evaluation.report import steps as report_steps
from cityseeker_ros.core.evaluation.report.maps import (
    CityIndex,
    Geometry,
    GraphLoader,
    geometry_from_graph,
    geometry_from_record,
    trajectory_svg,
)
from cityseeker_ros.core.evaluation.report.tables import (
    CEILING_NOTE,
    Table,
    fmt,
    fmt_mean_sd,
    metric_header,
    render_table_html,
    render_table_md,
)
from cityseeker_ros.core.evaluation.report.views import CSS as VIEWS_CSS
from cityseeker_ros.core.evaluation.report.views import ViewLoader, views_html
from cityseeker_ros.core.infra.errors import CitySeekerError, DataError
from cityseeker_ros.core.infra.files import write_text_atomic
from cityseeker_ros.core.infra.jsonfile import read_json_object
from cityseeker_ros.core.infra.text import loads_json
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.tasks.episode import CATEGORY_NAMES, DIFFICULTIES
from cityseeker_ros.core.tasks.family import TaskFamily, family_of_config


def load_summary(path: Path) -> dict:
    try:
        summary = loads_json(path.read_bytes())
    except FileNotFoundError:
        raise DataError(path, "not found; run `cityseeker benchmark` into this folder first") from None
    except json.JSONDecodeError as exc:
        raise DataError(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("overall"), dict):
        raise DataError(path, "expected an object with an 'overall' object", field="overall")
    return summary


def load_episodes(path: Path) -> list[dict]:
    """One record per line; a missing file gives no records (the report says so)."""
    if not path.exists():
        return []
    records = []
    with path.open("rb") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = loads_json(line)
            except json.JSONDecodeError as exc:
                raise DataError(path, f"not valid JSON ({exc.msg})", record=lineno) from None
            if not isinstance(record, dict) or "episode_id" not in record:
                raise DataError(path, "expected an object with an episode_id", record=lineno,
                                field="episode_id")
            records.append(record)
    return records


# ---------------------------------------------------------------- the tables

def run_table(summary: dict, n_records: int, budgets: Sequence[int] = ()) -> Table:
    """What was run: enough to reproduce it or tell two reports apart. `budgets`: the records'
    budgets used, where the family sets each episode's own (the run's cap applied)."""
    cfg = summary.get("config", {})
    seeds = cfg.get("seeds")
    rows = [
        ("Policy", str(cfg.get("policy", "?"))),
        ("Dataset", str(cfg.get("dataset", "?"))),
        ("Task family", str(cfg.get("family") or "needs")),
        ("Data", str(cfg.get("data", "?"))),
        ("Seeds", ", ".join(map(str, seeds)) if seeds else "?"),
        ("Episodes", fmt(summary["overall"].get("episodes"))),
        ("Episode records", str(n_records)),
        ("Step budget", budget_text(cfg.get("max_steps"), budgets)),
        ("Episode limit", fmt(cfg.get("limit")) or "none"),
        ("Synthetic world", "yes" if cfg.get("synthetic") else "no"),
        ("Package version", str(cfg.get("package_version", "?"))),
        ("Created", str(cfg.get("created", "?"))),
        ("Command", str(cfg.get("command", ""))),
    ]
    rows += [(f"Data file {Path(p).name}", f"sha256 {h}")
             for p, h in sorted(cfg.get("data_files", {}).items())]
    return Table("Run", ("Field", "Value"), tuple(rows))


def budget_text(cap: object, budgets: Sequence[int]) -> str:
    """The budget the episodes had: the run's cap, or the family's own per episode under it."""
    if not budgets:
        return fmt(cap)
    lo, hi = min(budgets), max(budgets)
    if lo == hi == cap:
        return str(lo)
    spread = str(lo) if lo == hi else f"{lo}-{hi}"
    return f"{spread} (each episode's own, capped at {fmt(cap)})"


def overall_table(summary: dict) -> Table:
    family = family_of_config(summary.get("config", {}))
    overall, sd = summary["overall"], summary.get("overall_sd") or {}
    n_seeds = overall.get("seeds") or len(summary.get("config", {}).get("seeds") or [])
    rows = tuple((m.label, m.unit, fmt_mean_sd(overall.get(m.key), sd.get(m.key)), m.meaning)
                 for m in family.metrics)
    note = f"Mean ± standard deviation over {n_seeds} seeds." if sd else ""
    return Table(f"Overall: {family.title} ({family.seed_paper})", ("Metric", "Unit", "Value", "Meaning"), rows,
                 note)


def world_facts_table(summary: dict) -> Table | None:
    """What the family says about the world beside every result (a landmark count, the
    distribution of shortest routes); none for a family that states nothing."""
    facts = summary.get("config", {}).get("task_family", {}).get("world") or {}
    if not facts:
        return None
    rows = tuple((f"{city}: {key}", fmt(value) if not isinstance(value, (dict, list)) else json.dumps(value))
                 for city, block in sorted(facts.items()) for key, value in block.items())
    return Table("The world's task facts", ("Fact", "Value"), rows)


def comparison_table(summary: dict) -> Table | None:
    cfg = summary.get("config", {})
    family = family_of_config(cfg)
    if not family.paper:
        return None
    ours, keys = summary["overall"], family.paper_metrics
    header = ("Run", *(metric_header(family, k) for k in keys), "Source")
    rows = [(f"This run ({cfg.get('policy', '?')})", *(fmt(ours.get(k)) for k in keys), "summary.json")]
    rows += [(r.name, *(fmt(r.metrics.get(k)) for k in keys), f"paper {r.source}") for r in family.paper]
    caveat = (" This run is on a synthetic world: the paper's rows are for orientation only."
              if cfg.get("synthetic") else "")
    note = (f"{family.report_note} Paper rows: {family.paper_scope}; blank where the paper gives no value; "
            f"paper values rounded to 1 decimal.{caveat}").strip()
    return Table("Comparison with the paper", header, tuple(rows), note)


def _ordered(groups: Mapping[str, dict], preferred: Sequence[str]) -> list[str]:
    """Known names in their natural order first, then any others alphabetically."""
    known = [g for g in preferred if g in groups]
    return known + sorted(g for g in groups if g not in preferred)


def breakdown_table(family: TaskFamily, title: str, first_column: str, groups: Mapping[str, dict],
                    preferred: Sequence[str] = (),
                    paper: Mapping[str, Mapping[str, float]] | None = None) -> Table:
    """One row per group; `paper` adds published per-group success columns beside ours."""
    paper = paper or {}
    success = family.spec(family.success_metric).label
    header = (first_column, "Episodes", *(metric_header(family, k) for k in family.breakdown),
              *(f"Paper {name} {success} (%)" for name in paper))
    rows = tuple((name, fmt(groups[name].get("episodes")),
                  *(fmt(groups[name].get(k)) for k in family.breakdown),
                  *(fmt(values.get(name)) for values in paper.values()))
                 for name in _ordered(groups, preferred))
    note = "Paper columns: Table 2 subcategory TCP; blank where the paper has no such category." \
        if paper else ""
    return Table(title, header, rows, note)


def end_reason_table(episodes: Sequence[dict]) -> Table:
    counts: dict[str, int] = {r: 0 for r in END_LABELS}  # others (answered) only where they occur
    for rec in episodes:
        reason = str(rec.get("end_reason", "unknown"))
        counts[reason] = counts.get(reason, 0) + 1
    total = max(len(episodes), 1)
    rows = tuple((r, str(n), fmt(100.0 * n / total)) for r, n in counts.items())
    note = (f"Over all {len(episodes)} episode records (every seed)." if episodes
            else "No episode records: episodes.jsonl is missing or empty.")
    return Table("How episodes ended", ("End reason", "Episodes", "Share (%)"), rows, note)


def judge_table(out_dir: Path) -> Table | None:
    """The LLM judge's marks of a question run (`cityseeker judge`), when it was asked."""
    path = out_dir / "judge.json"
    if not path.is_file():
        return None
    doc = read_json_object(path)
    models = "; ".join(json.dumps(m, sort_keys=True) for m in doc.get("models", []))
    rows = (("Mean mark (1-5)", fmt(doc.get("judge_mean"), 2)), ("Answers marked", fmt(doc.get("judged"))),
            ("Unreadable replies", fmt(doc.get("unreadable"))), ("Judge model", models),
            ("Prompt sha256", str(doc.get("prompt_sha256", ""))))
    return Table("LLM judge (CityEQA's 1-5 answer quality)", ("Measure", "Value"), rows,
                 "CityEQA reports 4.94 for people and 3.00 for its best agent (PMA); its judge agrees with people at "
                 "a Spearman correlation of 0.85. Records with marks: judge.jsonl.")


def decisions_table(summary: dict) -> Table | None:
    """Unusable replies, retries and latency of the policy's decisions, for policies that log them.

    A seed agent (core/agents/seeds) makes several named calls per step and never retries: a
    reply it cannot read is dropped and the step goes on (the action still chosen when the
    choosing call was read), so its rate is of unusable replies over calls, not of steps with
    any unusable call. The vlm policy retries once, then takes its fallback action: its rate is
    of decisions that fell back."""
    d = summary.get("decisions")
    if not d:
        return None
    agents = d.get("agents", {})
    calls = sum(int(a.get("calls") or 0) for a in agents.values())
    failed = sum(int(a.get("failed_calls") or 0) for a in agents.values())
    single = d["count"] - sum(int(a.get("steps") or 0) for a in agents.values())  # decisions of one reply
    rows = [("Decisions", str(d["count"]))]
    if calls:
        rows.append(("Unusable replies: calls whose reply could not be read (%)",
                     f"{fmt(100.0 * failed / calls, 2)} ({failed} of {calls})"))
    if single > 0 or not agents:
        rows += [("Parse errors: fell back (%)", fmt(d["parse_error_rate"], 2)),
                 ("Retried once (%)", fmt(d["retry_rate"], 2)), ("Repaired replies", str(d["repaired"]))]
    rows += [("Replies cut at the length limit", str(d.get("cut_replies", 0))),
             ("Episodes ended by a backend error", str(d["episodes_ended_by_error"]))]
    rows += [(f"Latency {key}: p50 / p95 (s)", f"{v['p50']:.3f} / {v['p95']:.3f}")
             for key, v in d.get("latency_s", {}).items()]
    for agent, a in agents.items():  # agents with named calls per step (core/agents/seeds)
        rows += [(f"{agent}: calls / tokens in / tokens out / seconds per step",
                  f"{fmt(a['calls_per_step'], 2)} / {fmt(a['tokens_in_per_step'], 1)} / "
                  f"{fmt(a['tokens_out_per_step'], 1)} / {fmt(a['seconds_per_step'], 3)}"),
                 (f"{agent}: calls by role (unreadable)",
                  ", ".join(f"{role} {n}" for role, n in a["roles"].items()) + f" ({a['failed_calls']})")]
    notes = []
    if calls:
        notes.append("An unusable reply is a call whose reply could not be read; the seed agents do not retry: "
                     "the agent goes on without that reply (its counted fallback), and a step whose choosing "
                     "call was read keeps its action.")
    if single > 0 or not agents:
        notes.append("A fallback is a decision whose reply could not be parsed even after one retry "
                     "(the paper reports 6.3% format errors for Qwen2.5-VL-32B).")
    return Table("Decisions", ("Measure", "Value"), tuple(rows), " ".join(notes))


def trajectory_table(selected: Sequence[dict]) -> Table:
    rows = tuple((r["episode_id"], str(r.get("city", "")), str(r.get("category", "")),
                  str(r.get("end_reason", "")), "success" if _succeeded(r) else "failure", fmt(r.get("steps")))
                 for r in selected)
    return Table("Drawn trajectories", ("Episode", "City", "Category", "End reason", "Outcome", "Steps"), rows,
                 "Plots are in report.html; success is each family's own (TCP50 for needs).")


# ---------------------------------------------------------------- trajectory selection

def _succeeded(record: dict) -> bool:
    return succeeded(record)


def _spread(items: Sequence[dict], k: int) -> list[dict]:
    """k items evenly spaced over a sorted list, so picks span cities and categories."""
    if k <= 0:
        return []
    if k >= len(items):
        return list(items)
    if k == 1:
        return [items[0]]
    step = (len(items) - 1) / (k - 1)
    return [items[round(i * step)] for i in range(k)]


def select_trajectories(episodes: Sequence[dict], seed: object, k: int) -> list[dict]:
    """A deterministic mix of successes and failures (about half each) from one seed."""
    pool = sorted((r for r in episodes if r.get("seed") == seed), key=lambda r: r["episode_id"])
    wins = [r for r in pool if _succeeded(r)]
    losses = [r for r in pool if not _succeeded(r)]
    n_wins = min(len(wins), k // 2)
    n_losses = min(len(losses), k - n_wins)
    n_wins = min(len(wins), k - n_losses)
    chosen = _spread(wins, n_wins) + _spread(losses, n_losses)
    return sorted(chosen, key=lambda r: r["episode_id"])


def first_seed(summary: dict, episodes: Sequence[dict]) -> object:
    seeds = summary.get("config", {}).get("seeds")
    if seeds:
        return seeds[0]
    return min((r.get("seed", 0) for r in episodes), default=0)


# ---------------------------------------------------------------- geometry

# ---------------------------------------------------------------- trajectories section

def load_graphs(summary: dict, graph_loader: GraphLoader | None) -> tuple[dict[str, StreetGraph], str]:
    """The run's street graphs, or none and the reason why (shown in the report)."""
    if graph_loader is None:
        return {}, "no street graph loader was given"
    try:
        return graph_loader(summary.get("config", {})), ""
    except CitySeekerError as exc:
        return {}, f"the street graphs could not be loaded: {exc}"


def episode_geometry(record: dict, graphs: Mapping[str, StreetGraph],
                     cache: dict[str, CityIndex], margin_m: float = 60.0) -> Geometry | None:
    city = str(record.get("city", ""))
    if city in graphs:
        if city not in cache:
            cache[city] = CityIndex.build(graphs[city])
        geo = geometry_from_graph(record, cache[city], margin_m)
        if geo is not None:
            return geo
    return geometry_from_record(record)


def _card(record: dict, svg: str) -> str:
    e = html.escape
    m = record.get("metrics", {})
    ok = _succeeded(record)
    badge = f'<span class="badge {"ok" if ok else "bad"}">{"success" if ok else "failure"}</span>'
    facts = (f"{e(str(record.get('city', '')))} · {e(str(record.get('category', '')))} · "
             f"{e(str(record.get('difficulty', '')))} · ended: "
             f"{e(str(record.get('end_reason', '')))} after {e(fmt(record.get('steps')))} steps"
             f" · SPD {e(fmt(m.get('spd')))} m")
    return (f'<figure class="card"><figcaption><b>{e(record["episode_id"])}</b> {badge}'
            f'<div class="facts">{facts}</div>'
            f'<div class="instr">“{e(str(record.get("instruction", "")))}”</div></figcaption>'
            f"{svg}</figure>")


def trajectories_html(selected: Sequence[dict], graphs: Mapping[str, StreetGraph],
                      graph_problem: str, seed: object) -> str:
    e = html.escape
    head = "<h2>Trajectories</h2>\n"
    if not selected:
        return head + '<p class="note warn">No episode records for the first seed: nothing to draw.</p>'
    cache: dict[str, CityIndex] = {}
    cards, missing = [], []
    for rec in selected:
        geo = episode_geometry(rec, graphs, cache)
        if geo is None:
            missing.append(rec["episode_id"])
        else:
            cards.append(_card(rec, trajectory_svg(geo, f"Trajectory of {rec['episode_id']}")))
    notes = []
    if missing:
        why = graph_problem or "the episodes' nodes are not in the loaded street graphs"
        notes.append(f'<p class="note warn">Trajectory plots omitted for {len(missing)} episode(s) '
                     f'({e(", ".join(missing))}): {e(why)}, and the records carry no coordinates.</p>')
    intro = (f'<p class="note">Seed {e(str(seed))}: a deterministic mix of successes (TCP50) and '
             "failures, sorted by episode id. Thin grey lines: streets near the episode.</p>")
    return head + intro + "".join(notes) + f'<div class="cards">{"".join(cards)}</div>\n'


# ---------------------------------------------------------------- the documents

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1120px;
color:#1d1d1f;padding:0 16px;line-height:1.4}
h1{margin:0 0 4px}h2{margin:28px 0 8px;border-bottom:1px solid #e3e3e3;padding-bottom:4px}
table{border-collapse:collapse;font-size:13px;margin:4px 0}
th,td{padding:4px 8px;border-bottom:1px solid #e8e8e8;vertical-align:top}
th{background:#f3f4f6;text-align:left;font-weight:600}th.num{text-align:right}
tbody tr:nth-child(even){background:#fafafa}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.note{color:#555;font-size:13px;max-width:900px}.warn{color:#8a4b00}
.banner{background:#fff3cd;border:2px solid #e0a800;padding:10px 14px;border-radius:6px;
font-weight:600;margin:12px 0}
.ceiling{background:#eef5ff;border-left:6px solid #1f5fbf;padding:12px 16px;margin:16px 0;
border-radius:4px}.ceiling .big{font-size:28px;font-weight:700;color:#1f5fbf}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(530px,1fr));gap:16px}
.card{margin:0;border:1px solid #e3e3e3;border-radius:6px;padding:8px;background:#fff}
.card figcaption{font-size:13px;margin-bottom:6px}.facts{color:#555}
.instr{font-style:italic;margin-top:2px}
.badge{font-size:11px;padding:1px 6px;border-radius:8px;color:#fff;margin-left:6px}
.ok{background:#2e9d4f}.bad{background:#c0392b}
svg.traj{display:block;max-width:100%;height:auto}
"""

SYNTHETIC_TEXT = ("Synthetic world: this run used generated tasks or rendered imagery (a world built from "
                  "OpenStreetMap or a procedural city), not the CitySeeker release's panoramas. "
                  "Its numbers are not comparable with the paper's.")


def _ceiling_value(summary: dict) -> str:
    overall, sd = summary["overall"], summary.get("overall_sd") or {}
    value = fmt_mean_sd(overall.get("solvable"), sd.get("solvable"))
    return f"{value} %" if value else "not reported"


def build_html(summary: dict, tables: Sequence[Table], sections: str, css: str = "") -> str:
    """The page: title, banner, ceiling, the tables, then the HTML `sections` as given."""
    e = html.escape
    cfg = summary.get("config", {})
    banner = f'<div class="banner">⚠ {e(SYNTHETIC_TEXT)}</div>' if cfg.get("synthetic") else ""
    subtitle = (f"policy {cfg.get('policy', '?')} · dataset {cfg.get('dataset', '?')} · "
                f"{fmt(summary['overall'].get('episodes'))} episodes · "
                f"cityseeker_ros {cfg.get('package_version', '?')} · {cfg.get('created', '?')}")
    ceiling = (f'<div class="ceiling"><div>Solvable ceiling: <span class="big">'
               f"{e(_ceiling_value(summary))}</span></div><div>{e(CEILING_NOTE)}</div></div>"
               if "solvable" in summary["overall"] else "")
    body = "".join(render_table_html(t) for t in tables)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>CitySeeker report: {e(str(cfg.get('policy', '?')))}</title>"
            f"<style>{CSS}{VIEWS_CSS}{css}</style></head><body>\n"
            f"<h1>CitySeeker benchmark report</h1><p class=\"note\">{e(subtitle)}</p>\n"
            f"{banner}{ceiling}\n{body}{sections}</body></html>\n")


def build_markdown(summary: dict, blocks: Sequence[Table | str]) -> str:
    """The Markdown page: tables rendered, strings (whole sections) as they are."""
    cfg = summary.get("config", {})
    lines = ["# CitySeeker benchmark report", ""]
    if cfg.get("synthetic"):
        lines += [f"> **{SYNTHETIC_TEXT}**", ""]
    if "solvable" in summary["overall"]:
        lines += [f"**Solvable ceiling: {_ceiling_value(summary)}**. {CEILING_NOTE}", ""]
    lines += ["Trajectory plots, views and the step viewer: see report.html beside this file.", ""]
    return "\n".join(lines) + "\n" + "\n".join(b if isinstance(b, str) else render_table_md(b) for b in blocks)


def _load_once(loader: ViewLoader | None) -> ViewLoader | None:
    """The view loader called at most once per report (two sections use its sources)."""
    if loader is None:
        return None
    memo: dict[str, object] = {}

    def load(config: dict) -> Mapping:
        if "error" in memo:
            raise memo["error"]  # type: ignore[misc]
        if "sources" not in memo:
            try:
                memo["sources"] = loader(config)
            except CitySeekerError as exc:
                memo["error"] = exc
                raise
        return memo["sources"]  # type: ignore[return-value]

    return load


def write_report(out_dir: Path, *, graph_loader: GraphLoader | None = None,
                 view_loader: ViewLoader | None = None, max_trajectories: int = 6,
                 max_step_thumbnails: int = 12) -> tuple[Path, Path]:
    """Read OUT/summary.json and OUT/episodes.jsonl; write OUT/report.html and OUT/report.md.
    `max_step_thumbnails` episodes of the step viewer get the views re-made as thumbnails."""
    out_dir = Path(out_dir)
    summary = load_summary(out_dir / "summary.json")
    episodes = load_episodes(out_dir / "episodes.jsonl")
    config = summary.get("config", {})
    seed = first_seed(summary, episodes)
    selected = select_trajectories(episodes, seed, max_trajectories)
    view_loader = _load_once(view_loader)

    family = family_of_config(config)
    paper = dict(family.paper_by_category)
    tables = [t for t in (
        run_table(summary, len(episodes), [r["budget"] for r in episodes if isinstance(r.get("budget"), int)]),
        overall_table(summary),
        world_facts_table(summary),
        comparison_table(summary),
        breakdown_table(family, "By category", "Category", summary.get("by_category", {}),
                        tuple(CATEGORY_NAMES.values()), paper),
        breakdown_table(family, "By city", "City", summary.get("by_city", {})),
        breakdown_table(family, "By difficulty", "Difficulty", summary.get("by_difficulty", {}), DIFFICULTIES),
        end_reason_table(episodes),
        judge_table(out_dir),
    ) if t is not None]
    decisions = decisions_table(summary)
    if decisions is not None:
        tables.append(decisions)
    graphs, problem = load_graphs(summary, graph_loader) if episodes else ({}, "")
    cities: dict[str, CityIndex] = {}

    def coords_for(record: dict) -> Mapping | None:
        city = str(record.get("city", ""))
        if city not in graphs:
            return None
        if city not in cities:
            cities[city] = CityIndex.build(graphs[city])
        return report_failures.NodeCoords(cities[city])

    analysis = report_failures.analyse(episodes, coords_for)
    sources, no_views = report_steps.load_sources(config, view_loader)
    viewer = report_steps.viewer_data(episodes, analysis.tags, analysis.departures, graphs=graphs,
                                      sources=sources, coords_for=coords_for,
                                      max_thumb_episodes=max_step_thumbnails)
    note = f"No thumbnails: {no_views}." if no_views else ""
    html_path, md_path = out_dir / "report.html", out_dir / "report.md"
    sections = (report_failures.failures_html(analysis) + report_steps.viewer_html(viewer, note)
                + trajectories_html(selected, graphs, problem, seed) + views_html(selected, config, view_loader))
    write_text_atomic(html_path, build_html(summary, tables, sections, report_failures.CSS + report_steps.CSS))
    write_text_atomic(md_path, build_markdown(summary, [*tables, report_failures.failures_md(analysis),
                                                        trajectory_table(selected)]))
    return html_path, md_path
