"""Paired statistics for comparing two systems on the same queries: a paired bootstrap confidence
interval, a paired randomisation (sign-flip) test, and Holm's multiple-comparison correction.

Every function takes per-query values in the same query order for both systems, is seeded through
a numpy Generator, and is vectorised: resamples are drawn as index (or sign) matrices in chunks, so
10,000 resamples of a few thousand queries stay fast and bounded in memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Cells of a resample matrix drawn at once; bounds memory for large query sets (~16 MB of int64).
_CHUNK_CELLS = 2_000_000
#: Two results whose per-query values differ by at most this much are a tie.
TIE_TOLERANCE = 1e-9


def _paired_differences(baseline: Sequence[float] | np.ndarray, candidate: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"paired samples need two 1-d arrays of one length, got shapes {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("paired samples must be finite")
    return b - a


def _chunks(total: int, width: int) -> list[int]:
    """Row counts that split `total` resamples so that each chunk holds about _CHUNK_CELLS cells."""
    rows = max(1, _CHUNK_CELLS // max(1, width))
    return [min(rows, total - start) for start in range(0, total, rows)]


def bootstrap_means(differences: np.ndarray, n_resamples: int, seed: int | Sequence[int] = 0) -> np.ndarray:
    """The mean of `n_resamples` bootstrap resamples (with replacement) of `differences`."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    n = differences.size
    if n == 0:
        raise ValueError("cannot bootstrap an empty sample")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples, dtype=np.float64)
    start = 0
    for rows in _chunks(n_resamples, n):
        indexes = rng.integers(0, n, size=(rows, n))
        means[start:start + rows] = differences[indexes].mean(axis=1)
        start += rows
    return means


@dataclass(frozen=True)
class BootstrapInterval:
    """A paired bootstrap of mean(candidate - baseline)."""

    delta: float
    low: float
    high: float
    #: Share of resampled deltas <= 0: how often the candidate is no better, under resampling.
    prob_not_better: float
    confidence: float
    n_resamples: int


