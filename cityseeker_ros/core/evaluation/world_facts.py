"""A family's world facts (config.json's `task_family.world`) as lines a person reads.

The facts are nested JSON (a landmark list, distributions of route lengths, rule texts); printed
as they are they read as a raw Python dict at the end of a long run. Here each fact becomes
one line, "label: value", with the unit its key names (`_m` metres, `_deg` degrees, `_s`
seconds), a distribution as its range with median and mean, and a count beside the names it
counts (`landmarks` with `landmark_names`). Any family's facts read this way; none is named.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

DISTRIBUTION_KEYS = frozenset({"n", "min", "median", "max", "mean"})
UNITS = {"_m": " m", "_deg": "°", "_s": " s"}  # key suffix -> unit written after the value
NAMES_SUFFIX = "_names"


def world_facts_lines(world: Mapping[str, Mapping[str, Any]], indent: str = "  ") -> list[str]:
    """One heading per city ("monaco, the world's task facts:") and one line per fact under it."""
    lines = []
    for city, facts in sorted(world.items()):
        lines.append(f"{indent}{city}, the world's task facts:")
        lines += [f"{indent}  {line}" for line in fact_lines(facts)]
    return lines


def fact_lines(facts: Mapping[str, Any], prefix: str = "") -> list[str]:
    """'label: value' for each fact; a mapping of mappings gives one line per inner entry."""
    lines = []
    for key, value in facts.items():
        if key.endswith(NAMES_SUFFIX) and any(_is_count(facts.get(k)) for k in _counts_of(key)):
            continue  # written beside its count
        label = prefix + label_of(key)
        if isinstance(value, Mapping) and value and not is_distribution(value) and any(
                isinstance(v, Mapping) for v in value.values()):
            lines += fact_lines(value, prefix=label + ", ")
            continue
        text = value_text(key, value)
        names = next((facts[k] for k in _names_of(key) if k in facts), None)
        if _is_count(value) and isinstance(names, list) and names:
            text += f" ({', '.join(map(str, names))})"
        lines.append(f"{label}: {text}")
    return lines


def label_of(key: str) -> str:
    """'node_spacing_m' -> 'node spacing'; a bare 'm' (a length) -> 'length'."""
    if key == "m":
        return "length"
    return _strip_unit(key).replace("_", " ")


def value_text(key: str, value: Any) -> str:
    unit = unit_of(key)
    if isinstance(value, Mapping):
        if not value:
            return "none"
        if is_distribution(value):
            return distribution_text(value, unit)
        return ", ".join(f"{label_of(k)} {value_text(k, v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if all(_is_scalar(v) for v in value):
            return ", ".join(number_text(v) for v in value) if value else "none"
        return json.dumps(value, ensure_ascii=False)
    return number_text(value) + (unit if isinstance(value, (int, float)) and not isinstance(value, bool) else "")


def distribution_text(dist: Mapping[str, Any], unit: str = "") -> str:
    """'8–50 m (median 31 m, mean 30.5 m, n 100)'; 'none' for an empty one."""
    if dist.get("n") == 0 or "min" not in dist or "max" not in dist:
        return "none"
    extra = [f"{k} {number_text(dist[k])}{unit}" for k in ("median", "mean") if k in dist]
    if "n" in dist:
        extra.append(f"n {number_text(dist['n'])}")
    span = f"{number_text(dist['min'])}–{number_text(dist['max'])}{unit}"
    return span + (f" ({', '.join(extra)})" if extra else "")


def number_text(value: Any) -> str:
    """1636 -> '1,636', 31.0 -> '31', 30.54 -> '30.54'; anything else as str()."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}".rstrip("0").rstrip(".")


def is_distribution(value: Mapping[str, Any]) -> bool:
    return bool(value) and set(value) <= DISTRIBUTION_KEYS


def unit_of(key: str) -> str:
    if key == "m":
        return " m"
    return next((unit for suffix, unit in UNITS.items() if key.endswith(suffix)), "")


def _strip_unit(key: str) -> str:
    suffix = next((s for s in UNITS if key.endswith(s) and len(key) > len(s)), "")
    return key[: -len(suffix)] if suffix else key


def _counts_of(names_key: str) -> tuple[str, str]:
    """The keys that may count `names_key`'s names: 'landmark_names' -> landmark, landmarks."""
    base = names_key[: -len(NAMES_SUFFIX)]
    return base, base + "s"


def _names_of(count_key: str) -> tuple[str, ...]:
    """The keys that may name what `count_key` counts: 'landmarks' -> landmarks_names, landmark_names."""
    keys = (count_key + NAMES_SUFFIX,)
    return keys + ((count_key[:-1] + NAMES_SUFFIX,) if count_key.endswith("s") else ())


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))
