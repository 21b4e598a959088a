"""Turn a benchmark output folder into report.html and report.md.

A run's numbers mean little on their own: the report puts them beside the solvable ceiling
and the paper's published rows, breaks them down by category, city and difficulty, says why
episodes failed (report_failures.py), and draws a few trajectories to show how the policy
succeeds or fails; a step viewer (report_steps.py) replays single episodes. The HTML is
self-contained (inline CSS, SVG and the viewer's own script and data, no external URLs) so
it can be archived or mailed with the run; report.md carries the same tables for diffs and chat.
"""
from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np

from cityseeker_ros.core.episode import CATEGORY_NAMES, DIFFICULTIES
from cityseeker_ros.core.errors import CitySeekerError, DataError
from cityseeker_ros.core.graph import StreetGraph
from cityseeker_ros.core.paper_results import PAPER_CATEGORY_TCP50, PAPER_OVERALL, PAPER_SCOPE
from cityseeker_ros.core.report_views import CSS as VIEWS_CSS
from cityseeker_ros.core.report_views import ViewLoader, views_html
from cityseeker_ros.core.results import write_text_atomic
from cityseeker_ros.core.text import loads_json

GraphLoader = Callable[[dict], dict[str, StreetGraph]]

EARTH_RADIUS_M = 6_371_008.8
END_REASONS = ("stopped", "budget_exhausted", "invalid_action", "error")


@dataclass(frozen=True)
class MetricSpec:
    key: str
    label: str
    unit: str
    meaning: str


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("tce", "TCE", "%", "final node is the target"),
    MetricSpec("tcp40", "TCP40", "%", "final node within 40 m of the target"),
    MetricSpec("tcp50", "TCP50", "%", "final node within 50 m of the target (the paper's TCP)"),
    MetricSpec("tcp60", "TCP60", "%", "final node within 60 m of the target"),
    MetricSpec("tcc", "TCC", "%", "final node within 50 m of any place of the requested kind"),
    MetricSpec("spl", "SPL", "%", "TCP50 success weighted by reference / walked length"),
    MetricSpec("osr", "OSR", "%", "some node of the path came within 50 m of the target"),
    MetricSpec("spd", "SPD", "m", "geodesic distance from final node to target (lower is better)"),
    MetricSpec("dtw_per_ref_m", "dtw_per_ref_m", "m",
               "DTW(path, reference) / reference nodes; the paper's 'nDTW' (lower is better)"),
    MetricSpec("ndtw", "nDTW", "x100", "standard exp(-DTW / (|R| d_th)) (higher is better)"),
    MetricSpec("as", "AS", "steps", "mean steps taken"),
    MetricSpec("solvable", "Solvable", "%", "target reachable within the step budget (ceiling)"),
)
SPECS: dict[str, MetricSpec] = {m.key: m for m in METRICS}
PAPER_METRICS = ("tce", "tcp40", "tcp50", "tcp60", "tcc", "spl", "spd", "dtw_per_ref_m", "as")
BREAKDOWN_METRICS = ("tce", "tcp50", "tcc", "spl", "spd", "dtw_per_ref_m", "as", "solvable")
PAPER_CATEGORY_ROWS = ("Random Choice", "Forward Direction", "Human")

DTW_NOTE = ("The paper's column named 'nDTW' is DTW(agent path, reference path) in metres "
            "divided by the reference path's node count (lower is better); we report it as "
            "dtw_per_ref_m. Our standard nDTW has no published counterpart.")
CEILING_NOTE = ("The share of episodes whose target is reachable within the step budget under "
                "the paper's action model (choosing a walkable heading moves along the closest "
                "out-edge). No policy can exceed it on TCE; TCP and TCC can exceed it slightly, "
                "because ending near a target also counts.")


# ---------------------------------------------------------------- formatting and tables

