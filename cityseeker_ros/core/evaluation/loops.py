"""How an episode's walk looped: none, one backtrack, a repeated cycle, or persistent looping.

VLN-MME (../shared/papers/vln_mme.txt) finds looping the dominant failure: 106 of 131
navigation errors were "persistent looping" (Section 4.3), "where the agent repeatedly revisits
the same viewpoints" (Appendix E.2), and 42 of 52 successes looped near the target first. Its
prompt asks the agent not to "repeat recent viewpoints or oscillate" and, once "a viewpoint was
visited multiple times", to stop (Appendix D.2). A single return is not a loop there: going a
few nodes down a wrong street and coming back is what an explorer does.

The paper classifies its 200 trajectories by hand; the project's choice is a rule on the walk
(the record's `path`, the node after every move), so a comparison counts the classes the same
way on every run:

- `none`: no node reached twice;
- `backtrack`: exactly one return to a node already visited (A-B-A once; not a loop);
- `cycle`: two or more returns (A-B-A-B, a block walked round twice), after which the agent
  still reached a node it had not seen within its last PERSISTENT_RETURNS moves;
- `persistent`: the walk ends in PERSISTENT_RETURNS or more moves in a row that each return to
  a node already visited (A-B-A-B-A-B...: the agent never got out; VLN-MME's persistent looping).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

LOOP_CLASSES = ("none", "backtrack", "cycle", "persistent")
LOOP_LABELS = {"none": "no revisit", "backtrack": "one backtrack", "cycle": "repeated cycle",
               "persistent": "persistent looping"}
# Moves in a row, to the walk's end, that only return to visited nodes: two A-B-A-B swings.
PERSISTENT_RETURNS = 4


def moves(path: Sequence[Any]) -> list[Any]:
    """The walk with repeats of the same node in a row dropped (a turn in place is no move)."""
    out: list[Any] = []
    for node in path:
        if not out or out[-1] != node:
            out.append(node)
    return out


def returns(path: Sequence[Any]) -> list[bool]:
    """For each move after the start: whether it arrived at a node already visited."""
    walk = moves(path)
    seen, out = {walk[0]} if walk else set(), []
    for node in walk[1:]:
        out.append(node in seen)
        seen.add(node)
    return out


def loop_class(path: Sequence[Any]) -> str:
    """One of LOOP_CLASSES for a walk (the record's `path`)."""
    back = returns(path)
    trailing = 0
    for returned in reversed(back):
        if not returned:
            break
        trailing += 1
    if trailing >= PERSISTENT_RETURNS:
        return "persistent"
    count = sum(back)
    return "none" if count == 0 else "backtrack" if count == 1 else "cycle"


def loop_shares(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The % of episode records in each loop class (every class present, zeros included)."""
    counts = dict.fromkeys(LOOP_CLASSES, 0)
    n = 0
    for record in records:
        counts[loop_class(list(record.get("path") or []))] += 1
        n += 1
    return {k: (100.0 * v / n if n else 0.0) for k, v in counts.items()}
