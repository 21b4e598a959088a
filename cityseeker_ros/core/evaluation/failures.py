"""Why episodes failed, in the style of VLN-MME's failure analysis: pure functions over
episode records (the dicts of episodes.jsonl), no I/O.

Tags are multi-label (`episode_tags`); `failure_tree` arranges them into a count tree whose
`children` always partition their parent, while each node's `tags` are overlapping
multi-label counts among its episodes.

Distances to the target (for "premature-stop" and "overshoot") come from, in this order:
the record's `path_latlon` and `target_latlon` (or the last `reference_latlon` point); the
optional `coords` mapping of node id -> (lat, lon) (the report builds it from the street
graph); the record's `metrics["osr"]` (oracle success: some path node within 50 m of the
target, the same test). With none of these the distance-based tags are left out, and the
tree counts such failures under "distance unknown".
"""
from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.streets.geodesy import pairwise_geodesic_m
from cityseeker_ros.core.tasks.family import TaskFamily, family_of_record, family_of_records

NEAR_M = 50.0  # the paper's TCP radius; also the OSR radius of metrics.py
TAGS = ("success", "success-with-loop", "loop", "premature-stop", "overshoot", "never-stopped",
        "parse-error", "backend-error", "unsolvable")
TAG_MEANING = {
    "success": "succeeded by the task family's measure (needs: final node within 50 m of the target, TCP50)",
    "success-with-loop": "success, but some node was visited more than once",
    "loop": "failure with a node visited more than once (A-B-A oscillation counts)",
    "premature-stop": "stopped, and no node of the path ever came within 50 m of the target",
    "overshoot": "failure although some node of the path came within 50 m of the target",
    "never-stopped": "the step budget ran out before the agent stopped",
    "parse-error": "a decision fell back because its reply could not be parsed",
    "backend-error": "the policy or its model backend raised an error",
    "unsolvable": "the target cannot be reached within the step budget",
}
MULTI_TAGS = ("loop", "parse-error", "unsolvable")  # shown beside the tree's partitions

Coords = Mapping[str, Sequence[float]]


def succeeded(record: Mapping[str, Any]) -> bool:
    """Success as the record's task family defines it (TCP50 for needs)."""
    try:
        key = family_of_record(record).success_metric
        return float((record.get("metrics") or {}).get(key) or 0.0) >= 100.0
    except (TypeError, ValueError):
        return False


def has_loop(record: Mapping[str, Any]) -> bool:
    path = list(record.get("path") or [])
    return len(set(path)) < len(path)


def _points(value: object) -> Optional[np.ndarray]:
    try:
        arr = np.asarray(value, dtype=float).reshape(-1, 2)
    except (TypeError, ValueError):
        return None
    return arr if len(arr) and np.isfinite(arr).all() else None


def _target_id(record: Mapping[str, Any]) -> Optional[str]:
    ref = record.get("reference_path") or []
    return record.get("target") or (ref[-1] if ref else None)


def target_distances(record: Mapping[str, Any], coords: Optional[Coords] = None) -> Optional[np.ndarray]:
    """Geodesic metres from every path node to the target, or None without coordinates."""
    path_ll = _points(record.get("path_latlon"))
    target_ll = _points(record.get("target_latlon"))
    if target_ll is None:
        ref_ll = _points(record.get("reference_latlon"))
        target_ll = ref_ll[-1:] if ref_ll is not None else None
    path = list(record.get("path") or [])
    if path_ll is None or target_ll is None:
        target = _target_id(record)
        if coords is None or not path or target is None:
            return None
        try:
            if path_ll is None:
                path_ll = np.array([coords[n][:2] for n in path], dtype=float).reshape(-1, 2)
            if target_ll is None:
                target_ll = np.array([coords[target][:2]], dtype=float)
        except KeyError:
            return None
    return pairwise_geodesic_m(path_ll, target_ll[:1])[:, 0]


def closest_approach_m(record: Mapping[str, Any], coords: Optional[Coords] = None) -> Optional[float]:
    d = target_distances(record, coords)
    return float(d.min()) if d is not None and len(d) else None


def came_near(record: Mapping[str, Any], coords: Optional[Coords] = None) -> Optional[bool]:
    """Did some path node come within 50 m of the target? None when that cannot be told."""
    d = target_distances(record, coords)
    if d is not None and len(d):
        return bool(d.min() <= NEAR_M)
    osr = (record.get("metrics") or {}).get("osr")
    if isinstance(osr, (int, float)) and not isinstance(osr, bool):
        return osr > 0.0
    return None


def parse_failed(record: Mapping[str, Any]) -> bool:
    return any(isinstance(d, Mapping) and (d.get("fallback") or d.get("parse_error"))
               for d in record.get("decisions") or ())


