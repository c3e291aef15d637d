"""Paired statistics for comparing two systems on the same queries: a paired bootstrap confidence
interval, a paired randomisation (sign-flip) test, and Holm's multiple-comparison correction.

Every function takes per-query values in the same query order for both systems, is seeded through
a numpy Generator, and is vectorised: resamples are drawn as index (or sign) matrices in chunks, so
10,000 resamples of a few thousand queries stay fast and bounded in memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: Cells of a resample matrix drawn at once; bounds memory for large query sets (~16 MB of int64).
_CHUNK_CELLS = 2_000_000
#: Two results whose per-query values differ by at most this much are a tie.
TIE_TOLERANCE = 1e-9
#: Resamples of a paired test or an interval: a p-value to one in a million; past this a run takes
#: hours or memory it cannot have (10**12 asked for 7 TiB).
MAX_RESAMPLES = 1_000_000


def check_resamples(n_resamples: int, minimum: int = 1, flag: str = "--resamples") -> int:
    """`n_resamples` as a user gave it, refused (`OptionError`, one line) below `minimum` or past
    `MAX_RESAMPLES`."""
    from recall_kit.errors import OptionError

    if n_resamples < minimum:
        raise OptionError(f"{flag} must be at least {minimum}, got {n_resamples}.")
    if n_resamples > MAX_RESAMPLES:
        raise OptionError(f"{flag} {n_resamples:,} is more than a p-value needs: at most {MAX_RESAMPLES:,}.")
    return n_resamples


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


# --- Parametric and rank tests, effect size, and Tukey's HSD -------------------------------------
# Implemented with numpy and the math module only (scipy is not a dependency of the host); each is
# checked against scipy.stats in tests/decide/test_stats_tests.py.

#: The paired two-system tests `compare --test` accepts, and what each one is.
PAIRED_TESTS = {
    "randomisation": "two-sided paired randomisation (sign-flip) test",
    "bootstrap": "two-sided paired bootstrap test (shift to the null)",
    "t-test": "two-sided paired Student's t-test",
    "wilcoxon": "two-sided Wilcoxon signed-rank test (normal approximation, ties and zeros handled as scipy's 'wilcox')",
    "tukey": "Tukey's HSD over every system at once (two-way ANOVA residual: systems x queries)",
}


def _log_beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def regularised_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), by its continued fraction (Press et al., Numerical Recipes, 3rd ed., 6.4)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _log_beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _log_beta_continued_fraction(b, a, 1.0 - x) / b


def student_t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2)."""
    if math.isnan(t):
        return 1.0
    if math.isinf(t):
        return 0.0
    return min(1.0, regularised_incomplete_beta(df / 2.0, 0.5, df / (df + t * t)))


def normal_two_sided_p(z: float) -> float:
    """P(|Z| >= |z|) for a standard normal Z."""
    return math.erfc(abs(z) / math.sqrt(2.0))


@dataclass(frozen=True)
class TestOutcome:
    """A test statistic and its two-sided p-value."""

    statistic: float
    p_value: float


def paired_t_test(baseline: Sequence[float] | np.ndarray, candidate: Sequence[float] | np.ndarray) -> TestOutcome:
    """Two-sided paired t-test of mean(candidate - baseline) = 0 (Student 1908).

    t = mean(d) / (sd(d) / sqrt(n)), sd with n - 1 in the denominator, n - 1 degrees of freedom;
    as scipy.stats.ttest_rel. When every difference is equal, sd = 0: p = 1 when they are all 0
    (no difference), else 0 (a constant non-zero shift).
    """
    d = _paired_differences(baseline, candidate)
    n = d.size
    if n < 2:
        raise ValueError("a paired t-test needs at least two queries")
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd <= TIE_TOLERANCE * max(1.0, abs(mean)):
        return TestOutcome(0.0 if abs(mean) <= TIE_TOLERANCE else math.copysign(math.inf, mean),
                           1.0 if abs(mean) <= TIE_TOLERANCE else 0.0)
    t = mean / (sd / math.sqrt(n))
    return TestOutcome(t, student_t_two_sided_p(t, n - 1))


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks 1..n with ties given their average rank, and the sizes of the tie groups."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    boundaries = np.flatnonzero(np.diff(sorted_values) != 0) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [values.size]))
    ranks = np.empty(values.size, dtype=np.float64)
    for start, end in zip(starts, ends, strict=True):
        ranks[order[start:end]] = (start + end + 1) / 2.0  # mean of start+1 .. end
    return ranks, ends - starts


