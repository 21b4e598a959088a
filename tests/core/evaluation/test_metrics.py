"""Golden tests for the episode metrics and their summaries.

Every node lies on the equator. The equator is a geodesic of the WGS84 ellipsoid, so two
nodes dlon radians apart are exactly A * dlon metres apart (A = 6378137 m, the semi-major
axis; 0.0001 deg is 11.132 m). Node "x120" sits 120 m east of longitude 0, which makes
every expected value below plain arithmetic on the names.
"""
from __future__ import annotations

import json
import math
import random

import pytest

from cityseeker_ros.core.evaluation.metrics import summarize
from cityseeker_ros.core.streets.geodesy import geodesic_m
from cityseeker_ros.core.streets.graph import Node, StreetGraph
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.needs.metrics import MEASURES, METRIC_KEYS, episode_metrics

A = 6378137.0
POSITIONS_M = (-50, 0, 10, 20, 39, 40, 41, 49, 51, 59, 61, 100, 120, 130, 150, 200, 230)


def x(metres: int) -> str:
    return f"x{metres}"


def make_world(category_targets: dict[str, frozenset[str]] | None = None) -> World:
    nodes = [Node(x(m), 0.0, math.degrees(m / A), 0.0, ()) for m in POSITIONS_M]
    return World("equator", StreetGraph(nodes, []), [], category_targets or {})


def make_episode(target: str, reference: tuple[str, ...], request: str = "pharmacy") -> Episode:
    return Episode("e1", "equator", "Basic POI", "easy", "find a pharmacy", request,
                   reference[0], target, reference)


def metrics(path: list[str], target: str, reference: tuple[str, ...], *, solvable: bool = True,
            category_targets: dict[str, frozenset[str]] | None = None,
            **kwargs) -> dict[str, float]:
    world = make_world(category_targets)
    return episode_metrics(world, make_episode(target, reference), path, solvable, **kwargs)


def approx(value: float) -> object:
    return pytest.approx(value, rel=1e-9, abs=1e-6)


def test_fixture_spacing_is_exact_metres():
    # Guards the premise above: A * (lon in radians) is the geodesic along the equator.
    assert geodesic_m(0.0, 0.0, 0.0, 0.0001) == approx(A * math.radians(0.0001))
    assert A * math.radians(0.0001) == pytest.approx(11.132, abs=1e-3)
    assert geodesic_m(0.0, math.degrees(-50 / A), 0.0, math.degrees(230 / A)) == approx(280.0)


def test_keys_are_exactly_the_registered_measures_in_order():
    assert METRIC_KEYS == ("tce", "tcp40", "tcp50", "tcp60", "tcc", "spl", "spd",
                           "dtw_per_ref_m", "ndtw", "osr", "as", "solvable")
    assert sorted(METRIC_KEYS) == MEASURES.names()
    m = metrics([x(0), x(100)], x(100), (x(0), x(100)))
    assert tuple(m) == METRIC_KEYS
    assert all(type(v) is float for v in m.values())


def test_exact_hit_on_the_reference_route():
    m = metrics([x(0), x(10), x(100)], x(100), (x(0), x(10), x(100)))
    assert m == {"tce": 100.0, "tcp40": 100.0, "tcp50": 100.0, "tcp60": 100.0, "tcc": 100.0,
                 "spl": approx(100.0), "spd": approx(0.0), "dtw_per_ref_m": approx(0.0),
                 "ndtw": approx(100.0), "osr": 100.0, "as": 2.0, "solvable": 100.0}


@pytest.mark.parametrize("final_m, tcp40, tcp50, tcp60", [
    (39, 100.0, 100.0, 100.0),
    (41, 0.0, 100.0, 100.0),
    (49, 0.0, 100.0, 100.0),
    (51, 0.0, 0.0, 100.0),
    (59, 0.0, 0.0, 100.0),
    (61, 0.0, 0.0, 0.0),
])
def test_tcp_thresholds(final_m, tcp40, tcp50, tcp60):
    # Start at 100 m, target at 0 m, stop final_m metres short of it.
    m = metrics([x(100), x(final_m)], x(0), (x(100), x(0)))
    assert (m["tcp40"], m["tcp50"], m["tcp60"]) == (tcp40, tcp50, tcp60)
    assert m["tce"] == 0.0
    assert m["spd"] == approx(final_m)


