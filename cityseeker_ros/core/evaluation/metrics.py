"""Summaries of episode records: means overall and per category, city and difficulty, over the
measures of the records' task family (core/tasks/<family>)."""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from cityseeker_ros.core.tasks.family import family_of_records
from cityseeker_ros.core.tasks.measures import DEFAULT_DTW_THRESHOLD_M

__all__ = ["DEFAULT_DTW_THRESHOLD_M", "GROUPINGS", "summarize"]

GROUPINGS: dict[str, str] = {
    "by_category": "category", "by_city": "city", "by_difficulty": "difficulty",
}


def _group(records: Sequence[Mapping[str, Any]], field: str) -> dict[Any, list[Mapping[str, Any]]]:
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for r in records:
        groups.setdefault(r.get(field), []).append(r)
    return {name: groups[name] for name in sorted(groups, key=str)}


def _episode_count(records: Sequence[Mapping[str, Any]]) -> int:
    """Distinct episodes; ids are paired with the city because datasets number them per city."""
    return len({(r.get("city"), r["episode_id"]) for r in records})


def _means(records: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> dict[str, float]:
    try:
        # fmean sums exactly (fsum), so the result does not depend on record order.
        return {k: statistics.fmean(float(r["metrics"][k]) for r in records) for k in keys}
    except KeyError as err:
        raise ValueError(f"an episode record lacks metric {err}") from None


def _block(records: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> dict[str, Any]:
    return {**_means(records, keys), "episodes": _episode_count(records)}


def summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Means of the family's measures overall and per category, city and difficulty, from
    episodes.jsonl records (of one task family).

    With several seeds, `overall` is the mean of the per-seed means and `overall_sd` their
    sample standard deviation, so the spread says how far a rerun moves the headline.
    Groups pool every record. `overall` always carries `episodes` and `seeds`; with no
    records it carries only those two (zeros), so nothing is ever NaN.
    """
    keys = family_of_records(records).metric_keys
    seeds = _group(records, "seed")
    counts = {"episodes": _episode_count(records), "seeds": len(seeds)}
    summary: dict[str, Any] = {}
    if len(seeds) > 1:
        per_seed = [_means(rs, keys) for rs in seeds.values()]
        columns = {k: [m[k] for m in per_seed] for k in keys}
        summary["overall"] = {k: statistics.fmean(v) for k, v in columns.items()} | counts
        summary["overall_sd"] = {k: statistics.stdev(v) for k, v in columns.items()} | counts
    elif records:
        summary["overall"] = _means(records, keys) | counts
    else:
        summary["overall"] = counts
    for block, field in GROUPINGS.items():
        summary[block] = {name: _block(rs, keys) for name, rs in _group(records, field).items()}
    return summary
