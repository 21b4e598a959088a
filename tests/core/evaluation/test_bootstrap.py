"""The paired bootstrap: its intervals against the exact bootstrap distribution computed here by
enumerating every resample, seeded determinism, pairing, and refusals."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from cityseeker_ros.core.evaluation.bootstrap import RESAMPLES, paired_bootstrap

# 2000 resamples: the standard error of an estimated 2.5% level is sqrt(.025 * .975 / 2000), under
# 0.0035; a bound may land anywhere between the exact quantiles 3 standard errors either side.
SLACK = 0.0105


def exact_distribution(rows: list[list[list[float]]]) -> list[tuple[float, ...]]:
    """Every resample of the two-stage bootstrap, equally likely: episodes with replacement, then
    within each drawn episode its seeds with replacement; each row's mean under that resample."""
    episodes, seeds = len(rows[0]), len(rows[0][0])
    out = []
    for drawn in itertools.product(range(episodes), repeat=episodes):
        for picks in itertools.product(itertools.product(range(seeds), repeat=seeds), repeat=episodes):
            out.append(tuple(sum(row[e][s] for e, ss in zip(drawn, picks) for s in ss) / (episodes * seeds)
                             for row in rows))
    return out


def quantile(values: list[float], p: float) -> float:
    """The smallest value whose share at or below it reaches p."""
    ordered = sorted(values)
    return ordered[max(math.ceil(p * len(ordered) - 1e-9) - 1, 0)]


def assert_within_exact(bound: float, values: list[float], p: float) -> None:
    lo, hi = quantile(values, max(p - SLACK, 0.0)), quantile(values, min(p + SLACK, 1.0))
    assert lo - 1e-9 <= bound <= hi + 1e-9, (bound, lo, hi)


REFERENCE = [[100.0, 0.0], [0.0, 100.0], [0.0, 0.0]]
AGENT = [[0.0, 100.0], [100.0, 0.0], [0.0, 100.0]]


def test_intervals_match_the_exact_bootstrap_distribution():
    exact = exact_distribution([REFERENCE, AGENT])
    assert len(exact) == 3 ** 3 * 4 ** 3
    result = paired_bootstrap([np.array(REFERENCE), np.array(AGENT)])
    agent_means = [a for _, a in exact]
    differences = [a - r for r, a in exact]
    mean, diff = result.means[1], result.differences[1]
    assert mean.estimate == pytest.approx(50.0) and diff.estimate == pytest.approx(50.0 - 100.0 / 3)
    assert_within_exact(mean.low, agent_means, 0.025)
    assert_within_exact(mean.high, agent_means, 0.975)
    assert_within_exact(diff.low, differences, 0.025)
    assert_within_exact(diff.high, differences, 0.975)
    # Exactly: the hand-computed quantiles themselves (no exact level sits within SLACK of a jump).
    assert (mean.low, mean.high) == pytest.approx((quantile(agent_means, 0.025), quantile(agent_means, 0.975)))
    assert (diff.low, diff.high) == pytest.approx((quantile(differences, 0.025), quantile(differences, 0.975)))
    assert result.differences[0] is None


def test_the_same_records_give_the_same_intervals_and_another_seed_may_not():
    rng = np.random.default_rng(7)
    rows = [rng.integers(0, 2, size=(30, 3)) * 100.0 for _ in range(3)]
    first, again = paired_bootstrap(rows), paired_bootstrap([r.copy() for r in rows])
    assert first == again
    assert paired_bootstrap(rows, seed=1) != first


def test_pairing_removes_what_both_rows_share():
    rng = np.random.default_rng(3)
    base = rng.normal(50.0, 30.0, size=(40, 2))
    result = paired_bootstrap([base, base + 5.0, base.copy()])
    shifted, same = result.differences[1], result.differences[2]
    assert (shifted.low, shifted.estimate, shifted.high) == pytest.approx((5.0, 5.0, 5.0))
    assert (same.low, same.high) == (0.0, 0.0) and not same.excludes_zero() and shifted.excludes_zero()
    # Unpaired, the same shift would drown in the episodes' spread: the row's own interval is wide.
    assert result.means[1].high - result.means[1].low > 10.0


def test_rows_with_other_seed_counts_and_a_chosen_reference():
    one_seed = np.array([[100.0], [0.0], [100.0], [0.0]])
    five_seeds = np.tile(one_seed, (1, 5))
    result = paired_bootstrap([one_seed, five_seeds], reference=1)
    assert result.differences[1] is None
    assert (result.differences[0].low, result.differences[0].high) == (0.0, 0.0)  # same values, same episodes
    assert result.means[0].estimate == result.means[1].estimate == 50.0


@pytest.mark.parametrize(("rows", "kw", "match"), [
    ([], {}, "no rows"),
    ([np.zeros((3, 1)), np.zeros((4, 1))], {}, "same episodes"),
    ([np.zeros((0, 1))], {}, "same episodes"),
    ([np.zeros((3, 0))], {}, "at least one seed"),
    ([np.zeros(3)], {}, "same episodes"),
    ([np.zeros((3, 1))], {"reference": 1}, "reference row 1"),
    ([np.zeros((3, 1))], {"resamples": 0}, "resamples"),
    ([np.zeros((3, 1))], {"level": 1.0}, "level"),
])
def test_bad_input_is_refused_naming_it(rows, kw, match):
    with pytest.raises(ValueError, match=match):
        paired_bootstrap(rows, **kw)


def test_the_default_resamples_are_what_the_slack_assumes():
    assert RESAMPLES == 2000