def test_tcc_counts_another_target_of_the_same_request():
    # Ends at 200 m: 200 m from its own target (x0) but 30 m from another pharmacy (x230).
    targets = {"pharmacy": frozenset({x(0), x(230)}), "bank": frozenset({x(-50)})}
    m = metrics([x(100), x(200)], x(0), (x(100), x(0)), category_targets=targets)
    assert m["tcc"] == 100.0
    assert m["tcp60"] == 0.0 and m["spd"] == approx(200.0)


def test_tcc_ignores_targets_of_other_requests():
    # Same ending, but the target 30 m away is a bank, not a pharmacy.
    targets = {"pharmacy": frozenset({x(0)}), "bank": frozenset({x(230)})}
    m = metrics([x(100), x(200)], x(0), (x(100), x(0)), category_targets=targets)
    assert m["tcc"] == 0.0


@pytest.mark.parametrize("final_m, tcc", [(49, 100.0), (51, 0.0)])
def test_tcc_falls_back_to_the_own_target_for_an_unknown_request(final_m, tcc):
    targets = {"bank": frozenset({x(final_m)})}  # right at the final node, but the wrong request
    m = metrics([x(100), x(final_m)], x(0), (x(100), x(0)), category_targets=targets)
    assert m["tcc"] == tcc


def test_spl_with_a_detour_that_still_succeeds():
    # Reference 0 -> 10 -> 100: l = 100 m.
    # Walked 0 -> 100 -> 150 -> 120: p = 100 + 50 + 30 = 180 m.
    # Ends 20 m from the target, so TCP@50 succeeds: SPL = 100 * 100 / max(180, 100) = 55.555...
    m = metrics([x(0), x(100), x(150), x(120)], x(100), (x(0), x(10), x(100)))
    assert m["spl"] == approx(100.0 * 100.0 / 180.0)
    assert m["spd"] == approx(20.0)
    assert m["tce"] == 0.0 and m["as"] == 3.0


def test_spl_caps_a_shortcut_at_one():
    # Reference detours 0 -> -50 -> 100: l = 50 + 150 = 200 m; walked 0 -> 100: p = 100 m.
    # SPL = 100 * 200 / max(100, 200) = 100, not 200.
    m = metrics([x(0), x(100)], x(100), (x(0), x(-50), x(100)))
    assert m["spl"] == approx(100.0)


def test_spl_is_zero_on_failure():
    # Ends 59 m from the target: TCP@60 holds but SPL's success (TCP@50) does not.
    m = metrics([x(100), x(59)], x(0), (x(100), x(0)))
    assert m["tcp60"] == 100.0
    assert m["spl"] == 0.0


def test_spl_of_a_zero_length_episode_is_perfect():
    # Start is the target and the reference is one node: l = p = 0, ratio taken as 1.
    m = metrics([x(0)], x(0), (x(0),))
    assert m["spl"] == 100.0
    assert m["tce"] == 100.0 and m["as"] == 0.0 and m["dtw_per_ref_m"] == approx(0.0)


# Agent path A = (0, 20, 40), reference R = (0, 10, 20); cost c = |a - r| metres:
#            r=0  r=10  r=20
#    a=0       0    10    20
#    a=20     20    10     0
#    a=40     40    30    20
# Accumulated D[i][j] = c[i][j] + min(D[i-1][j], D[i][j-1], D[i-1][j-1]):
#    a=0       0    10    30
#    a=20     20    10    10
#    a=40     60    40    30
# DTW = 30 m, |R| = 3 nodes.
DTW_PATH, DTW_REF = [x(0), x(20), x(40)], (x(0), x(10), x(20))


def test_dtw_per_reference_node_by_hand():
    m = metrics(DTW_PATH, x(20), DTW_REF)
    assert m["dtw_per_ref_m"] == approx(30.0 / 3)


@pytest.mark.parametrize("d_th, expected", [
    (50.0, 100.0 * math.exp(-30.0 / (3 * 50.0))),  # exp(-0.2) = 0.81873
    (10.0, 100.0 * math.exp(-30.0 / (3 * 10.0))),  # exp(-1)   = 0.36788
])
def test_ndtw_by_hand(d_th, expected):
    m = metrics(DTW_PATH, x(20), DTW_REF, dtw_threshold_m=d_th)
    assert m["ndtw"] == approx(expected)
    assert m["dtw_per_ref_m"] == approx(10.0)  # the threshold only affects nDTW