def wilcoxon_signed_rank(
    baseline: Sequence[float] | np.ndarray, candidate: Sequence[float] | np.ndarray
) -> TestOutcome:
    """Two-sided Wilcoxon signed-rank test (Wilcoxon 1945), normal approximation.

    Zero differences are dropped (Wilcoxon's own treatment, scipy's ``zero_method="wilcox"``);
    the rest are ranked by |d| with average ranks for ties; T+ is the sum of the positive
    differences' ranks. z = (T+ - n(n+1)/4) / sqrt(n(n+1)(2n+1)/24 - sum(t^3 - t)/48), t the tie
    group sizes, no continuity correction: scipy.stats.wilcoxon(..., method="approx"). The
    statistic returned is min(T+, T-), as scipy's. IR query sets have dozens to thousands of
    queries with many ties, where the normal approximation is the usual choice; no difference at
    all gives p = 1.
    """
    d = _paired_differences(baseline, candidate)
    d = d[np.abs(d) > TIE_TOLERANCE]
    n = d.size
    if n == 0:
        return TestOutcome(0.0, 1.0)
    ranks, ties = _average_ranks(np.abs(d))
    plus = float(ranks[d > 0].sum())
    minus = float(ranks[d < 0].sum())
    mean = n * (n + 1) / 4.0
    variance = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(ties.astype(np.float64) ** 3 - ties)) / 48.0
    if variance <= 0:
        return TestOutcome(min(plus, minus), 1.0)
    z = (plus - mean) / math.sqrt(variance)
    return TestOutcome(min(plus, minus), normal_two_sided_p(z))


def bootstrap_test_p(differences: np.ndarray, n_resamples: int, seed: int | Sequence[int] = 0) -> float:
    """Two-sided paired bootstrap test: resample the differences shifted to mean 0 and count
    |mean| >= |observed| (Efron & Tibshirani 1993, 16.4; Sakai 2006 for IR), p = (count + 1) / (B + 1)."""
    observed = float(differences.mean())
    means = bootstrap_means(differences - observed, n_resamples, seed)
    gamma = 100.0 * np.finfo(np.float64).eps * max(abs(observed), float(np.abs(differences).max(initial=0.0)))
    count = int(np.count_nonzero(np.abs(means) >= abs(observed) - gamma))
    return (count + 1) / (n_resamples + 1)


def effect_size_dz(baseline: Sequence[float] | np.ndarray, candidate: Sequence[float] | np.ndarray) -> float:
    """Cohen's d_z, the standardised paired effect: mean(d) / sd(d), sd with n - 1 (Cohen 1988,
    2.3.5; Lakens 2013). 0 when every difference is 0; +-inf for a constant non-zero shift."""
    d = _paired_differences(baseline, candidate)
    if d.size < 2:
        return 0.0
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd <= TIE_TOLERANCE * max(1.0, abs(mean)):
        return 0.0 if abs(mean) <= TIE_TOLERANCE else math.copysign(math.inf, mean)
    return mean / sd


_NORMAL_TABLE: tuple[np.ndarray, np.ndarray] | None = None


def _normal_cdf_table() -> Callable[[np.ndarray], np.ndarray]:
    """Phi(x), vectorised: linear interpolation in a table of math.erf on [-40, 40] at step 1/1024
    (error below 1e-7), built once; numpy has no erf."""
    global _NORMAL_TABLE
    if _NORMAL_TABLE is None:
        grid = np.arange(-40 * 1024, 40 * 1024 + 1) / 1024.0
        _NORMAL_TABLE = (grid, np.array([0.5 * math.erfc(-x / math.sqrt(2.0)) for x in grid]))
    grid, table = _NORMAL_TABLE

    def phi(x: np.ndarray) -> np.ndarray:
        return np.interp(x, grid, table)

    return phi


