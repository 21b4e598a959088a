"""Where each fact of a question comes from: the map (OSM's names, classes and positions) or the
renderer (the facade colour it picks from its palette, the storeys it draws). Each task file
records this per question (`details.facts`), because a researcher scoring a perception model on a
made-up colour measures the renderer, not the town; a run can keep only the questions whose every
fact is the map's (`--facts map`, `keep_facts`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from cityseeker_ros.core.infra.errors import ConfigError

MAP, RENDERER = "map", "renderer"
FACT_SETTINGS: tuple[str, ...] = ("all", MAP)  # `--facts`: every question, or the map's only
T = TypeVar("T")

# Per kind, the facts its answer rests on beyond the two every question states (the anchor's name
# and its direction from the start, both the map's), with their source and what they are made from.
_ANSWER_FACTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "name": (("target name", MAP, "OSM name (or brand) tag"),
             ("target direction from the anchor", MAP, "OSM positions")),
    "category": (("target kind", MAP, "OSM class tag"), ("target direction from the anchor", MAP, "OSM positions")),
    "relation": (("direction", MAP, "OSM positions of both places"),),
    "existence": (("presence", MAP, "OSM classes and positions of every place of the kind"),),
    "counting": (("count", MAP, "OSM classes and positions of every place of the kind"),),
    "colour": (("facade colour", RENDERER, "palette style picked from the building id"),
               ("target direction from the anchor", MAP, "OSM positions")),
    "floors": (("storeys", RENDERER, "storeys drawn from building:levels or a guessed height"),
               ("target direction from the anchor", MAP, "OSM positions")),
}


def facts_of(kind: str) -> list[dict[str, str]]:
    """The facts a question of `kind` states or asks, each {"fact", "source", "from"}."""
    if kind not in _ANSWER_FACTS:
        raise ValueError(f"unknown question kind {kind!r}; known: {', '.join(_ANSWER_FACTS)}")
    stated = [("anchor name", MAP, "OSM name tag"), ("anchor direction from the start", MAP, "OSM positions")]
    return [{"fact": f, "source": s, "from": w} for f, s, w in stated + list(_ANSWER_FACTS[kind])]


def sources(details: Mapping[str, Any]) -> set[str]:
    """The sources of a question's facts: its recorded `facts`, else (a task file written before they
    were recorded) those of its kind."""
    recorded = details.get("facts")
    facts = recorded if isinstance(recorded, list) else facts_of(str(details.get("kind")))
    return {str(f.get("source")) for f in facts if isinstance(f, Mapping)}


def check_setting(facts: str) -> str:
    if facts not in FACT_SETTINGS:
        raise ConfigError(f"--facts {facts!r}: choose one of {', '.join(FACT_SETTINGS)} (map: only questions whose "
                          "every fact is the map's, no renderer-made colours or storeys)")
    return facts


def keep_facts(items: Iterable[T], facts: str = "all",
               details_of: Callable[[T], Mapping[str, Any]] = lambda t: t.details) -> list[T]:  # type: ignore
    """The items (episodes by default; `details_of` reads another shape) that `facts` keeps: "all"
    every one, "map" those whose every fact comes from the map."""
    check_setting(facts)
    items = list(items)
    if facts == "all":
        return items
    return [t for t in items if sources(details_of(t)) == {MAP}]