def test_ndtw_default_threshold_is_50m():
    assert metrics(DTW_PATH, x(20), DTW_REF)["ndtw"] == approx(100.0 * math.exp(-0.2))


def test_ndtw_rejects_a_non_positive_threshold():
    with pytest.raises(ValueError):
        metrics(DTW_PATH, x(20), DTW_REF, dtw_threshold_m=0.0)


def test_oracle_success_when_the_path_passed_the_target():
    # Target at 120 m; the path passes 130 m (10 m away) and ends at 200 m (80 m away).
    m = metrics([x(0), x(100), x(130), x(200)], x(120), (x(0), x(100), x(120)))
    assert m["osr"] == 100.0
    assert m["tcp60"] == 0.0 and m["spl"] == 0.0 and m["spd"] == approx(80.0)


def test_no_oracle_success_when_the_path_never_came_close():
    # Target at 120 m; the path's closest node is x59, 61 m away (x200 is 80 m away).
    m = metrics([x(0), x(59), x(200)], x(120), (x(0), x(100), x(120)))
    assert m["osr"] == 0.0


def test_single_node_path_stopped_at_start():
    # Path (0), reference (0, 10, 100), target 100.
    # Costs 0, 10, 100 in one row, so DTW = 0 + 10 + 100 = 110; per reference node 110 / 3.
    m = metrics([x(0)], x(100), (x(0), x(10), x(100)))
    assert m["as"] == 0.0
    assert m["spd"] == approx(100.0)
    assert m["spl"] == 0.0 and m["osr"] == 0.0 and m["tce"] == 0.0
    assert m["dtw_per_ref_m"] == approx(110.0 / 3)
    assert m["ndtw"] == approx(100.0 * math.exp(-110.0 / 150.0))


def test_repeated_nodes_count_as_steps_and_warp_in_dtw():
    # Path A = (0, 0, 20, 20) against R = (0, 10, 20):
    #            r=0  r=10  r=20          D:  r=0  r=10  r=20
    #    a=0       0    10    20      a=0       0    10    30
    #    a=0       0    10    20      a=0       0    10    30
    #    a=20     20    10     0      a=20     20    10    10
    #    a=20     20    10     0      a=20     40    20    10
    # DTW = 10 m. Walked p = 0 + 20 + 0 = 20 m = l, so SPL = 100. Three actions were taken.
    m = metrics([x(0), x(0), x(20), x(20)], x(20), (x(0), x(10), x(20)))
    assert m["as"] == 3.0
    assert m["dtw_per_ref_m"] == approx(10.0 / 3)
    assert m["spl"] == approx(100.0)
    assert m["tce"] == 100.0


@pytest.mark.parametrize("flag, expected", [(True, 100.0), (False, 0.0)])
def test_solvable_is_passed_through(flag, expected):
    assert metrics([x(0)], x(100), (x(0), x(100)), solvable=flag)["solvable"] == expected


def test_empty_path_is_rejected():
    with pytest.raises(ValueError, match="empty path"):
        metrics([], x(100), (x(0), x(100)))


# --- summarize -------------------------------------------------------------------------


def record(episode_id: str, seed: int, city: str, category: str, difficulty: str,
           tce: float, spd: float) -> dict:
    """An episodes.jsonl record; only tce and spd vary, every other metric is 1.0."""
    values = {k: 1.0 for k in METRIC_KEYS} | {"tce": tce, "spd": spd}
    return {"episode_id": episode_id, "seed": seed, "city": city, "category": category,
            "difficulty": difficulty, "metrics": values, "policy": "random"}


# e1 and e2 in both seeds, e3 only in seed 0; given out of order on purpose.
TWO_SEEDS = [
    record("e2", 0, "hongkong6", "Latent POI", "hard", tce=0.0, spd=30.0),
    record("e1", 1, "beijing1", "Basic POI", "easy", tce=0.0, spd=20.0),
    record("e1", 0, "beijing1", "Basic POI", "easy", tce=100.0, spd=10.0),
    record("e3", 0, "hongkong6", "Basic POI", "medium", tce=100.0, spd=20.0),
    record("e2", 1, "hongkong6", "Latent POI", "hard", tce=0.0, spd=50.0),
]