def fmt(value: object, decimals: int = 1) -> str:
    """Every number in the report goes through here, so all tables agree (blank = no value)."""
    if value is None or isinstance(value, str):
        return "" if value is None else value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return "" if math.isnan(v) else str(v)
    # Half-up on the shortest decimal form, as the paper rounds (2.55 -> 2.6, not 2.5).
    q = Decimal(repr(v)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{q.copy_abs() if q.is_zero() else q:.{decimals}f}"  # never "-0.0"


def fmt_mean_sd(mean: object, sd: object) -> str:
    text = fmt(mean)
    return f"{text} ± {fmt(sd)}" if text and sd is not None else text


def metric_header(key: str) -> str:
    spec = SPECS[key]
    return f"{spec.label} ({spec.unit})"


@dataclass(frozen=True)
class Table:
    """A table as plain strings; the one HTML and the one Markdown renderer draw every table."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


_NUMBER = re.compile(r"^-?\d+(\.\d+)?( ± \d+(\.\d+)?)?$")


def numeric_columns(table: Table) -> list[bool]:
    """A column is right-aligned when every non-blank cell in it is a number."""
    columns = list(zip(*table.rows)) or [()] * len(table.header)
    return [any(c for c in col) and all(_NUMBER.match(c) for c in col if c) for col in columns]


def render_table_html(table: Table, level: int = 2) -> str:
    e = html.escape
    align = ["num" if n else "txt" for n in numeric_columns(table)]
    head = "".join(f'<th class="{a}">{e(h)}</th>' for h, a in zip(table.header, align))
    body = ["<tr>" + "".join(f'<td class="{a}">{e(c)}</td>' for c, a in zip(row, align)) + "</tr>"
            for row in table.rows]
    if not table.rows:
        body.append(f'<tr><td colspan="{len(table.header)}" class="txt">(none)</td></tr>')
    note = f'<p class="note">{e(table.note)}</p>' if table.note else ""
    return (f"<h{level}>{e(table.title)}</h{level}>\n<table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>\n{note}\n")


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def render_table_md(table: Table, level: int = 2) -> str:
    def line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(_md_cell(c) for c in cells) + " |"

    align = ["---:" if n else "---" for n in numeric_columns(table)]
    rows = [line(r) for r in table.rows] or [line(["(none)"] + [""] * (len(table.header) - 1))]
    parts = [f"{'#' * level} {table.title}", "", line(table.header), "| " + " | ".join(align) + " |", *rows]
    if table.note:
        parts += ["", table.note]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- inputs

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

def run_table(summary: dict, n_records: int) -> Table:
    """What was run: enough to reproduce it or tell two reports apart."""
    cfg = summary.get("config", {})
    seeds = cfg.get("seeds")
    rows = [
        ("Policy", str(cfg.get("policy", "?"))),
        ("Dataset", str(cfg.get("dataset", "?"))),
        ("Data", str(cfg.get("data", "?"))),
        ("Seeds", ", ".join(map(str, seeds)) if seeds else "?"),
        ("Episodes", fmt(summary["overall"].get("episodes"))),
        ("Episode records", str(n_records)),
        ("Step budget", fmt(cfg.get("max_steps"))),
        ("Episode limit", fmt(cfg.get("limit")) or "none"),
        ("Synthetic world", "yes" if cfg.get("synthetic") else "no"),
        ("Package version", str(cfg.get("package_version", "?"))),
        ("Created", str(cfg.get("created", "?"))),
        ("Command", str(cfg.get("command", ""))),
    ]
    rows += [(f"Data file {Path(p).name}", f"sha256 {h}")
             for p, h in sorted(cfg.get("data_files", {}).items())]
    return Table("Run", ("Field", "Value"), tuple(rows))


def overall_table(summary: dict) -> Table:
    overall, sd = summary["overall"], summary.get("overall_sd") or {}
    n_seeds = overall.get("seeds") or len(summary.get("config", {}).get("seeds") or [])
    rows = tuple((m.label, m.unit, fmt_mean_sd(overall.get(m.key), sd.get(m.key)), m.meaning)
                 for m in METRICS)
    note = f"Mean ± standard deviation over {n_seeds} seeds." if sd else ""
    return Table("Overall", ("Metric", "Unit", "Value", "Meaning"), rows, note)


def comparison_table(summary: dict) -> Table:
    cfg = summary.get("config", {})
    ours = summary["overall"]
    header = ("Run", *(metric_header(k) for k in PAPER_METRICS), "Source")
    rows = [(f"This run ({cfg.get('policy', '?')})", *(fmt(ours.get(k)) for k in PAPER_METRICS),
             "summary.json")]
    rows += [(r.name, *(fmt(r.metrics.get(k)) for k in PAPER_METRICS), f"paper {r.source}")
             for r in PAPER_OVERALL]
    caveat = (" This run is on a synthetic world: the paper's rows are for orientation only."
              if cfg.get("synthetic") else "")
    note = (f"{DTW_NOTE} Paper rows: {PAPER_SCOPE}; blank where the paper gives no value; "
            f"paper values rounded to 1 decimal.{caveat}")
    return Table("Comparison with the paper", header, tuple(rows), note)


def _ordered(groups: Mapping[str, dict], preferred: Sequence[str]) -> list[str]:
    """Known names in their natural order first, then any others alphabetically."""
    known = [g for g in preferred if g in groups]
    return known + sorted(g for g in groups if g not in preferred)


def breakdown_table(title: str, first_column: str, groups: Mapping[str, dict],
                    preferred: Sequence[str] = (),
                    paper: Mapping[str, Mapping[str, float]] | None = None) -> Table:
    """One row per group; `paper` adds published per-group TCP50 columns beside ours."""
    paper = paper or {}
    header = (first_column, "Episodes", *(metric_header(k) for k in BREAKDOWN_METRICS),
              *(f"Paper {name} TCP50 (%)" for name in paper))
    rows = tuple((name, fmt(groups[name].get("episodes")),
                  *(fmt(groups[name].get(k)) for k in BREAKDOWN_METRICS),
                  *(fmt(values.get(name)) for values in paper.values()))
                 for name in _ordered(groups, preferred))
    note = "Paper columns: Table 2 subcategory TCP; blank where the paper has no such category." \
        if paper else ""
    return Table(title, header, rows, note)


def end_reason_table(episodes: Sequence[dict]) -> Table:
    counts: dict[str, int] = {r: 0 for r in END_REASONS}
    for rec in episodes:
        reason = str(rec.get("end_reason", "unknown"))
        counts[reason] = counts.get(reason, 0) + 1
    total = max(len(episodes), 1)
    rows = tuple((r, str(n), fmt(100.0 * n / total)) for r, n in counts.items())
    note = (f"Over all {len(episodes)} episode records (every seed)." if episodes
            else "No episode records: episodes.jsonl is missing or empty.")
    return Table("How episodes ended", ("End reason", "Episodes", "Share (%)"), rows, note)


def decisions_table(summary: dict) -> Table | None:
    """Parse errors, retries and latency of the policy's decisions, for policies that log them."""
    d = summary.get("decisions")
    if not d:
        return None
    rows = [("Decisions", str(d["count"])), ("Parse errors: fell back (%)", fmt(d["parse_error_rate"], 2)),
            ("Retried once (%)", fmt(d["retry_rate"], 2)), ("Repaired replies", str(d["repaired"])),
            ("Replies cut at the length limit", str(d.get("cut_replies", 0))),
            ("Episodes ended by a backend error", str(d["episodes_ended_by_error"]))]
    rows += [(f"Latency {key}: p50 / p95 (s)", f"{v['p50']:.3f} / {v['p95']:.3f}")
             for key, v in d.get("latency_s", {}).items()]
    return Table("Decisions", ("Measure", "Value"), tuple(rows),
                 "A fallback is a decision whose reply could not be parsed even after one retry "
                 "(the paper reports 6.3% format errors for Qwen2.5-VL-32B).")


def trajectory_table(selected: Sequence[dict]) -> Table:
    rows = tuple((r["episode_id"], str(r.get("city", "")), str(r.get("category", "")),
                  str(r.get("end_reason", "")), "success" if _succeeded(r) else "failure",
                  fmt(r.get("metrics", {}).get("spd")), fmt(r.get("steps")))
                 for r in selected)
    return Table("Drawn trajectories", ("Episode", "City", "Category", "End reason",
                                        "TCP50", "SPD (m)", "Steps"), rows,
                 "Plots are in report.html.")


# ---------------------------------------------------------------- trajectory selection

def _succeeded(record: dict) -> bool:
    return float(record.get("metrics", {}).get("tcp50") or 0.0) > 0.0


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

@dataclass
class CityIndex:
    """A city's node coordinates and undirected edges as arrays, built once per report."""

    index: dict[str, int]
    latlon: np.ndarray
    edges: np.ndarray  # (m, 2) node indices, each street segment once

    @classmethod
    def build(cls, graph: StreetGraph) -> CityIndex:
        ids = list(graph.nodes)
        index = {nid: i for i, nid in enumerate(ids)}
        pairs = {(min(a, b), max(a, b)) for a, b in
                 ((index[e.source], index[e.target]) for e in graph.edges) if a != b}
        edges = np.array(sorted(pairs), dtype=int).reshape(-1, 2)
        return cls(index, graph.latlon(ids) if ids else np.zeros((0, 2)), edges)


@dataclass
class Geometry:
    """Everything one trajectory plot needs, in lat/lon."""

    path: np.ndarray
    reference: np.ndarray
    start: np.ndarray
    target: np.ndarray | None
    final: np.ndarray
    segments: np.ndarray  # (m, 2, 2) street segments near the episode


def _latlon_array(value: object) -> np.ndarray | None:
    try:
        arr = np.asarray(value, dtype=float).reshape(-1, 2)
    except (TypeError, ValueError):
        return None
    return arr if len(arr) else None


def geometry_from_graph(record: dict, city: CityIndex, margin_m: float) -> Geometry | None:
    path = list(record.get("path") or [])
    reference = list(record.get("reference_path") or [])
    target = record.get("target") or (reference[-1] if reference else None)
    needed = path + reference + ([target] if target else [])
    if not path or any(n not in city.index for n in needed):
        return None

    def ll(ids: Sequence[str]) -> np.ndarray:
        return city.latlon[[city.index[n] for n in ids]].reshape(-1, 2)

    path_ll, ref_ll, target_ll = ll(path), ll(reference), ll([target] if target else [])
    focus = np.vstack([path_ll, ref_ll, target_ll])
    return Geometry(path_ll, ref_ll, path_ll[0], target_ll[0] if target else None,
                    path_ll[-1], _segments_near(city, focus, margin_m))


def geometry_from_record(record: dict) -> Geometry | None:
    """Fallback without a graph: coordinates the benchmark may store beside node ids."""
    path = _latlon_array(record.get("path_latlon"))
    if path is None:
        return None
    ref = _latlon_array(record.get("reference_latlon"))
    ref = ref if ref is not None else np.zeros((0, 2))
    target = _latlon_array(record.get("target_latlon"))
    target = target[0] if target is not None else (ref[-1] if len(ref) else None)
    return Geometry(path, ref, path[0], target, path[-1], np.zeros((0, 2, 2)))


def _segments_near(city: CityIndex, focus: np.ndarray, margin_m: float) -> np.ndarray:
    """Street segments with an end inside the episode's bounding box plus a margin."""
    if not len(city.edges):
        return np.zeros((0, 2, 2))
    lat0 = float(focus[:, 0].mean())
    dlat = math.degrees(margin_m / EARTH_RADIUS_M)
    dlon = dlat / max(math.cos(math.radians(lat0)), 1e-6)
    lo = focus.min(axis=0) - (dlat, dlon)
    hi = focus.max(axis=0) + (dlat, dlon)
    inside = np.all((city.latlon >= lo) & (city.latlon <= hi), axis=1)
    keep = inside[city.edges[:, 0]] | inside[city.edges[:, 1]]
    return city.latlon[city.edges[keep]]


def project(latlon: np.ndarray, lat0: float, lon0: float) -> np.ndarray:
    """Local equirectangular projection to east/north metres; exact enough within a few km."""
    latlon = np.asarray(latlon, dtype=float).reshape(-1, 2)
    x = np.radians(latlon[:, 1] - lon0) * math.cos(math.radians(lat0)) * EARTH_RADIUS_M
    y = np.radians(latlon[:, 0] - lat0) * EARTH_RADIUS_M
    return np.stack([x, y], axis=1)


def nice_length(max_m: float) -> float:
    """The largest 1/2/5 x 10^k metres not above max_m, for a readable scale bar."""
    if max_m <= 0:
        return 1.0
    base = 10 ** math.floor(math.log10(max_m))
    return max(s * base for s in (1, 2, 5) if s * base <= max_m)


# ---------------------------------------------------------------- SVG

SVG_W, MAP_H, LEGEND_H, PAD = 520, 360, 30, 16
COLORS = {"street": "#c9ccd1", "reference": "#2e9d4f", "path": "#1f5fbf",
          "start": "#222222", "target": "#d62728", "final": "#ff8c00"}


def _pts(xy: np.ndarray) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)