def episode_tags(record: Mapping[str, Any], coords: Optional[Coords] = None) -> list[str]:
    """The record's tags, in TAGS order. See the module docstring for where distances come
    from; without any, "premature-stop" and "overshoot" are left out."""
    ok, loop = succeeded(record), has_loop(record)
    reason = record.get("end_reason")
    tags = set()
    if ok:
        tags.add("success")
        if loop:
            tags.add("success-with-loop")
    else:
        if loop:
            tags.add("loop")
        near = came_near(record, coords)
        if near:
            tags.add("overshoot")
        elif near is False and reason == "stopped":
            tags.add("premature-stop")
    if reason == "budget_exhausted":
        tags.add("never-stopped")
    if reason == "error":
        tags.add("backend-error")
    if parse_failed(record):
        tags.add("parse-error")
    if record.get("solvable") is False:
        tags.add("unsolvable")
    return [t for t in TAGS if t in tags]


def first_departure(record: Mapping[str, Any]) -> Optional[int]:
    """The move (1-based) at which the path leaves the reference path: the length k of their
    common prefix, so the decision that left it is the one recorded with step k - 1 (made at
    path[k - 1]). A path that is a strict prefix of the reference (stopped short) departs with
    its stop; one that runs past the reference's end departs when it walks past the target.
    None when the path equals the reference or either is missing."""
    path = list(record.get("path") or [])
    ref = list(record.get("reference_path") or [])
    if not path or not ref or path == ref:
        return None
    k = 0
    for a, b in zip(path, ref):
        if a != b:
            break
        k += 1
    return k


def departure_histogram(records: Sequence[Mapping[str, Any]], *, failed_only: bool = True) -> dict[Optional[int], int]:
    """Episodes per first-departure move, in move order; key None counts the episodes that
    never left the reference (or have none)."""
    counts = Counter(first_departure(r) for r in records if not (failed_only and succeeded(r)))
    return {k: counts[k] for k in sorted(counts, key=lambda k: (k is None, k or 0))}


# ---------------------------------------------------------------- the count tree

END_LABELS = {"stopped": "Stopped", "budget_exhausted": "Never stopped (step budget ran out)",
              "error": "Backend error", "invalid_action": "Invalid actions"}
ANSWERED_LABEL = "Answered, not correctly"  # for families that take the answer action (questions)


def end_labels(family: TaskFamily) -> dict[str, str]:
    """The failure branches a family's episodes can end in: END_LABELS, with "answered" second
    where the family answers."""
    if "answer" not in family.actions:
        return dict(END_LABELS)
    labels = list(END_LABELS.items())
    return dict(labels[:1] + [("answered", ANSWERED_LABEL)] + labels[1:])