def studentized_range_sf(q: float, k: int, df: float) -> float:
    """P(Q >= q) for the studentized range of `k` means with `df` degrees of freedom.

    P(Q < q) = int_0^inf f(s) k int phi(z) [Phi(z) - Phi(z - q s)]^(k-1) dz ds, f the density of
    chi_df / sqrt(df) (Tukey 1953; Hochberg & Tamhane 1987, 2.1), integrated numerically by
    Simpson's rule on fixed grids; for df > 10^5 the outer integral is dropped (s = 1). Agrees
    with scipy.stats.studentized_range.sf to about 1e-6.
    """
    if k < 2:
        raise ValueError(f"the studentized range needs k >= 2 means, got {k}")
    if q <= 0:
        return 1.0
    phi_cdf = _normal_cdf_table()

    def simpson(values: np.ndarray, step: float, axis: int = -1) -> np.ndarray:
        weights = np.ones(values.shape[axis])
        weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
        return np.tensordot(values, weights, axes=([axis], [0])) * step / 3.0

    z = np.linspace(-8.5, 8.5, 1201)
    dz = z[1] - z[0]
    density = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    cdf_z = phi_cdf(z)

    def inner(scale: np.ndarray) -> np.ndarray:
        # rows: values of q*s; columns: z
        shifted = phi_cdf(z[None, :] - scale[:, None])
        return k * simpson(density[None, :] * np.clip(cdf_z[None, :] - shifted, 0.0, 1.0) ** (k - 1), float(dz))

    if df > 1e5:
        return float(min(1.0, max(0.0, 1.0 - inner(np.array([q]))[0])))
    spread = 12.0 / math.sqrt(2.0 * df)
    s = np.linspace(max(1e-9, 1.0 - spread), 1.0 + spread + (6.0 if df < 10 else 0.0), 801)
    ds = s[1] - s[0]
    log_f = (df / 2.0 * math.log(df) - math.lgamma(df / 2.0) - (df / 2.0 - 1.0) * math.log(2.0)
             + (df - 1.0) * np.log(s) - df * s * s / 2.0)
    cdf = float(simpson(np.exp(log_f) * inner(q * s), float(ds)))
    return float(min(1.0, max(0.0, 1.0 - cdf)))


@dataclass(frozen=True)
class TukeyHSD:
    """Tukey's honestly significant difference test over k systems: every pair at once."""

    #: means[i]: system i's mean.
    means: list[float]
    #: p_values[i][j]: the family-wise (Tukey-adjusted) p-value of the pair (i, j); 1 on the diagonal.
    p_values: list[list[float]]
    mse: float
    df: float
    paired: bool


def tukey_hsd(values: Sequence[Sequence[float]] | np.ndarray, paired: bool = True) -> TukeyHSD:
    """Tukey's HSD (Tukey 1949/1953) on `values` (k systems x n queries).

    q_ij = |mean_i - mean_j| / sqrt(MSE / n), p_ij = P(Q_{k, df} >= q_ij). With `paired` (the
    default: queries are blocks, Sakai 2018, "Laboratory Experiments in Information Retrieval",
    4.4) MSE is the residual of the two-way ANOVA without replication, df = (k - 1)(n - 1): the
    query effect is taken out, as a paired test takes it out. With ``paired=False`` the systems
    are independent groups (one-way ANOVA, df = k(n - 1)), which is scipy.stats.tukey_hsd and
    what ranx's Tukey test computes.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise ValueError(f"Tukey's HSD needs k >= 2 systems x n >= 2 queries, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("Tukey's HSD needs finite values")
    k, n = x.shape
    means = x.mean(axis=1)
    if paired:
        residual = x - means[:, None] - x.mean(axis=0)[None, :] + x.mean()
        df = float((k - 1) * (n - 1))
    else:
        residual = x - means[:, None]
        df = float(k * (n - 1))
    mse = float(np.sum(residual ** 2) / df)
    p = [[1.0] * k for _ in range(k)]
    for i in range(k):
        for j in range(i + 1, k):
            gap = abs(float(means[i] - means[j]))
            if mse <= 0.0:
                value = 1.0 if gap <= TIE_TOLERANCE else 0.0
            else:
                value = studentized_range_sf(gap / math.sqrt(mse / n), k, df)
            p[i][j] = p[j][i] = value
    return TukeyHSD([float(m) for m in means], p, mse, df, paired)


def paired_test_p(
    test: str,
    baseline: np.ndarray,
    candidate: np.ndarray,
    n_resamples: int = 10_000,
    seed: int | Sequence[int] = 0,
) -> float:
    """The two-sided p-value of one of PAIRED_TESTS (tukey excepted: it needs every system)."""
    if test == "randomisation":
        return paired_randomisation_test(baseline, candidate, n_resamples, seed).p_value
    if test == "bootstrap":
        return bootstrap_test_p(_paired_differences(baseline, candidate), n_resamples, seed)
    if test == "t-test":
        return paired_t_test(baseline, candidate).p_value
    if test == "wilcoxon":
        return wilcoxon_signed_rank(baseline, candidate).p_value
    raise ValueError(f"unknown paired test {test!r} (known: {', '.join(t for t in PAIRED_TESTS if t != 'tukey')})")
