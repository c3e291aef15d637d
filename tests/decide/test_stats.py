"""The paired statistics, checked by hand and against scipy.stats on the same data."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from recall_kit.decide import stats


def _mean_difference(x, y, axis=-1):
    return np.mean(y - x, axis=axis)


def _sample(n: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = np.clip(a + shift + rng.normal(0, 0.2, n), 0, 1)
    return a, b


def test_bootstrap_by_hand_on_a_constant_difference():
    # Every query improves by exactly 0.25: every resample's mean is 0.25.
    interval = stats.paired_bootstrap([0.0, 0.25, 0.5], [0.25, 0.5, 0.75], n_resamples=500, seed=1)
    assert interval.delta == pytest.approx(0.25)
    assert interval.low == pytest.approx(0.25) and interval.high == pytest.approx(0.25)
    assert interval.prob_not_better == 0.0


def test_bootstrap_is_seeded():
    a, b = _sample(50, 0.05, 3)
    first = stats.paired_bootstrap(a, b, n_resamples=2000, seed=7)
    again = stats.paired_bootstrap(a, b, n_resamples=2000, seed=7)
    other = stats.paired_bootstrap(a, b, n_resamples=2000, seed=8)
    assert first == again
    assert (first.low, first.high) != (other.low, other.high)


def test_bootstrap_chunks_give_the_same_numbers(monkeypatch):
    a, b = _sample(40, 0.05, 4)
    whole = stats.bootstrap_means(b - a, 1000, seed=5)
    monkeypatch.setattr(stats, "_CHUNK_CELLS", 40 * 7)  # 7 rows a chunk, 143 chunks
    chunked = stats.bootstrap_means(b - a, 1000, seed=5)
    # Drawing rows in chunks consumes the generator in the same order as one big draw.
    np.testing.assert_array_equal(whole, chunked)


@pytest.mark.parametrize("shift", [0.0, 0.08])
def test_bootstrap_agrees_with_scipy_paired_percentile(shift):
    a, b = _sample(120, shift, 11)
    ours = stats.paired_bootstrap(a, b, n_resamples=20_000, seed=0)
    theirs = scipy.stats.bootstrap(
        (a, b), _mean_difference, paired=True, vectorized=True, method="percentile",
        n_resamples=20_000, confidence_level=0.95, rng=np.random.default_rng(123),
    )
    # Monte-Carlo tolerance: the standard error of a 2.5% quantile over 20k resamples is far
    # below a tenth of the bootstrap standard error.
    tolerance = 0.1 * theirs.standard_error
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=tolerance)
    assert ours.delta == pytest.approx(float(np.mean(b - a)))


def test_prob_not_better_matches_the_normal_approximation():
    a, b = _sample(200, 0.03, 12)
    ours = stats.paired_bootstrap(a, b, n_resamples=20_000, seed=0)
    d = b - a
    standard_error = d.std(ddof=0) / np.sqrt(d.size)
    expected = scipy.stats.norm.cdf(0, loc=d.mean(), scale=standard_error)
    assert ours.prob_not_better == pytest.approx(expected, abs=0.02)


def test_randomisation_exact_by_hand():
    # Differences (1, 1, 1): of the 8 sign assignments only +++ and --- reach |mean| = 1.
    result = stats.paired_randomisation_test([0, 0, 0], [1, 1, 1], n_resamples=10_000)
    assert result.exact and result.n_resamples == 8
    assert result.p_value == pytest.approx(2 / 8)
    # Differences (2, -1, 1), observed sum 2. The sums of +-2 +-1 +-1 are 4, 2, 2, 0, 0, -2, -2, -4:
    # six of the eight reach |sum| >= 2, so p = 6/8.
    result = stats.paired_randomisation_test([0, 0, 0], [2.0, -1.0, 1.0], n_resamples=10_000)
    assert result.statistic == pytest.approx(2 / 3)
    assert result.p_value == pytest.approx(6 / 8)
    # 2**3 = 8 > 7 resamples: Monte Carlo instead of enumeration.
    assert not stats.paired_randomisation_test([0, 0, 0], [1, 1, 1], n_resamples=7).exact


@pytest.mark.parametrize("n, seed", [(6, 1), (9, 2), (12, 3), (13, 4)])
def test_randomisation_exact_equals_scipy_enumeration(n, seed):
    a, b = _sample(n, 0.15, seed)
    # Round to a grid, as metric values are, so that ties are real ties.
    a, b = np.round(a * 8) / 8, np.round(b * 8) / 8
    ours = stats.paired_randomisation_test(a, b, n_resamples=10_000)
    theirs = scipy.stats.permutation_test(
        (a, b), _mean_difference, permutation_type="samples", vectorized=True,
        n_resamples=10_000, alternative="two-sided",
    )
    assert ours.exact
    # scipy enumerates all 2**n sign flips too: the same count over the same total.
    assert ours.p_value == theirs.pvalue


def test_randomisation_monte_carlo_agrees_with_scipy():
    a, b = _sample(80, 0.04, 21)
    ours = stats.paired_randomisation_test(a, b, n_resamples=20_000, seed=0)
    theirs = scipy.stats.permutation_test(
        (a, b), _mean_difference, permutation_type="samples", vectorized=True,
        n_resamples=20_000, alternative="two-sided", rng=np.random.default_rng(99),
    )
    assert not ours.exact
    p = theirs.pvalue
    # Two independent Monte-Carlo estimates: each has standard error sqrt(p(1-p)/20000).
    assert ours.p_value == pytest.approx(p, abs=5 * np.sqrt(2 * p * (1 - p) / 20_000) + 1e-4)
    assert 0.0 < ours.p_value < 0.5


def test_randomisation_plus_one_correction_never_gives_zero():
    a = np.zeros(100)
    b = np.ones(100)
    result = stats.paired_randomisation_test(a, b, n_resamples=999, seed=0)
    # No random assignment of 100 signs reaches |mean| = 1 except all-plus or all-minus, which
    # 999 draws practically never hit: p = (0 + 1) / (999 + 1).
    assert result.p_value == pytest.approx(1 / 1000)


def test_identical_systems_are_not_different():
    a, _ = _sample(50, 0, 5)
    result = stats.paired_randomisation_test(a, a.copy(), n_resamples=2000, seed=0)
    assert result.p_value == 1.0
    record = stats.wins_ties_losses(a, a)
    assert (record.wins, record.ties, record.losses) == (0, 50, 0)


def test_holm_by_hand():
    # m = 4; sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.06, 0.06 (monotone), 0.5.
    assert stats.holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert stats.holm([0.4, 0.9]) == pytest.approx([0.8, 0.9])
    assert stats.holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])
    assert stats.holm([]) == []
    with pytest.raises(ValueError):
        stats.holm([1.5])


def test_wins_ties_losses_by_hand():
    record = stats.wins_ties_losses([0.5, 0.5, 1.0, 0.0], [1.0, 0.5, 0.0, 0.0])
    assert (record.wins, record.ties, record.losses) == (1, 2, 1)
    assert str(record) == "1/2/1"


def test_mismatched_samples_are_refused():
    with pytest.raises(ValueError):
        stats.paired_bootstrap([1, 2], [1, 2, 3])
    with pytest.raises(ValueError):
        stats.paired_randomisation_test([], [])
    with pytest.raises(ValueError):
        stats.paired_bootstrap([1.0, float("nan")], [1.0, 2.0])