def _node(key: str, label: str, members: Sequence[tuple[Mapping[str, Any], list[str]]],
          children: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    tags = Counter(t for _, tags in members for t in tags if t in MULTI_TAGS)
    return {"key": key, "label": label, "count": len(members), "children": children or [],
            "tags": {t: tags[t] for t in MULTI_TAGS}}


def _distance_split(reason: str, members: list[tuple[Mapping[str, Any], list[str]]],
                    known: Sequence[bool]) -> list[dict[str, Any]]:
    over = [m for m, k in zip(members, known) if k and "overshoot" in m[1]]
    away = [m for m, k in zip(members, known) if k and "overshoot" not in m[1]]
    unknown = [m for m, k in zip(members, known) if not k]
    if reason == "stopped":
        labels = ("premature stop: never within 50 m of the target",
                  "overshoot: passed within 50 m, stopped elsewhere")
    else:
        labels = ("never within 50 m of the target", "overshoot: passed within 50 m of the target")
    return [_node(f"{reason}/never-near", labels[0], away), _node(f"{reason}/overshoot", labels[1], over),
            _node(f"{reason}/distance-unknown", "distance unknown (no coordinates)", unknown)]


def failure_tree(records: Sequence[Mapping[str, Any]], coords: Optional[Coords] = None,
                 coords_for: Optional[Callable[[Mapping[str, Any]], Optional[Coords]]] = None) -> dict[str, Any]:
    """A count tree over episodes. Every node is {key, label, count, children, tags}.

        all
        |- success                    (the family's success measure: TCP50 for needs)
        |  |- success/clean           no node visited twice
        |  `- success/loop            some node visited twice
        `- failure
           |- stopped                 one node per end reason, always in end_labels(family) order
           |  |- stopped/never-near   "premature stop"
           |  |- stopped/overshoot
           |  `- stopped/distance-unknown
           |- answered                (same three children) where the family answers: questions
           |- budget_exhausted        (same three children), error, invalid_action,
           `- other                   only when some record has another end reason

    `children` partition their parent: their counts add up to its count. `tags` counts the
    multi-label tags "loop", "parse-error" and "unsolvable" among the node's episodes; these
    overlap one another and cut across the children, so they do not add up. `coords` is one
    mapping for every record; `coords_for(record)` may give one per record (per city) instead.
    """
    tagged = []
    for r in records:
        c = coords_for(r) if coords_for is not None else coords
        tagged.append((r, episode_tags(r, c), c))
    wins = [(r, t) for r, t, _ in tagged if "success" in t]
    losses = [(r, t, c) for r, t, c in tagged if "success" not in t]
    family = family_of_records(records)
    success = _node("success", f"Success ({family.spec(family.success_metric).label})", wins, [
        _node("success/clean", "clean: no node visited twice", [m for m in wins if "success-with-loop" not in m[1]]),
        _node("success/loop", "with a loop: some node visited twice", [m for m in wins if "success-with-loop" in m[1]]),
    ])
    labels = end_labels(family)
    by_reason: dict[str, list[tuple[Mapping[str, Any], list[str], Any]]] = {k: [] for k in labels}
    others: list[tuple[Mapping[str, Any], list[str], Any]] = []
    for item in losses:
        by_reason.get(str(item[0].get("end_reason")), others).append(item)
    reasons = []
    for key, label in list(labels.items()) + ([("other", "Other end reasons")] if others else []):
        group = by_reason.get(key, others)
        members = [(r, t) for r, t, _ in group]
        known = [came_near(r, c) is not None for r, _, c in group]
        reasons.append(_node(key, label, members, _distance_split(key, members, known)))
    failure = _node("failure", "Failure", [(r, t) for r, t, _ in losses], reasons)
    return _node("all", "All episodes", [(r, t) for r, t, _ in tagged], [success, failure])


# ---------------------------------------------------------------- where perception lost it

PERCEPTION_LABELS = {
    "never-saw": "never saw a satisfying sign",
    "saw-not-went": "saw one but did not go there (never within 50 m of the target)",
    "went-not-stopped": "went there but did not stop (within 50 m of the target, ended elsewhere)",
    "saw-distance-unknown": "saw one; distance to the target unknown (no coordinates)",
}


def saw_satisfying(record: Mapping[str, Any]) -> Optional[bool]:
    """Did the agent read a sign it took to satisfy the need? From the record's `perception`
    (what a reading policy such as ocr-embed or sign-oracle reports); None when it has none."""
    perception = record.get("perception")
    if not isinstance(perception, Mapping):
        return None
    return perception.get("satisfying_seen_step") is not None


def perception_tree(records: Sequence[Mapping[str, Any]], coords: Optional[Coords] = None,
                    coords_for: Optional[Callable[[Mapping[str, Any]], Optional[Coords]]] = None
                    ) -> Optional[dict[str, Any]]:
    """Failures of a reading policy split by where the chain broke: it never read a satisfying sign
    (perception), read one but never came within 50 m of the target (it went elsewhere: another
    place, a misreading, or lost the sign), or came within 50 m and still failed (stopping). The
    children partition the failed episodes that report perception; None when none does."""
    failed = [r for r in records if not succeeded(r) and saw_satisfying(r) is not None]
    if not any(saw_satisfying(r) is not None for r in records):
        return None
    groups: dict[str, list[tuple[Mapping[str, Any], list[str]]]] = {k: [] for k in PERCEPTION_LABELS}
    for r in failed:
        c = coords_for(r) if coords_for is not None else coords
        tags = episode_tags(r, c)
        if not saw_satisfying(r):
            key = "never-saw"
        else:
            near = came_near(r, c)
            key = "saw-distance-unknown" if near is None else "went-not-stopped" if near else "saw-not-went"
        groups[key].append((r, tags))
    children = [_node(f"perception/{k}", PERCEPTION_LABELS[k], groups[k]) for k in PERCEPTION_LABELS]
    return _node("perception", "Failures by what the agent saw", [m for g in groups.values() for m in g], children)


def iter_tree(node: Mapping[str, Any], depth: int = 0) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """(depth, node) pairs, parents before children."""
    yield depth, node
    for child in node.get("children", ()):
        yield from iter_tree(child, depth + 1)


# ---------------------------------------------------------------- picking examples

def stable_order(records: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indices in a deterministic shuffle (by a hash of id and seed), so picks span cities and
    categories instead of following the file's order."""
    def key(i: int) -> str:
        r = records[i]
        return hashlib.sha1(f"{r.get('episode_id')}|{r.get('seed')}".encode()).hexdigest()
    return sorted(range(len(records)), key=key)


PICK_ORDER = ("premature-stop", "overshoot", "loop", "never-stopped", "parse-error", "backend-error",
              "unsolvable", "success-with-loop", "success")


def pick_mixed(records: Sequence[Mapping[str, Any]], tags: Sequence[Sequence[str]], k: int) -> list[int]:
    """Indices of up to k records, taken in turn from each tag of PICK_ORDER (a record counts
    once), so failures of every kind come before a second example of any one kind; untagged
    records fill up what is left."""
    order = stable_order(records)
    buckets = {t: [i for i in order if t in tags[i]] for t in PICK_ORDER}
    chosen: list[int] = []
    while len(chosen) < k and any(buckets.values()):
        for t in PICK_ORDER:
            bucket = buckets[t]
            while bucket and bucket[0] in chosen:
                bucket.pop(0)
            if bucket and len(chosen) < k:
                chosen.append(bucket.pop(0))
    rest = [i for i in order if i not in chosen]
    return chosen + rest[:max(0, k - len(chosen))]
