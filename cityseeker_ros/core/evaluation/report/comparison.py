"""The comparison as HTML: the tables `cityseeker compare` prints and a cost-against-success plot.

Inline SVG and CSS only (no external URLs), like report.html, so the page can be archived with
the runs. The plot puts each row at its cost per step (tokens where any row records them, else
model calls, else seconds) and its success, with the 95% interval as a vertical bar: the
question a researcher brings ("which agent, at what price?") in one picture. Rows that record
no cost (heading-only baselines) sit on the left edge, hollow.
"""
from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from typing import Optional

from cityseeker_ros.core.evaluation.compare import WIDTH, Comparison, Row, comparison_table, readings, tables
from cityseeker_ros.core.evaluation.report.page import CSS, SYNTHETIC_TEXT
from cityseeker_ros.core.evaluation.report.tables import fmt, render_table_html, render_table_md

PLOT_W, PLOT_H, LEFT, RIGHT, TOP, BOTTOM = 640, 360, 64, 180, 20, 48
PALETTE = ("#1f5fbf", "#c0392b", "#2e9d4f", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#b7950b")
COSTS = (("tokens per step (in + out)", lambda r: None if r.cost.tokens_in_per_step is None
          and r.cost.tokens_out_per_step is None else (r.cost.tokens_in_per_step or 0.0)
          + (r.cost.tokens_out_per_step or 0.0)),
         ("model calls per step", lambda r: r.cost.calls_per_step),
         ("seconds per step", lambda r: r.cost.seconds_per_step))


def cost_axis(rows: Sequence[Row]) -> tuple[str, list[Optional[float]]]:
    """The first cost any row records (tokens, calls, seconds), and each row's value of it."""
    for name, read in COSTS:
        values = [read(r) for r in rows]
        if any(v is not None for v in values):
            return name, values
    return "no cost recorded", [None] * len(rows)


def _ticks(high: float) -> list[float]:
    if high <= 0:
        return [0.0]
    step = 10 ** len(str(int(high))) / 10 if high >= 1 else 0.1
    for factor in (1, 2, 5, 10):
        if high / (step * factor) <= 6:
            step *= factor
            break
    return [i * step for i in range(int(high / step) + 2)]


def cost_success_svg(comparison: Comparison) -> str:
    """The plot of one family's rows: cost per step (x) against success with its interval (y)."""
    rows = comparison.rows
    axis, costs = cost_axis(rows)
    x_ticks = _ticks(max([c for c in costs if c is not None] or [0.0]))
    x_max = x_ticks[-1] or 1.0
    y_ticks = [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    inner_w, inner_h = PLOT_W - LEFT - RIGHT, PLOT_H - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + inner_w * x / x_max

    def py(y: float) -> float:
        return TOP + inner_h * (1.0 - max(0.0, min(100.0, y)) / 100.0)
    e = html.escape
    parts = [f'<svg class="plot" width="{PLOT_W}" height="{PLOT_H}" viewBox="0 0 {PLOT_W} {PLOT_H}" role="img" '
             'font-family="system-ui, sans-serif" font-size="11">',
             f"<title>{e(comparison.label)} against {e(axis)}: {e(comparison.family.name)}</title>",
             f'<rect x="{LEFT}" y="{TOP}" width="{inner_w}" height="{inner_h}" fill="#fbfbf8" stroke="#ccc"/>']
    for y in y_ticks:
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + inner_w}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#eee"/>'
                     f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{fmt(y, 0)}</text>')
    decimals = 0 if x_max >= 5 else 1
    for x in x_ticks:
        parts.append(f'<text x="{px(x):.1f}" y="{TOP + inner_h + 16}" text-anchor="middle">{e(fmt(x, decimals))}'
                     "</text>")
    parts.append(f'<text x="{LEFT + inner_w / 2:.1f}" y="{PLOT_H - 8}" text-anchor="middle">{e(axis)}</text>'
                 f'<text transform="translate(14 {TOP + inner_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
                 f"{e(comparison.label)} (%), {e('95%')} interval</text>")
    for i, (row, cost) in enumerate(zip(rows, costs)):
        color = PALETTE[i % len(PALETTE)]
        x = px(cost if cost is not None else 0.0)
        s = row.success
        fill = color if cost is not None else "#fff"
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{py(s.low):.1f}" y2="{py(s.high):.1f}" stroke="{color}" '
                     'stroke-width="2"/>'
                     f'<circle cx="{x:.1f}" cy="{py(s.estimate):.1f}" r="5" fill="{fill}" stroke="{color}" '
                     f'stroke-width="2"><title>#{row.number} {e(row.name)}: {e(fmt(s.estimate))} '
                     f"[{e(fmt(s.low))}, {e(fmt(s.high))}]</title></circle>"
                     f'<text x="{x + 7:.1f}" y="{py(s.estimate) - 6:.1f}" fill="{color}">#{row.number}</text>'
                     f'<text x="{LEFT + inner_w + 12}" y="{TOP + 14 + 16 * i}" fill="{color}">'
                     f"#{row.number} {e(row.name[:26])}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _wrapped(text: str) -> str:
    return textwrap.fill(text, WIDTH, break_on_hyphens=False)


def comparison_markdown(comparisons: Sequence[Comparison]) -> str:
    """The tables and reading lines `cityseeker compare` prints, family by family; notes and
    readings wrapped at WIDTH columns (Markdown joins the lines again)."""
    blocks = []
    for c in comparisons:
        for t in tables(c):
            blocks.append(render_table_md(replace(t, note="")) + (f"\n{_wrapped(t.note)}\n" if t.note else ""))
        lines = readings(c)
        if lines:
            blocks.append("\n".join(_wrapped(line) for line in lines) + "\n")
    return "\n".join(blocks)


PLOT_CSS = "svg.plot{display:block;max-width:100%;height:auto;margin:8px 0}"


def comparison_html(comparisons: Sequence[Comparison], title: str = "CitySeeker comparison") -> str:
    """A self-contained page: per family, the tables, the reading lines, every headline measure
    per run, and the cost-against-success plot."""
    e = html.escape
    synthetic = any(r.run.config.get("synthetic") for c in comparisons for r in c.rows)
    body = [f"<h1>{e(title)}</h1>"]
    if synthetic:
        body.append(f'<div class="banner">⚠ {e(SYNTHETIC_TEXT)}</div>')
    for c in comparisons:
        body += [render_table_html(t) for t in tables(c)[:2]]
        body.append(f"<h2>Cost against success: {e(c.family.name)}</h2>" + cost_success_svg(c)
                    + '<p class="note">Each point is a row at its cost per step and its success; the bar is its '
                      "95% interval (paired bootstrap). Hollow: the row records no cost.</p>")
        body += [f'<p class="note">{e(line)}</p>' for line in readings(c)]
        body.append(render_table_html(comparison_table([r.run for r in c.rows])))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(title)}</title><style>{CSS}{PLOT_CSS}</style></head><body>\n"
            + "\n".join(body) + "</body></html>\n")
