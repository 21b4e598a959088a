"""Reading a world folder's task files: every field checked, every error naming the file, the
record and the field. Families other than needs share one document shape (`episodes_from`)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.infra.jsonfile import read_json_object
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.tasks.episode import Episode

TASK_FILE_VERSION = "1"


def field(doc: Any, key: str, path: Path, kind: type | tuple[type, ...], record: Optional[str] = None) -> Any:
    """doc[key], which must be of `kind`; anything else is a DataError naming where."""
    value = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):  # JSON true is no number here
        raise DataError(path, f"expected {getattr(kind, '__name__', kind)}, got {value!r}"[:200],
                        record=record, field=key)
    return value


def split_tasks(doc: Any, path: Path, split: str) -> list[tuple[str, dict[str, Any]]]:
    """(record label, task) of every task of `split` in a task document, every id unique over the
    whole file; none is a DataError saying how many tasks the other splits hold."""
    chosen, seen = [], {}
    for i, t in enumerate(field(doc, "tasks", path, list)):
        rec = f"tasks[{i}]"
        task_id = field(t, "id", path, str, rec)
        if task_id in seen:
            raise DataError(path, f"task id {task_id!r} again (also {seen[task_id]})", record=rec, field="id")
        seen[task_id] = rec
        if field(t, "split", path, str, rec) == split:
            chosen.append((rec, t))
    if not chosen:
        raise DataError(path, f"no tasks in the {split!r} split (of {len(seen)} tasks)", field="tasks")
    return chosen


def check_nodes(nodes: Iterable[tuple[str, Any]], graph: StreetGraph, path: Path, record: str) -> None:
    for key, node in nodes:
        if node not in graph:
            raise DataError(path, f"node {node!r} is not in graph.json", record=record, field=key)


def episodes_from(path: Path, family: str, city: str, graph: StreetGraph, split: str,
                  categories: Optional[Iterable[str]] = None) -> list[Episode]:
    """The `split` episodes of a family's task file: {"version", "family", "tasks": [{id,
    category, difficulty, instruction, request, start, target, reference_path, split, budget?,
    details?}]}. Ids are unique, nodes are in the graph, categories are the family's."""
    doc = read_json_object(path)
    if field(doc, "family", path, str) != family:
        raise DataError(path, f"holds {doc['family']!r} tasks, not {family!r}", field="family")
    known = set(categories) if categories is not None else None
    episodes = []
    for rec, t in split_tasks(doc, path, split):
        task_id = t["id"]
        category = field(t, "category", path, str, rec)
        if known is not None and category not in known:
            raise DataError(path, f"unknown category {category!r}; known: {', '.join(sorted(known))}",
                            record=rec, field="category")
        route = tuple(field(t, "reference_path", path, list, rec))
        if not route:
            raise DataError(path, "empty", record=rec, field="reference_path")
        start, target = field(t, "start", path, str, rec), field(t, "target", path, str, rec)
        check_nodes([("start", start), ("target", target)] + [(f"reference_path[{k}]", n) for k, n in enumerate(route)],
                    graph, path, rec)
        budget = t.get("budget")
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
            raise DataError(path, f"expected a positive integer, got {budget!r}", record=rec, field="budget")
        details = t.get("details", {})
        if not isinstance(details, dict):
            raise DataError(path, f"expected an object, got {type(details).__name__}", record=rec, field="details")
        episodes.append(Episode(
            episode_id=task_id, city=city, category=category, difficulty=field(t, "difficulty", path, str, rec),
            instruction=field(t, "instruction", path, str, rec), request=field(t, "request", path, str, rec),
            start=start, target=target, reference_path=route, family=family, budget=budget, details=details))
    return episodes