def _star(x: float, y: float, r: float) -> str:
    angles = np.radians(np.arange(10) * 36.0 - 90.0)
    radii = np.where(np.arange(10) % 2 == 0, r, r * 0.45)
    return _pts(np.stack([x + radii * np.cos(angles), y + radii * np.sin(angles)], axis=1))


def _marker(kind: str, x: float, y: float) -> str:
    if kind == "start":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5.5" fill="{COLORS["start"]}" stroke="#fff"/>'
    if kind == "target":
        return (f'<polygon points="{_star(x, y, 9)}" fill="{COLORS["target"]}" '
                'stroke="#fff" stroke-width="1"/>')
    return (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="8" fill="none" stroke="{COLORS["final"]}" '
            'stroke-width="3"/>')


def _legend() -> str:
    y = MAP_H + LEGEND_H / 2
    items = [("reference", "reference"), ("path", "agent path"), ("start", "start"),
             ("target", "target"), ("final", "final node")]
    parts, x = [], 12.0
    for kind, label in items:
        if kind in ("reference", "path"):
            width = 6 if kind == "reference" else 2.5
            opacity = ' stroke-opacity="0.55"' if kind == "reference" else ""
            parts.append(f'<line x1="{x:.0f}" y1="{y:.0f}" x2="{x + 22:.0f}" y2="{y:.0f}" '
                         f'stroke="{COLORS[kind]}" stroke-width="{width}"{opacity}/>')
            x += 28
        else:
            parts.append(_marker(kind, x + 6, y))
            x += 18
        parts.append(f'<text x="{x:.0f}" y="{y + 4:.0f}">{label}</text>')
        x += 7.2 * len(label) + 14
    return "".join(parts)


