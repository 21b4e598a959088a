"""Failure tags, first departures and the failure count tree, on hand-made records."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.evaluation.failures import (
    MULTI_TAGS,
    TAGS,
    came_near,
    closest_approach_m,
    departure_histogram,
    episode_tags,
    failure_tree,
    first_departure,
    iter_tree,
    pick_mixed,
)

# Nodes on a meridian at the equator: 0.0001 degree of latitude is about 11 m.
COORDS = {"T": (0.0, 0.0), "N": (0.0003, 0.0), "F1": (0.001, 0.0), "F2": (0.002, 0.0), "F3": (0.003, 0.0)}


def record(path, *, end="stopped", success=False, ref=("F3", "F2", "F1", "N", "T"), latlon=True, **extra):
    rec = {"episode_id": extra.pop("episode_id", "e"), "seed": 0, "path": list(path), "reference_path": list(ref),
           "target": ref[-1] if ref else "T", "end_reason": end, "solvable": True, "steps": len(path) - 1,
           "metrics": {"tcp50": 100.0 if success else 0.0}}
    if latlon and all(n in COORDS for n in path):
        rec["path_latlon"] = [list(COORDS[n]) for n in path]
        rec["target_latlon"] = list(COORDS["T"])
    rec.update(extra)
    return rec


def test_success_clean_and_with_loop():
    assert episode_tags(record(["F3", "F2", "F1", "N", "T"], success=True)) == ["success"]
    looped = record(["F3", "F2", "F3", "F2", "F1", "N"], success=True)
    assert episode_tags(looped) == ["success", "success-with-loop"]  # no failure tags on a success


def test_premature_stop_and_overshoot_from_record_coordinates():
    assert episode_tags(record(["F3", "F2"])) == ["premature-stop"]
    passed = record(["F3", "F2", "F1", "N", "F1"])  # came within 33 m, stopped 110 m away
    assert episode_tags(passed) == ["loop", "overshoot"]
    assert closest_approach_m(passed) == pytest.approx(33.2, abs=0.5)
    assert episode_tags(record(["F3", "F2", "F1", "N", "T", "N", "F1"], end="budget_exhausted")) == \
        ["loop", "overshoot", "never-stopped"]


def test_oscillation_counts_as_a_loop():
    assert episode_tags(record(["F3", "F2", "F3"])) == ["loop", "premature-stop"]
    assert episode_tags(record(["F3", "F2", "F1", "F2"], end="budget_exhausted")) == ["loop", "never-stopped"]


def test_end_reasons_parse_errors_and_unsolvable():
    assert episode_tags(record(["F3", "F2"], end="budget_exhausted")) == ["never-stopped"]
    assert episode_tags(record(["F3"], end="error", error="boom")) == ["backend-error"]
    assert "backend-error" not in episode_tags(record(["F3"], end="invalid_action"))
    fell_back = record(["F3", "F2"], decisions=[{"step": 0, "fallback": False}, {"step": 1, "fallback": True}])
    assert episode_tags(fell_back) == ["premature-stop", "parse-error"]
    named = record(["F3", "F2"], decisions=[{"step": 0, "fallback": False, "parse_error": "no JSON"}])
    assert "parse-error" in episode_tags(named)
    ocr = record(["F3", "F2"], decisions=[{"step": 0, "action": 1, "reason": "explore"}])
    assert "parse-error" not in episode_tags(ocr)
    assert episode_tags(record(["F3", "F2"], solvable=False)) == ["premature-stop", "unsolvable"]
    assert episode_tags(record(["F3", "N"], success=True, solvable=False)) == ["success", "unsolvable"]


def test_distances_from_coords_then_osr_else_left_out():
    old = record(["F3", "F2", "F1", "N", "F1"], latlon=False)
    assert came_near(old) is None and closest_approach_m(old) is None
    assert episode_tags(old) == ["loop"]  # no coordinates: no distance-based tag
    assert episode_tags(old, COORDS) == ["loop", "overshoot"]
    assert episode_tags(record(["F3", "F2"], latlon=False), COORDS) == ["premature-stop"]
    assert episode_tags(record(["F3", "X"], latlon=False), COORDS) == []  # a node without coordinates
    osr = record(["F3", "F2"], latlon=False, metrics={"tcp50": 0.0, "osr": 100.0})
    assert episode_tags(osr) == ["overshoot"]
    osr["metrics"]["osr"] = 0.0
    assert episode_tags(osr) == ["premature-stop"]
    # the target from the reference's coordinates when target_latlon is missing
    ref_only = record(["F3", "F2"], latlon=False, path_latlon=[list(COORDS["F3"]), list(COORDS["F2"])],
                      reference_latlon=[list(COORDS[n]) for n in ("F3", "F2", "F1", "N", "T")])
    assert closest_approach_m(ref_only) == pytest.approx(221.1, abs=0.5)


@pytest.mark.parametrize("path, ref, expected", [
    (["A", "B", "C"], ["A", "B", "C"], None),      # followed the reference exactly
    (["A", "B", "X", "C"], ["A", "B", "C"], 2),    # move 2 (decision at step 1) went off it
    (["A", "X"], ["A", "B", "C"], 1),
    (["A", "B"], ["A", "B", "C"], 2),              # stopped short: the stop at step 1 departs
    (["A", "B", "C", "D"], ["A", "B", "C"], 3),    # walked past the target
    (["X", "B"], ["A", "B"], 0),
    (["A", "B"], [], None),                        # no reference: unknown
    ([], ["A"], None),
])
def test_first_departure(path, ref, expected):
    assert first_departure({"path": path, "reference_path": ref}) == expected


def test_departure_histogram_counts_failures_by_move():
    recs = [record(["F3", "F2", "F1", "N", "T"], success=True), record(["F3", "F2"]), record(["F3", "X"]),
            record(["F3", "X", "Y"]), record(["F3", "F2", "Y"])]
    assert departure_histogram(recs) == {1: 2, 2: 2}
    assert departure_histogram(recs, failed_only=False) == {1: 2, 2: 2, None: 1}


def mixed_records() -> list[dict]:
    return [
        record(["F3", "F2", "F1", "N", "T"], success=True),
        record(["F3", "F2", "F3", "F2", "F1", "N"], success=True),
        record(["F3", "F2"]),                                       # premature stop
        record(["F3", "F2", "F3"], solvable=False),                 # premature stop, loop, unsolvable
        record(["F3", "F2", "F1", "N", "F1"]),                      # stopped, overshoot, loop
        record(["F3", "F2", "F1", "N", "T", "N"], end="budget_exhausted"),
        record(["F3", "F2", "F1"], end="budget_exhausted", decisions=[{"step": 0, "fallback": True}]),
        record(["F3"], end="error"),
        record(["F3", "F2"], end="invalid_action", latlon=False),   # distance unknown
        record(["F3", "F2"], end="weird"),                          # an end reason we do not know
    ]


def test_tree_partitions_add_up_and_tags_are_counted():
    tree = failure_tree(mixed_records())
    for _, node in iter_tree(tree):
        if node["children"]:
            assert sum(c["count"] for c in node["children"]) == node["count"], node["key"]
        assert set(node["tags"]) == set(MULTI_TAGS)
        assert all(0 <= n <= node["count"] for n in node["tags"].values())
    nodes = {node["key"]: node for _, node in iter_tree(tree)}
    counts = {k: n["count"] for k, n in nodes.items()}
    assert counts["all"] == 10 and counts["success"] == 2 and counts["failure"] == 8
    assert counts["success/clean"] == 1 and counts["success/loop"] == 1
    assert [c["key"] for c in nodes["failure"]["children"]] == \
        ["stopped", "budget_exhausted", "error", "invalid_action", "other"]
    assert counts["stopped"] == 3 and counts["stopped/never-near"] == 2 and counts["stopped/overshoot"] == 1
    assert counts["budget_exhausted/overshoot"] == 1 and counts["budget_exhausted/never-near"] == 1
    assert counts["error"] == 1 and counts["error/never-near"] == 1
    assert counts["invalid_action/distance-unknown"] == 1 and counts["other"] == 1
    assert nodes["stopped"]["tags"] == {"loop": 2, "parse-error": 0, "unsolvable": 1}
    assert nodes["budget_exhausted"]["tags"]["parse-error"] == 1
    assert nodes["failure"]["tags"]["loop"] == 3  # multi-label: the loop chips cut across branches


def test_tree_shape_is_stable_and_coords_per_record():
    empty = failure_tree([])
    keys = [node["key"] for _, node in iter_tree(empty)]
    assert keys[:5] == ["all", "success", "success/clean", "success/loop", "failure"]
    assert "other" not in keys and all(node["count"] == 0 for _, node in iter_tree(empty))
    old = [record(["F3", "F2", "F1", "N", "F1"], latlon=False)]
    assert _count(failure_tree(old), "stopped/distance-unknown") == 1
    assert _count(failure_tree(old, COORDS), "stopped/overshoot") == 1
    assert _count(failure_tree(old, coords_for=lambda r: COORDS), "stopped/overshoot") == 1


def _count(tree: dict, key: str) -> int:
    return next(node["count"] for _, node in iter_tree(tree) if node["key"] == key)


def test_pick_mixed_takes_each_tag_in_turn():
    recs = [dict(record(["F3", "F2"]), episode_id=f"p{i}") for i in range(5)]                      # premature
    recs += [dict(record(["F3", "F2", "F1"], end="budget_exhausted"), episode_id=f"b{i}") for i in range(5)]
    recs += [dict(record(["F3", "N", "T"], success=True), episode_id=f"s{i}") for i in range(5)]
    tags = [episode_tags(r) for r in recs]
    picked = pick_mixed(recs, tags, 3)
    assert sorted(recs[i]["episode_id"][0] for i in picked) == ["b", "p", "s"]
    assert pick_mixed(recs, tags, 3) == picked  # deterministic
    assert len(set(pick_mixed(recs, tags, 40))) == 15
    assert pick_mixed(recs, tags, 0) == []
    assert set(TAGS) >= {t for ts in tags for t in ts}


def test_perception_split_partitions_the_failures_of_a_reading_policy():
    from cityseeker_ros.core.evaluation.failures import perception_tree, saw_satisfying

    def seen(step, text="Pharmacie"):
        return {"perception": {"satisfying_seen_step": step, "satisfying_text": text}}

    records = [
        record(["F3", "F2", "F1", "N", "T"], success=True, episode_id="ok", **seen(2)),
        record(["F3", "F2"], end="budget_exhausted", episode_id="blind", **seen(None, None)),
        record(["F3", "F2", "F3"], episode_id="elsewhere", **seen(1)),  # saw one, never within 50 m
        record(["F3", "F2", "F1", "N", "F1"], episode_id="passed", **seen(3)),  # within 33 m, stopped away
        record(["F3", "F2"], latlon=False, episode_id="nowhere", **seen(0)),  # no coordinates
        record(["F3", "F2"], episode_id="no-perception"),  # another policy: not counted here
    ]
    assert [saw_satisfying(r) for r in records] == [True, False, True, True, True, None]
    tree = perception_tree(records)
    children = {c["key"]: c["count"] for c in tree["children"]}
    assert children == {"perception/never-saw": 1, "perception/saw-not-went": 1, "perception/went-not-stopped": 1,
                        "perception/saw-distance-unknown": 1}
    assert tree["count"] == sum(children.values()) == 4  # the children partition the failures
    assert tree["tags"]["loop"] == 2  # "elsewhere" and "passed" revisit a node
    assert perception_tree([record(["F3", "F2"])]) is None  # no reading policy: no split


def test_report_shows_the_perception_split_only_for_reading_policies():
    from cityseeker_ros.core.evaluation.report.failures import analyse, failures_html, failures_md

    blind = record(["F3", "F2"], perception={"satisfying_seen_step": None, "satisfying_text": None})
    md = failures_md(analyse([blind]))
    assert "### Failures by what the agent saw" in md and "never saw a satisfying sign: **1**" in md
    assert "Failures by what the agent saw" in failures_html(analyse([blind]))
    assert "what the agent saw" not in failures_md(analyse([record(["F3", "F2"])]))


def test_a_wrong_answer_has_its_own_branch_where_the_family_answers():
    """Questions end by answering: a wrong answer is a failure branch of its own (split by how near
    the agent came), not 'other'; a needs tree has no such branch."""
    def question(path, correct=False):
        return record(path, end="answered", family="questions", metrics={"accuracy": 100.0 if correct else 0.0})

    out_of_steps = question(["F3"]) | {"end_reason": "budget_exhausted"}
    tree = failure_tree([question(["F3", "F2", "F1", "N", "T"], correct=True), question(["F3", "F2"]),
                         question(["F3", "F2", "F1", "N", "F1"]), out_of_steps])
    nodes = {node["key"]: node for _, node in iter_tree(tree)}
    assert [c["key"] for c in nodes["failure"]["children"]] == \
        ["stopped", "answered", "budget_exhausted", "error", "invalid_action"]
    assert nodes["success"]["count"] == 1 and nodes["answered"]["count"] == 2 and nodes["answered"]["label"] == \
        "Answered, not correctly"
    assert nodes["answered/never-near"]["count"] == 1 and nodes["answered/overshoot"]["count"] == 1
    assert "answered" not in {node["key"] for _, node in iter_tree(failure_tree(mixed_records()))}
