"""The t-test, Wilcoxon signed-rank test, bootstrap test, effect size and Tukey's HSD of
recall_kit.decide.stats, checked by hand and against scipy.stats on the same data."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from recall_kit.decide import stats


def metric_like(seed: int, n: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values in [0, 1] with ties and zero differences, as IR metrics have."""
    rng = np.random.default_rng(seed)
    a = rng.choice([0.0, 0.25, 0.5, 1.0], size=n)
    b = np.clip(a + rng.choice([-0.25, 0.0, 0.0, 0.25, 0.5], size=n) * (1 + shift), 0.0, 1.0)
    return a, b


def test_t_test_by_hand():
    # d = (1, 2, 3): mean 2, sd 1, t = 2 / (1 / sqrt 3) = 2 sqrt 3, df 2.
    outcome = stats.paired_t_test([0, 0, 0], [1, 2, 3])
    assert outcome.statistic == pytest.approx(2 * math.sqrt(3))
    # Student's t with 2 df: P(|T| >= t) = 1 - t / sqrt(t^2 + 2).
    t = 2 * math.sqrt(3)
    assert outcome.p_value == pytest.approx(1 - t / math.sqrt(t * t + 2))


@pytest.mark.parametrize(("seed", "n", "shift"), [(0, 30, 0.0), (1, 200, 0.3), (2, 997, 0.1), (3, 12, 1.0)])
def test_t_test_matches_scipy(seed, n, shift):
    a, b = metric_like(seed, n, shift)
    theirs = scipy.stats.ttest_rel(b, a)
    ours = stats.paired_t_test(a, b)
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-9)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-7, abs=1e-12)


def test_t_test_degenerate_differences():
    assert stats.paired_t_test([0.5, 0.5], [0.5, 0.5]).p_value == 1.0
    assert stats.paired_t_test([0.0, 0.5], [0.25, 0.75]).p_value == 0.0


def test_wilcoxon_by_hand():
    # d = (1, -2, 3, 0): the zero is dropped; ranks 1, 2, 3; T+ = 4, T- = 2; n = 3.
    outcome = stats.wilcoxon_signed_rank([0, 2, 0, 1], [1, 0, 3, 1])
    assert outcome.statistic == 2.0
    z = (4 - 3 * 4 / 4) / math.sqrt(3 * 4 * 7 / 24)
    assert outcome.p_value == pytest.approx(math.erfc(abs(z) / math.sqrt(2)))


@pytest.mark.parametrize(("seed", "n", "shift"), [(0, 30, 0.0), (1, 200, 0.3), (2, 997, 0.1), (4, 60, 0.5)])
def test_wilcoxon_matches_scipy_normal_approximation(seed, n, shift):
    a, b = metric_like(seed, n, shift)
    theirs = scipy.stats.wilcoxon(b, a, zero_method="wilcox", correction=False, method="approx")
    ours = stats.wilcoxon_signed_rank(a, b)
    assert ours.statistic == pytest.approx(theirs.statistic)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9, abs=1e-14)


def test_wilcoxon_no_difference():
    assert stats.wilcoxon_signed_rank([0.1, 0.2], [0.1, 0.2]).p_value == 1.0


def test_effect_size_dz():
    # d = (1, 2, 3): mean 2, sd 1.
    assert stats.effect_size_dz([0, 0, 0], [1, 2, 3]) == pytest.approx(2.0)
    a, b = metric_like(5, 100, 0.2)
    d = b - a
    assert stats.effect_size_dz(a, b) == pytest.approx(d.mean() / d.std(ddof=1))
    assert stats.effect_size_dz([1, 1], [1, 1]) == 0.0


def test_bootstrap_test_p():
    d = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, -0.5] * 10)
    p = stats.bootstrap_test_p(d, 2000, 0)
    # Strong positive shift: tiny p (the +1 keeps it above 0); no shift: p near 1.
    assert 0 < p < 0.01
    assert stats.bootstrap_test_p(np.array([0.5, -0.5] * 50), 2000, 0) > 0.5


@pytest.mark.parametrize(("q", "k", "df"), [(3.5, 3, 10), (2.0, 2, 996), (4.2, 5, 60), (1.0, 4, 3), (6.0, 3, 2000)])
def test_studentized_range_matches_scipy(q, k, df):
    assert stats.studentized_range_sf(q, k, df) == pytest.approx(
        scipy.stats.studentized_range.sf(q, k, df), abs=2e-6)


def test_tukey_one_way_matches_scipy():
    rng = np.random.default_rng(7)
    groups = np.vstack([rng.normal(m, 1.0, 40) for m in (0.0, 0.3, 0.9)])
    ours = stats.tukey_hsd(groups, paired=False)
    theirs = scipy.stats.tukey_hsd(*groups)
    assert np.allclose(ours.p_values, theirs.pvalue, atol=2e-6)


def test_tukey_paired_is_the_two_way_anova_residual():
    # A query effect shared by every system is taken out: the paired MSE is much smaller.
    rng = np.random.default_rng(3)
    query_effect = rng.normal(0, 1.0, 50)
    systems = np.vstack([query_effect + shift + rng.normal(0, 0.1, 50) for shift in (0.0, 0.05, 0.3)])
    paired = stats.tukey_hsd(systems)
    unpaired = stats.tukey_hsd(systems, paired=False)
    assert paired.df == 2 * 49
    residual = systems - systems.mean(axis=1)[:, None] - systems.mean(axis=0)[None, :] + systems.mean()
    assert paired.mse == pytest.approx(float((residual ** 2).sum() / (2 * 49)))
    assert paired.p_values[0][2] < 1e-6 < unpaired.p_values[0][2]
    # Two systems: Tukey's q = sqrt(2) |t| of the paired t-test, so the p-values agree.
    two = stats.tukey_hsd(systems[:2])
    assert two.p_values[0][1] == pytest.approx(stats.paired_t_test(systems[0], systems[1]).p_value, abs=2e-6)


def test_paired_test_p_refuses_an_unknown_test():
    with pytest.raises(ValueError, match="unknown paired test"):
        stats.paired_test_p("sign", np.zeros(3), np.ones(3))