def _scale_bar(metres_per_px: float) -> str:
    length_m = nice_length(0.3 * (SVG_W - 2 * PAD) * metres_per_px)
    px = length_m / metres_per_px
    x0, y0 = PAD, MAP_H - PAD
    label = f"{length_m:g} m" if length_m < 1000 else f"{length_m / 1000:g} km"
    return (f'<rect x="{x0 - 4}" y="{y0 - 20}" width="{px + 8:.1f}" height="26" fill="#fff" '
            f'fill-opacity="0.85"/>'
            f'<path d="M{x0},{y0 - 5} v5 h{px:.1f} v-5" fill="none" stroke="#222" '
            f'stroke-width="1.5"/>'
            f'<text x="{x0 + px / 2:.1f}" y="{y0 - 8}" text-anchor="middle">{label}</text>')


def frame_metres(xy: np.ndarray) -> tuple[float, np.ndarray]:
    """Pixels per metre and the centre (east/north metres) that frame the points with a margin."""
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.maximum(hi - lo, 20.0)
    lo, hi = lo - 0.12 * span - 10, hi + 0.12 * span + 10
    scale = min((SVG_W - 2 * PAD) / (hi[0] - lo[0]), (MAP_H - 2 * PAD) / (hi[1] - lo[1]))
    return float(scale), (lo + hi) / 2


