"""The report's "Why episodes failed" section: the failure count tree, the tags, where paths
first left the reference route, and a tag table of failed episodes (HTML and Markdown)."""
from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from cityseeker_ros.core.evaluation.failures import (
    MULTI_TAGS,
    TAG_MEANING,
    TAGS,
    closest_approach_m,
    departure_histogram,
    episode_tags,
    failure_tree,
    first_departure,
    perception_tree,
)
from cityseeker_ros.core.evaluation.report.maps import CityIndex
from cityseeker_ros.core.evaluation.report.tables import Table, fmt, render_table_html, render_table_md

CSS = """
.ftree,.ftree ul{list-style:none;margin:0;padding-left:18px}.ftree{padding-left:0;font-size:14px}
.ftree li{margin:2px 0}.ftree .n{font-weight:600;font-variant-numeric:tabular-nums}
.ftree .p{color:#666;font-size:12px}.ftree .zero{color:#aaa}
.chip{display:inline-block;font-size:11px;padding:0 6px;margin:0 2px;border-radius:8px;background:#eef0f3;
color:#333;white-space:nowrap}
.fgrid{display:grid;grid-template-columns:minmax(420px,1fr) minmax(300px,420px);gap:24px;align-items:start}
.hist td{padding:1px 6px;border:0}.hist .bar{background:#c0392b;height:10px;border-radius:2px}
"""
MAX_TAG_ROWS = 40


@dataclass
class Analysis:
    """What the section shows, per record in the order of the records given."""

    records: Sequence[Mapping[str, Any]]
    tags: list[list[str]]
    departures: list[Optional[int]]
    closest_m: list[Optional[float]]
    tree: dict[str, Any]
    perception: Optional[dict[str, Any]] = None  # failures by what a reading policy saw (None: no such policy)


class NodeCoords(Mapping[str, tuple[float, float]]):
    """One city's node id -> (lat, lon), read from the report's CityIndex without copying."""

    def __init__(self, city: CityIndex) -> None:
        self.city = city

    def __getitem__(self, node_id: str) -> tuple[float, float]:
        lat, lon = self.city.latlon[self.city.index[node_id]]
        return float(lat), float(lon)

    def __iter__(self) -> Iterator[str]:
        return iter(self.city.index)

    def __len__(self) -> int:
        return len(self.city.index)


def analyse(records: Sequence[Mapping[str, Any]],
            coords_for: Optional[Callable[[Mapping[str, Any]], Any]] = None) -> Analysis:
    """Tags, departures and closest approaches of every record, and the count tree."""
    coords = [coords_for(r) if coords_for else None for r in records]
    return Analysis(records, [episode_tags(r, c) for r, c in zip(records, coords)],
                    [first_departure(r) for r in records],
                    [closest_approach_m(r, c) for r, c in zip(records, coords)],
                    failure_tree(records, coords_for=coords_for), perception_tree(records, coords_for=coords_for))


def _pct(n: int, total: int) -> str:
    return fmt(100.0 * n / total) if total else "0.0"


def _chips(counts: Mapping[str, int]) -> str:
    return "".join(f'<span class="chip">{html.escape(t)} {n}</span>' for t, n in counts.items() if n)


def tree_html(tree: Mapping[str, Any]) -> str:
    total = tree["count"]

    def item(node: Mapping[str, Any], parent: int) -> str:
        cls = ' class="zero"' if not node["count"] else ""
        share = f'{_pct(node["count"], total)}% of all'
        if parent != total:
            share += f', {_pct(node["count"], parent)}% of parent'
        sub = "".join(item(c, node["count"]) for c in _shown(node))
        return (f'<li{cls}>{html.escape(node["label"])}: <span class="n">{node["count"]}</span> '
                f'<span class="p">({share})</span> {_chips(node["tags"])}'
                + (f"<ul>{sub}</ul>" if sub else "") + "</li>")

    return f'<ul class="ftree">{item(tree, total)}</ul>'