def paired_bootstrap(
    baseline: Sequence[float] | np.ndarray,
    candidate: Sequence[float] | np.ndarray,
    n_resamples: int = 10_000,
    seed: int | Sequence[int] = 0,
    confidence: float = 0.95,
) -> BootstrapInterval:
    """Percentile bootstrap interval of the mean paired difference, candidate minus baseline.

    Queries are resampled with replacement as pairs (Efron & Tibshirani 1993, ch. 13): the
    statistic is mean(candidate[i] - baseline[i]) over a resample of query indexes i. The
    interval holds the central `confidence` share of the resampled means (numpy's linear
    percentile), which is scipy.stats.bootstrap(..., paired=True, method="percentile").
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    differences = _paired_differences(baseline, candidate)
    means = bootstrap_means(differences, n_resamples, seed)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return BootstrapInterval(
        delta=float(differences.mean()),
        low=float(low),
        high=float(high),
        prob_not_better=float(np.count_nonzero(means <= 0.0) / n_resamples),
        confidence=confidence,
        n_resamples=n_resamples,
    )


@dataclass(frozen=True)
class RandomisationTest:
    """A two-sided paired randomisation test of mean(candidate - baseline) = 0."""

    statistic: float
    p_value: float
    #: True when all 2**n sign assignments were enumerated (then p is exact, with no +1).
    exact: bool
    n_resamples: int


def paired_randomisation_test(
    baseline: Sequence[float] | np.ndarray,
    candidate: Sequence[float] | np.ndarray,
    n_resamples: int = 10_000,
    seed: int | Sequence[int] = 0,
) -> RandomisationTest:
    """Two-sided paired randomisation (sign-flip) test for the mean difference.

    Under the null hypothesis the two systems are exchangeable on each query, so each per-query
    difference is as likely to carry either sign. The p-value is the share of sign assignments
    whose |mean| is at least the observed |mean| (Fisher 1935; Smucker, Allan & Carterette 2007
    for IR). When 2**n <= n_resamples every assignment is enumerated and p = count / 2**n, as
    scipy.stats.permutation_test does; otherwise `n_resamples` random assignments are drawn and
    p = (count + 1) / (n_resamples + 1) (Phipson & Smyth 2010), so p is never 0.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    differences = _paired_differences(baseline, candidate)
    n = differences.size
    if n == 0:
        raise ValueError("cannot test an empty sample")
    observed = float(differences.mean())
    # Sums of the same numbers in another order differ in the last bits: count those as ties.
    gamma = 100.0 * np.finfo(np.float64).eps * max(abs(observed), float(np.abs(differences).max()))
    threshold = abs(observed) - gamma
    exact = n < 63 and 2 ** n <= n_resamples
    count = 0
    if exact:
        total = 2 ** n
        bits = np.arange(n, dtype=np.int64)
        start = 0
        for rows in _chunks(total, n):
            # Row r is the sign assignment whose bit i says whether difference i flips.
            codes = np.arange(start, start + rows, dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> bits) & 1)
            count += int(np.count_nonzero(np.abs((signs * differences).mean(axis=1)) >= threshold))
            start += rows
        return RandomisationTest(observed, min(1.0, count / total), True, total)
    rng = np.random.default_rng(seed)
    for rows in _chunks(n_resamples, n):
        signs = rng.integers(0, 2, size=(rows, n)) * 2.0 - 1.0
        count += int(np.count_nonzero(np.abs((signs * differences).mean(axis=1)) >= threshold))
    return RandomisationTest(observed, (count + 1) / (n_resamples + 1), False, n_resamples)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the input order.

    Sort ascending; the i-th smallest (0-based) becomes max over j <= i of (m - j) * p_(j),
    capped at 1. Rejecting where the adjusted p < alpha controls the family-wise error rate.
    """
    values = [float(p) for p in p_values]
    for p in values:
        if math.isnan(p) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p-values lie in [0, 1], got {p}")
    m = len(values)
    order = sorted(range(m), key=lambda i: values[i])
    adjusted = [0.0] * m
    running = 0.0
    for position, index in enumerate(order):
        running = max(running, min(1.0, (m - position) * values[index]))
        adjusted[index] = running
    return adjusted


@dataclass(frozen=True)
class WinsTiesLosses:
    wins: int
    ties: int
    losses: int

    def __str__(self) -> str:
        return f"{self.wins}/{self.ties}/{self.losses}"


def wins_ties_losses(
    baseline: Sequence[float] | np.ndarray,
    candidate: Sequence[float] | np.ndarray,
    tolerance: float = TIE_TOLERANCE,
) -> WinsTiesLosses:
    """Queries where the candidate scores higher, the same (within `tolerance`), and lower."""
    differences = _paired_differences(baseline, candidate)
    wins = int(np.count_nonzero(differences > tolerance))
    losses = int(np.count_nonzero(differences < -tolerance))
    return WinsTiesLosses(wins, differences.size - wins - losses, losses)


@dataclass(frozen=True)
class PairedComparison:
    """Everything `compare` reports about one metric on one set of queries."""

    n: int
    baseline_mean: float
    candidate_mean: float
    delta: float
    ci_low: float
    ci_high: float
    prob_not_better: float
    p_value: float
    exact: bool
    record: WinsTiesLosses


def paired_comparison(
    baseline: Sequence[float] | np.ndarray,
    candidate: Sequence[float] | np.ndarray,
    n_resamples: int = 10_000,
    seed: int | Sequence[int] = 0,
    confidence: float = 0.95,
) -> PairedComparison:
    """The paired bootstrap, the randomisation test and the win/tie/loss record, together."""
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    interval = paired_bootstrap(a, b, n_resamples, seed, confidence)
    test = paired_randomisation_test(a, b, n_resamples, seed)
    return PairedComparison(
        n=int(a.size),
        baseline_mean=float(a.mean()),
        candidate_mean=float(b.mean()),
        delta=interval.delta,
        ci_low=interval.low,
        ci_high=interval.high,
        prob_not_better=interval.prob_not_better,
        p_value=test.p_value,
        exact=test.exact,
        record=wins_ties_losses(a, b),
    )
