"""The report's tables and number formats, in HTML and Markdown, shared by every section."""
from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from cityseeker_ros.core.tasks.family import TaskFamily

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


def metric_header(family: TaskFamily, key: str) -> str:
    spec = family.spec(key)
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