def _shown(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Children worth a line: none under an empty node, and no empty "distance unknown"."""
    if not node["count"]:
        return []
    return [c for c in node["children"] if c["count"] or not c["key"].endswith("unknown")]


def tree_md(tree: Mapping[str, Any]) -> str:
    total = tree["count"]
    lines = []

    def walk(node: Mapping[str, Any], depth: int, parent: int) -> None:
        share = f'{_pct(node["count"], total)}% of all'
        if parent != total:
            share += f', {_pct(node["count"], parent)}% of parent'
        tags = ", ".join(f"{t} {n}" for t, n in node["tags"].items() if n)
        lines.append(f'{"  " * depth}- {node["label"]}: **{node["count"]}** ({share})' + (f" — {tags}" if tags else ""))
        for child in _shown(node):
            walk(child, depth + 1, node["count"])

    walk(tree, 0, total)
    return "\n".join(lines) + "\n"


def tag_counts_table(analysis: Analysis) -> Table:
    counts = Counter(t for tags in analysis.tags for t in tags)
    n = len(analysis.records)
    rows = tuple((t, TAG_MEANING[t], str(counts[t]), _pct(counts[t], n)) for t in TAGS)
    return Table("Tags", ("Tag", "Meaning", "Episodes", "Share (%)"), rows,
                 "Tags are multi-label: an episode can carry several.")


def departure_table(analysis: Analysis) -> Table:
    failed = [r for r, t in zip(analysis.records, analysis.tags) if "success" not in t]
    hist = departure_histogram(failed, failed_only=False)
    rows = tuple(("never left / no reference" if k is None else str(k), str(n), _pct(n, len(failed)))
                 for k, n in hist.items())
    return Table("Where failed episodes first left the reference", ("Move", "Episodes", "Share (%)"), rows,
                 "Move k is the first hop off the reference route (or the stop, for a path that ends "
                 "on it short of the target): the decision recorded at step k - 1.")


def failed_table(analysis: Analysis, limit: int = MAX_TAG_ROWS) -> Table:
    seeds = {r.get("seed") for r in analysis.records}
    rows = []
    n_failed = 0
    for r, tags, dep, close in zip(analysis.records, analysis.tags, analysis.departures, analysis.closest_m):
        if "success" in tags:
            continue
        n_failed += 1
        if len(rows) >= limit:
            continue
        seed = (str(r.get("seed", "")),) if len(seeds) > 1 else ()
        rows.append((str(r.get("episode_id", "")), *seed, str(r.get("category", "")),
                     str(r.get("end_reason", "")), " ".join(tags), fmt(dep), fmt(r.get("steps")),
                     fmt(close), fmt((r.get("metrics") or {}).get("spd"))))
    header = ("Episode", *(("Seed",) if len(seeds) > 1 else ()), "Category", "End reason", "Tags",
              "Left reference at move", "Steps", "Closest to target (m)", "SPD (m)")
    note = f"The first {len(rows)} of {n_failed} failed episodes, in file order." if n_failed > len(rows) else ""
    return Table("Failed episodes", header, tuple(rows), note)


def _hist_html(table: Table) -> str:
    peak = max((int(r[1]) for r in table.rows), default=0) or 1
    rows = "".join(f'<tr><td class="num">{html.escape(r[0])}</td><td class="num">{r[1]}</td>'
                   f'<td style="width:200px"><div class="bar" style="width:{100 * int(r[1]) / peak:.0f}%">'
                   "</div></td></tr>" for r in table.rows)
    return (f"<h3>{html.escape(table.title)}</h3><table class=\"hist\"><thead><tr><th>Move</th>"
            f"<th>Episodes</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
            f'<p class="note">{html.escape(table.note)}</p>')


INTRO = ("Each episode is tagged (multi-label) and counted in a tree: success or failure, then how the "
         "episode ended, then whether its path ever came within 50 m of the target. Branches add up; "
         "the grey chips (" + ", ".join(MULTI_TAGS) + ") are overlapping tags among a branch's episodes. "
         "Over all episode records (every seed).")


PERCEPTION_INTRO = ("For policies that read signs (ocr-embed, sign-oracle): each failed episode by where the "
                    "chain broke. Never saw: no sign it read satisfied the need (perception or exploration). "
                    "Saw but did not go there: it read one but its path never came within 50 m of the target. "
                    "Went there but did not stop: it came within 50 m and still ended elsewhere.")


def failures_html(analysis: Analysis) -> str:
    if not analysis.records:
        return '<h2>Why episodes failed</h2>\n<p class="note">No episode records.</p>\n'
    return ('<section id="failures"><h2>Why episodes failed</h2>\n'
            f'<p class="note">{html.escape(INTRO)}</p>\n'
            f'<div class="fgrid"><div>{tree_html(analysis.tree)}</div>'
            f"<div>{_hist_html(departure_table(analysis))}</div></div>\n"
            + (f'<h3>Failures by what the agent saw</h3>\n<p class="note">{html.escape(PERCEPTION_INTRO)}</p>\n'
               f"{tree_html(analysis.perception)}\n" if analysis.perception else "")
            + render_table_html(tag_counts_table(analysis), level=3)
            + '<div id="failed-episodes">' + render_table_html(failed_table(analysis), level=3)
            + "</div></section>\n")


def failures_md(analysis: Analysis) -> str:
    if not analysis.records:
        return "## Why episodes failed\n\nNo episode records.\n"
    perception = (["### Failures by what the agent saw", "", PERCEPTION_INTRO, "", tree_md(analysis.perception)]
                  if analysis.perception else [])
    return "\n".join(["## Why episodes failed", "", INTRO, "", tree_md(analysis.tree), *perception,
                      render_table_md(tag_counts_table(analysis), level=3),
                      render_table_md(departure_table(analysis), level=3),
                      render_table_md(failed_table(analysis), level=3)])