def fit_map(geo: Geometry) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """lat/lon -> SVG pixels (north up) framing the episode, and the pixels per metre."""
    points = [geo.path, geo.reference, geo.start[None, :]]
    if geo.target is not None:
        points.append(geo.target[None, :])
    focus = np.vstack(points)
    lat0, lon0 = float(focus[:, 0].mean()), float(focus[:, 1].mean())
    scale, centre = frame_metres(project(focus, lat0, lon0))
    offset = np.array([SVG_W / 2, MAP_H / 2])

    def to_px(ll: np.ndarray) -> np.ndarray:
        m = project(ll, lat0, lon0) - centre
        return offset + np.stack([m[:, 0], -m[:, 1]], axis=1) * scale

    return to_px, float(scale)


def trajectory_svg(geo: Geometry, title: str) -> str:
    """One episode drawn north-up: nearby streets, the reference route, the agent's path."""
    to_px, scale = fit_map(geo)
    streets = "".join(f"M{a[0]:.1f},{a[1]:.1f}L{b[0]:.1f},{b[1]:.1f}"
                      for a, b in (to_px(seg) for seg in geo.segments))
    parts = [f'<svg class="traj" width="{SVG_W}" '
             f'height="{MAP_H + LEGEND_H}" viewBox="0 0 {SVG_W} {MAP_H + LEGEND_H}" role="img" '
             f'font-family="system-ui, sans-serif" font-size="12">',
             f"<title>{html.escape(title)}</title>",
             f'<rect width="{SVG_W}" height="{MAP_H}" fill="#fbfbf8" stroke="#ddd"/>',
             f'<svg x="0" y="0" width="{SVG_W}" height="{MAP_H}">']
    if streets:
        parts.append(f'<path d="{streets}" stroke="{COLORS["street"]}" stroke-width="1.2" '
                     'fill="none" stroke-linecap="round"/>')
    if len(geo.reference) > 1:
        parts.append(f'<polyline points="{_pts(to_px(geo.reference))}" fill="none" '
                     f'stroke="{COLORS["reference"]}" stroke-width="7" stroke-opacity="0.55" '
                     'stroke-linejoin="round" stroke-linecap="round"/>')
    if len(geo.path) > 1:
        parts.append(f'<polyline points="{_pts(to_px(geo.path))}" fill="none" '
                     f'stroke="{COLORS["path"]}" stroke-width="2.5" stroke-linejoin="round"/>')
    for kind, ll in (("target", geo.target), ("start", geo.start), ("final", geo.final)):
        if ll is not None:
            (x, y), = to_px(ll[None, :])
            parts.append(_marker(kind, x, y))
    parts += ["</svg>", _scale_bar(1.0 / scale),
              f'<text x="{SVG_W - PAD}" y="{PAD + 8}" text-anchor="end" font-weight="600">N ↑</text>',
              _legend(), "</svg>"]
    return "".join(parts)


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
               f"{e(_ceiling_value(summary))}</span></div><div>{e(CEILING_NOTE)}</div></div>")
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
    lines += [f"**Solvable ceiling: {_ceiling_value(summary)}**. {CEILING_NOTE}", "",
              "Trajectory plots, views and the step viewer: see report.html beside this file.", ""]
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
    from cityseeker_ros.core import report_failures, report_steps  # they import this module

    out_dir = Path(out_dir)
    summary = load_summary(out_dir / "summary.json")
    episodes = load_episodes(out_dir / "episodes.jsonl")
    config = summary.get("config", {})
    seed = first_seed(summary, episodes)
    selected = select_trajectories(episodes, seed, max_trajectories)
    view_loader = _load_once(view_loader)

    tables = [
        run_table(summary, len(episodes)),
        overall_table(summary),
        comparison_table(summary),
        breakdown_table("By category", "Category", summary.get("by_category", {}),
                        tuple(CATEGORY_NAMES.values()),
                        {n: PAPER_CATEGORY_TCP50[n] for n in PAPER_CATEGORY_ROWS}),
        breakdown_table("By city", "City", summary.get("by_city", {})),
        breakdown_table("By difficulty", "Difficulty", summary.get("by_difficulty", {}),
                        DIFFICULTIES),
        end_reason_table(episodes),
    ]
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