def test_summarize_two_seeds_overall_is_the_mean_of_seed_means():
    s = summarize(TWO_SEEDS)
    # Seed 0: tce (100 + 0 + 100) / 3 = 66.667, spd (10 + 30 + 20) / 3 = 20.
    # Seed 1: tce (0 + 0) / 2 = 0,              spd (20 + 50) / 2 = 35.
    # Overall: tce 33.333, spd 27.5 (pooling all five would give 40 and 26).
    assert s["overall"]["tce"] == approx(100.0 / 3)
    assert s["overall"]["spd"] == approx(27.5)
    assert s["overall"]["spl"] == approx(1.0)
    assert s["overall"]["episodes"] == 3
    assert s["overall"]["seeds"] == 2


def test_summarize_two_seeds_sd_by_hand():
    sd = summarize(TWO_SEEDS)["overall_sd"]
    # Two values a, b: sample sd = |a - b| / sqrt(2).
    assert sd["tce"] == approx((200.0 / 3) / math.sqrt(2))  # 47.140
    assert sd["spd"] == approx(15.0 / math.sqrt(2))          # 10.607
    assert sd["as"] == approx(0.0)
    assert set(sd) == set(METRIC_KEYS) | {"episodes", "seeds"}
    assert (sd["episodes"], sd["seeds"]) == (3, 2)


def test_summarize_groups_pool_all_seeds_and_count_distinct_episodes():
    s = summarize(TWO_SEEDS)
    assert list(s) == ["overall", "overall_sd", "by_category", "by_city", "by_difficulty"]
    basic, latent = s["by_category"]["Basic POI"], s["by_category"]["Latent POI"]
    # Basic POI: e1/s0, e1/s1, e3/s0 -> tce (100 + 0 + 100) / 3, spd (10 + 20 + 20) / 3;
    # 2 distinct episodes.
    assert basic["tce"] == approx(200.0 / 3) and basic["spd"] == approx(50.0 / 3)
    assert basic["episodes"] == 2
    # Latent POI: e2/s0, e2/s1 -> tce 0, spd (30 + 50) / 2 = 40; 1 episode.
    assert latent["tce"] == 0.0 and latent["spd"] == approx(40.0) and latent["episodes"] == 1
    # by_city: beijing1 holds e1 twice -> spd 15; hongkong6 holds e2 twice and e3 -> spd 100 / 3.
    assert s["by_city"]["beijing1"]["spd"] == approx(15.0)
    assert s["by_city"]["beijing1"]["episodes"] == 1
    assert s["by_city"]["hongkong6"]["spd"] == approx(100.0 / 3)
    assert s["by_city"]["hongkong6"]["episodes"] == 2
    assert list(s["by_difficulty"]) == ["easy", "hard", "medium"]
    assert list(s["by_city"]) == ["beijing1", "hongkong6"]


def test_summarize_is_order_independent_and_json_clean():
    shuffled = TWO_SEEDS[:]
    random.Random(7).shuffle(shuffled)
    s = summarize(TWO_SEEDS)
    assert json.dumps(s, allow_nan=False) == json.dumps(summarize(shuffled), allow_nan=False)
    assert list(s["overall"]) == list(METRIC_KEYS) + ["episodes", "seeds"]


def test_summarize_one_seed_is_a_plain_mean_without_sd():
    records = [r for r in TWO_SEEDS if r["seed"] == 0]
    s = summarize(records)
    assert "overall_sd" not in s
    assert s["overall"]["tce"] == approx(200.0 / 3)
    assert s["overall"]["spd"] == approx(20.0)
    assert (s["overall"]["episodes"], s["overall"]["seeds"]) == (3, 1)


def test_summarize_counts_same_id_in_two_cities_as_two_episodes():
    records = [record("0", 0, "beijing1", "Basic POI", "easy", 0.0, 1.0),
               record("0", 0, "london7", "Basic POI", "easy", 0.0, 1.0)]
    assert summarize(records)["overall"]["episodes"] == 2


def test_summarize_nothing():
    assert summarize([]) == {"overall": {"episodes": 0, "seeds": 0},
                             "by_category": {}, "by_city": {}, "by_difficulty": {}}


def test_summarize_names_a_missing_metric():
    broken = record("e1", 0, "beijing1", "Basic POI", "easy", 0.0, 1.0)
    del broken["metrics"]["osr"]
    with pytest.raises(ValueError, match="osr"):
        summarize([broken])
