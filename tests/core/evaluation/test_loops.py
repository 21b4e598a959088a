"""Loop classes of a walk: one return is a backtrack, not a loop; two or more a repeated cycle;
a walk that ends in returns only is VLN-MME's persistent looping."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.evaluation.loops import (
    LOOP_CLASSES,
    PERSISTENT_RETURNS,
    loop_class,
    loop_shares,
    moves,
    returns,
)


@pytest.mark.parametrize(("path", "expected"), [
    ([], "none"),
    (["A"], "none"),
    (["A", "B", "C", "D"], "none"),
    (["A", "A", "B", "B", "C"], "none"),  # turning in place is no move, so no revisit
    (["A", "B", "A"], "backtrack"),  # a single revisit ending the walk is still only a backtrack
    (["A", "B", "C", "B", "D", "E"], "backtrack"),  # tried a street, came back, went on
    (["A", "B", "A", "C", "A", "D"], "cycle"),  # back to A twice: not one backtrack any more
    (["A", "B", "A", "B", "C", "D"], "cycle"),  # an A-B-A-B swing, then out of it
    (["A", "B", "C", "A", "B", "C", "D"], "cycle"),  # a block walked round, then left
    (["A", "B", "A", "B", "A"], "cycle"),  # 3 returns in a row at the end: under the persistent threshold
    (["A", "B", "A", "B", "A", "B"], "persistent"),  # 4 returns in a row to the end
    (["S", "T", "U", "A", "B", "A", "B", "A", "B", "A"], "persistent"),
    (["A", "B", "C", "A", "B", "C", "A", "B"], "persistent"),  # a round repeated to the end
])
def test_each_walk_gets_its_class(path, expected):
    assert loop_class(path) == expected


def test_persistence_counts_only_the_returns_at_the_end():
    swing = ["A", "B"] * (PERSISTENT_RETURNS // 2 + 1)
    assert loop_class(swing) == "persistent"
    assert loop_class([*swing, "Z"]) == "cycle"  # it got out: a new node after the swing
    assert returns(["A", "B", "A", "A", "C"]) == [False, True, False]
    assert moves(["A", "A", "B", "A", "A"]) == ["A", "B", "A"]


def test_shares_are_percentages_of_records_over_every_class():
    records = [{"path": ["A", "B", "A"]}, {"path": ["A", "B"]}, {"path": ["A", "B", "A", "B", "A", "B"]},
               {"path": None}]
    shares = loop_shares(records)
    assert list(shares) == list(LOOP_CLASSES)
    assert shares == {"none": 50.0, "backtrack": 25.0, "cycle": 0.0, "persistent": 25.0}
    assert loop_shares([]) == dict.fromkeys(LOOP_CLASSES, 0.0)
