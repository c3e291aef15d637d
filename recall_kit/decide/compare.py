"""Paired comparison of result files on one dataset: deltas, bootstrap intervals, randomisation
p-values with Holm's correction, and win/tie/loss records, overall and per stratum."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit.decide.stats import (
    PAIRED_TESTS,
    TIE_TOLERANCE,
    check_resamples,
    effect_size_dz,
    holm,
    paired_comparison,
    paired_test_p,
    tukey_hsd,
)
from recall_kit.document_reader import read_saved
from recall_kit.errors import OptionError, ResultFileError
from recall_kit.measure.comparable import check_comparable, check_scored_alike
from recall_kit.measure.result import BenchmarkResult, load_results
from recall_kit.measure.run import failed_queries_warning, refuse_failed_results
from recall_kit.measure.score.metric_names import canonical_metric_name

SCHEMA = "recall-kit/compare/1"
ALPHA = 0.05
#: Below this many queries a stratum's interval and p-value are too rough to lean on.
SMALL_STRATUM = 30
#: The families a comparison row belongs to (see `ComparisonRow.family`).
PRIMARY, EXPLORATORY, DIAGNOSTIC = "primary", "exploratory", "diagnostic"


def shared_metrics(named: Sequence[tuple[str, BenchmarkResult]], wanted: Sequence[str] | None) -> list[str]:
    """The metrics to compare: the ones asked for (each must be in every file), else all shared."""
    if wanted:
        wanted = [canonical_metric_name(name) for name in wanted]  # P_10 -> precision@10
        for name in wanted:
            for label, result in named:
                if name not in result.metric_names:
                    raise ResultFileError(
                        f"Metric {name!r} is not in {label!r} (it has {', '.join(result.metric_names)}); "
                        "re-run eval with --metrics including it."
                    )
        return list(dict.fromkeys(wanted))
    common = [m for m in named[0][1].metric_names if all(m in r.metric_names for _, r in named[1:])]
    if not common:
        raise ResultFileError("The result files share no metric.")
    return common


def per_query_matrix(result: BenchmarkResult, metric: str, query_ids: Sequence[str]) -> np.ndarray:
    values = result.per_query(metric)
    return np.array([values[q] for q in query_ids], dtype=np.float64)


@dataclass
class ComparisonRow:
    """One tested difference: a challenger against the baseline on one metric and one scope."""

    system: str
    metric: str
    scope: str
    n: int
    baseline: float
    value: float
    delta: float
    ci_low: float
    ci_high: float
    prob_not_better: float
    p_value: float
    #: Holm-adjusted within the row's family; None for a diagnostic, which is no hypothesis.
    p_holm: float | None = 1.0
    wins: int = 0
    ties: int = 0
    losses: int = 0
    #: "primary" (the decision: Holm over these rows), "exploratory" (Holm over those rows,
    #: for looking, not deciding) or "diagnostic" (judged@k: a check on the qrels, not tested).
    family: str = PRIMARY
    #: Cohen's d_z: mean paired difference / its standard deviation (a standardised effect).
    effect_size: float = 0.0

    @property
    def significant(self) -> bool:
        return self.p_holm is not None and self.p_holm < ALPHA

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system, "metric": self.metric, "scope": self.scope, "n": self.n,
            "family": self.family,
            "baseline": self.baseline, "value": self.value, "delta": self.delta,
            "ci_low": self.ci_low, "ci_high": self.ci_high, "prob_not_better": self.prob_not_better,
            "p_value": self.p_value, "p_holm": self.p_holm,
            "significant": None if self.family == DIAGNOSTIC else self.significant,
            "wins": self.wins, "ties": self.ties, "losses": self.losses,
            "effect_size_dz": _finite_or_none(self.effect_size),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ComparisonRow:
        """A row as `to_dict` wrote it (a saved comparison, ablation or sweep); the keys a file
        older than one of them lacks take their defaults, a d_z written as null its infinity."""
        delta = float(data["delta"])
        dz = data.get("effect_size_dz")
        return cls(system=str(data["system"]), metric=str(data["metric"]), scope=str(data["scope"]),
                   n=int(data["n"]), baseline=float(data["baseline"]), value=float(data["value"]), delta=delta,
                   ci_low=float(data["ci_low"]), ci_high=float(data["ci_high"]),
                   prob_not_better=float(data.get("prob_not_better", math.nan)), p_value=float(data["p_value"]),
                   p_holm=None if data.get("p_holm") is None else float(data["p_holm"]),
                   wins=int(data.get("wins", 0)), ties=int(data.get("ties", 0)), losses=int(data.get("losses", 0)),
                   family=str(data.get("family", PRIMARY)),
                   effect_size=float(dz) if dz is not None else math.copysign(math.inf, delta) if delta else math.nan)


def _finite_or_none(value: float) -> float | None:
    """JSON has no infinity: a constant non-zero shift's d_z is written as null."""
    return value if np.isfinite(value) else None


@dataclass
class PairwiseCell:
    """One pair of an all-pairs comparison on one metric: row system minus column system."""

    delta: float
    p_value: float
    #: Holm-adjusted over the pairs, or Tukey's family-wise p (already adjusted).
    p_adjusted: float
    effect_size: float

    @property
    def significant(self) -> bool:
        return self.p_adjusted < ALPHA


@dataclass
class PairwiseMatrix:
    """Every system against every other on one metric (all queries)."""

    metric: str
    labels: list[str]
    means: list[float]
    #: cells[i][j]: labels[i] - labels[j]; None on the diagonal.
    cells: list[list[PairwiseCell | None]]
    test: str
    correction: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric, "systems": self.labels, "means": self.means, "test": self.test,
            "correction": self.correction,
            "pairs": [{"system": self.labels[i], "other": self.labels[j], "delta": cell.delta,
                       "p_value": cell.p_value, "p_adjusted": cell.p_adjusted,
                       "significant": cell.significant, "effect_size_dz": _finite_or_none(cell.effect_size)}
                      for i, row in enumerate(self.cells) for j, cell in enumerate(row)
                      if cell is not None and i < j],
        }


def check_test(test: str) -> None:
    """`test` names a paired test (a key of `stats.PAIRED_TESTS`), or one line with a did-you-mean."""
    if test not in PAIRED_TESTS:
        import difflib

        close = difflib.get_close_matches(str(test).lower(), list(PAIRED_TESTS), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ResultFileError(f"Unknown test {test!r}{hint}. Available: {', '.join(PAIRED_TESTS)}.")


def pairwise_matrix(
    metric: str,
    labels: Sequence[str],
    values: Sequence[np.ndarray],
    test: str = "randomisation",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> PairwiseMatrix:
    """Every pair of systems on one metric: delta, p by `test`, and a correction over the pairs.

    With `tukey` the p-values are Tukey's HSD over all systems at once (family-wise already);
    with any other test, Holm's correction runs over the k(k - 1)/2 pairs.
    """
    k = len(labels)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    if test == "tukey":
        hsd = tukey_hsd(np.vstack(values))
        raw = [hsd.p_values[i][j] for i, j in pairs]
        adjusted = raw
        correction = f"Tukey's HSD over the {k} systems (family-wise)"
    else:
        raw = [paired_test_p(test, values[j], values[i], n_resamples, seed) for i, j in pairs]
        adjusted = holm(raw)
        correction = f"Holm over the {len(pairs)} pairs"
    cells: list[list[PairwiseCell | None]] = [[None] * k for _ in range(k)]
    for (i, j), p, p_adj in zip(pairs, raw, adjusted, strict=True):
        delta = float(values[i].mean() - values[j].mean())
        effect = effect_size_dz(values[j], values[i])
        cells[i][j] = PairwiseCell(delta, p, p_adj, effect)
        cells[j][i] = PairwiseCell(-delta, p, p_adj, -effect)
    return PairwiseMatrix(metric, list(labels), [float(v.mean()) for v in values], cells, test, correction)


@dataclass(frozen=True)
class TradeOff:
    """A significant win on a primary metric that comes with a significant loss, for the winner, on
    another compared metric (same pair of systems, one scope): data; the report words it."""

    winner: str
    loser: str
    metric: str
    #: How much the winner gains on `metric` (> 0).
    gain: float
    #: Each metric lost: (metric, delta for the winner (< 0), Holm-adjusted p).
    losses: tuple[tuple[str, float, float], ...]
    scope: str = "overall"

    def to_dict(self) -> dict[str, Any]:
        return {"winner": self.winner, "loser": self.loser, "metric": self.metric, "gain": self.gain,
                "scope": self.scope,
                "losses": [{"metric": metric, "delta": delta, "p_holm": p} for metric, delta, p in self.losses]}


@dataclass
class Comparison:
    """The outcome of `compare_results`: rows, settings, and what to warn about."""

    labels: list[str]
    metrics: list[str]
    scopes: dict[str, int]
    rows: list[ComparisonRow]
    n_resamples: int
    seed: int
    warnings: list[str] = field(default_factory=list)
    results: list[BenchmarkResult] = field(default_factory=list)
    #: The decision metrics: Holm's correction runs over their rows alone.
    primary: list[str] = field(default_factory=list)
    #: challenger -> metric -> the queries it lost on (all compared queries), worst first.
    losses: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    #: The test behind the p column (a key of stats.PAIRED_TESTS).
    test: str = "randomisation"
    #: metric -> every system against every other (three systems or more).
    pairwise: dict[str, PairwiseMatrix] = field(default_factory=dict)

    @property
    def baseline(self) -> str:
        return self.labels[0]

    def row(self, system: str, metric: str, scope: str = "overall") -> ComparisonRow:
        for row in self.rows:
            if (row.system, row.metric, row.scope) == (system, metric, scope):
                return row
        raise KeyError((system, metric, scope))

    def costs(self, row: ComparisonRow) -> list[ComparisonRow]:
        """The rows where `row`'s system moves significantly against `row`'s direction, on another
        tested metric in the same scope: what a win (or a loss) on `row.metric` costs."""
        return [other for other in self.rows
                if other.system == row.system and other.scope == row.scope and other.metric != row.metric
                and other.family != DIAGNOSTIC and other.significant and other.delta * row.delta < 0]

    def tradeoffs(self, scope: str = "overall") -> list[TradeOff]:
        """Every significant win on a primary metric that comes with a significant loss, for the
        winner, on another compared metric (same pair of systems, `scope`)."""
        out = []
        for row in self.rows:
            if row.scope != scope or row.metric not in self.primary or not row.significant or row.delta == 0:
                continue
            winner, loser = (row.system, self.baseline) if row.delta > 0 else (self.baseline, row.system)
            costs = self.costs(row)
            if costs:
                out.append(TradeOff(winner, loser, row.metric, abs(row.delta),
                                    tuple((c.metric, -abs(c.delta), c.p_holm or 0.0) for c in costs), scope))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "baseline": self.baseline,
            "systems": self.labels,
            "metrics": self.metrics,
            "scopes": self.scopes,
            "bootstrap": {"resamples": self.n_resamples, "seed": self.seed, "confidence": 0.95,
                          "method": "paired percentile bootstrap"},
            "test": {"name": PAIRED_TESTS[self.test], "key": self.test, "correction": "holm",
                     "alpha": ALPHA, "primary": self.primary,
                     "family": ("primary: the primary metrics' rows; exploratory: every other "
                                "row, corrected among themselves; diagnostic (judged@k): not tested")},
            "dataset": self.results[0].dataset.to_dict() if self.results else {},
            "rows": [row.to_dict() for row in self.rows],
            "losses": self.losses,
            "pairwise": {metric: matrix.to_dict() for metric, matrix in self.pairwise.items()},
            "tradeoffs": [tradeoff.to_dict() for tradeoff in self.tradeoffs()],
            "warnings": self.warnings,
        }


def is_diagnostic(metric: str) -> bool:
    """Whether a metric name is a diagnostic (its family registered with ``diagnostic=True``,
    as judged@k is): a check on the qrels that no comparison tests as a hypothesis."""
    import recall_kit.registry as registry
    from recall_kit.errors import UnknownNameError

    try:
        return bool(registry.metrics.get(metric.split("@", 1)[0]).obj.diagnostic)
    except UnknownNameError:  # a metric of a plugin not installed here
        return False


def primary_metrics(metrics: Sequence[str], primary: Sequence[str] | None) -> list[str]:
    """The decision metrics among `metrics`: those named (each compared, none a diagnostic),
    else the first compared metric that is not a diagnostic."""
    if not primary:
        return [metric for metric in metrics if not is_diagnostic(metric)][:1]
    for metric in primary:
        if metric not in metrics:
            raise ResultFileError(
                f"--primary names {metric!r}, which is not compared (compared: {', '.join(metrics)})."
            )
        if is_diagnostic(metric):
            raise ResultFileError(
                f"--primary names {metric!r}, a diagnostic (how much of the ranking is judged), "
                "not a measure of retrieval: it cannot be a decision metric."
            )
    return list(dict.fromkeys(primary))


def compare_values(
    labels: Sequence[str],
    query_ids: Sequence[str],
    strata: Sequence[str] | None,
    matrices: dict[str, list[np.ndarray]],
    primary: Sequence[str] | None = None,
    primary_strata: bool = False,
    n_resamples: int = 10_000,
    seed: int = 0,
    test: str = "randomisation",
) -> Comparison:
    """Compare systems' per-query values with the first system's (the baseline), paired by query.

    `matrices[metric][i]` holds system `labels[i]`'s values in `query_ids` order. For each
    challenger, metric and scope (overall, then each stratum of `strata` when there are several):
    the paired delta (challenger - baseline), a 95% paired-bootstrap percentile interval,
    P(delta <= 0) under the bootstrap, a two-sided paired randomisation p-value, wins/ties/losses.
    Holm's correction runs within a family: the `primary` metrics' overall rows (every scope's
    with `primary_strata`) are the decision; the other rows are exploratory, corrected among
    themselves; a diagnostic metric's rows (judged@k) are not tested. Each row is seeded with
    `seed` alone, so a row's numbers do not depend on which other rows are asked for.

    `test` picks the p-value (a key of `stats.PAIRED_TESTS`): the randomisation test (default),
    the bootstrap test, the paired t-test, Wilcoxon's signed-rank test, or Tukey's HSD over all
    systems (its p is family-wise over the pairs of systems; Holm then runs over the family's
    rows as usual). With three systems or more, every pair is also compared (`pairwise`).
    """
    check_test(test)
    metrics = list(matrices)
    decision = primary_metrics(metrics, primary)
    scopes = _comparison_scopes(len(query_ids), strata)
    warnings = _small_stratum_warnings(scopes)
    rows: list[ComparisonRow] = []
    losses: dict[str, dict[str, list[dict[str, Any]]]] = {}
    tukey_cache: dict[tuple[str, str], list[list[float]]] = {}
    for position, label in enumerate(labels[1:], start=1):
        for metric in metrics:
            baseline_all = matrices[metric][0]
            values_all = matrices[metric][position]
            for scope, indexes in scopes.items():
                family = _family(metric, scope, decision, primary_strata)
                if family == DIAGNOSTIC or test in ("randomisation", "tukey"):
                    p_test = None  # the randomisation p (a diagnostic's too), or Tukey's below
                else:
                    p_test = test
                rows.append(_tested_row(label, metric, scope, family, baseline_all[indexes], values_all[indexes],
                                        p_test, n_resamples, seed))
                if test == "tukey" and family != DIAGNOSTIC:
                    rows[-1].p_value = _tukey_p(tukey_cache, matrices[metric], metric, scope, indexes, position)
            losses.setdefault(label, {})[metric] = query_losses(
                query_ids, strata, baseline_all, values_all
            )
    _holm_within_families(rows)
    pairwise = {}
    if len(labels) >= 3:
        pairwise = {metric: pairwise_matrix(metric, labels, matrices[metric], test, n_resamples, seed)
                    for metric in metrics if not is_diagnostic(metric)}
    return Comparison(
        labels=list(labels), metrics=metrics,
        scopes={scope: len(indexes) for scope, indexes in scopes.items()}, rows=rows,
        n_resamples=n_resamples, seed=seed, warnings=warnings, primary=decision, losses=losses,
        test=test, pairwise=pairwise,
    )


def _family(metric: str, scope: str, decision: Sequence[str], primary_strata: bool) -> str:
    """A row's family: diagnostic (judged@k, not tested), primary (a decision metric overall, or in
    every scope with `primary_strata`: Holm over these rows) or exploratory."""
    if is_diagnostic(metric):
        return DIAGNOSTIC
    if metric in decision and (scope == "overall" or primary_strata):
        return PRIMARY
    return EXPLORATORY


def _tested_row(label: str, metric: str, scope: str, family: str, a: np.ndarray, b: np.ndarray,
                test: str | None, n_resamples: int, seed: int) -> ComparisonRow:
    """`label`'s values `b` against the baseline's `a` on one metric and scope: the paired delta,
    its bootstrap interval, wins/ties/losses, d_z and the p-value (`test`'s, or the randomisation
    test's when None); Holm's adjustment comes later, over the family."""
    c = paired_comparison(a, b, n_resamples=n_resamples, seed=seed)
    p_value = c.p_value if test is None else paired_test_p(test, a, b, n_resamples, seed)
    return ComparisonRow(
        system=label, metric=metric, scope=scope, n=c.n, baseline=c.baseline_mean,
        value=c.candidate_mean, delta=c.delta, ci_low=c.ci_low, ci_high=c.ci_high,
        prob_not_better=c.prob_not_better, p_value=p_value,
        wins=c.record.wins, ties=c.record.ties, losses=c.record.losses, family=family,
        effect_size=effect_size_dz(a, b),
    )


def _comparison_scopes(num_queries: int, strata: Sequence[str] | None) -> dict[str, list[int]]:
    """Each scope's query indexes: "overall", then each stratum in order of first appearance when
    there are several (a stratum named "overall" is "stratum overall")."""
    scopes: dict[str, list[int]] = {"overall": list(range(num_queries))}
    if strata is not None:
        by_stratum: dict[str, list[int]] = {}
        for index, stratum in enumerate(strata):
            by_stratum.setdefault(stratum, []).append(index)
        if len(by_stratum) > 1 or "overall" in by_stratum:
            for stratum, indexes in by_stratum.items():
                scopes[f"stratum {stratum}" if stratum == "overall" else stratum] = indexes
    return scopes


def _small_stratum_warnings(scopes: dict[str, list[int]]) -> list[str]:
    """A warning for each stratum too small to decide on."""
    warnings = []
    for scope, indexes in scopes.items():
        if scope != "overall" and len(indexes) < SMALL_STRATUM:
            warnings.append(
                f"Stratum {scope!r} has {len(indexes)} queries (< {SMALL_STRATUM}): its intervals and "
                "p-values are rough; do not decide on it alone."
            )
    return warnings


def _tukey_p(
    cache: dict[tuple[str, str], list[list[float]]],
    matrix: list[np.ndarray],
    metric: str,
    scope: str,
    indexes: list[int],
    position: int,
) -> float:
    """Tukey's HSD p-value of system `position` against the baseline on one metric and scope
    (1.0 under two queries); the HSD over all systems runs once per (metric, scope), kept in `cache`."""
    if len(indexes) < 2:
        return 1.0
    if (metric, scope) not in cache:
        hsd = tukey_hsd(np.vstack([values[indexes] for values in matrix]))
        cache[metric, scope] = hsd.p_values
    return cache[metric, scope][0][position]


def _holm_within_families(rows: list[ComparisonRow]) -> None:
    """Holm's correction within the primary rows and within the exploratory rows; none for diagnostics."""
    for family in (PRIMARY, EXPLORATORY):
        members = [row for row in rows if row.family == family]
        for row, adjusted in zip(members, holm([row.p_value for row in members]), strict=True):
            row.p_holm = adjusted
    for row in rows:
        if row.family == DIAGNOSTIC:
            row.p_holm = None


def query_losses(
    query_ids: Sequence[str],
    strata: Sequence[str] | None,
    baseline: np.ndarray,
    values: np.ndarray,
) -> list[dict[str, Any]]:
    """The queries where `values` fell below `baseline` (beyond the tie tolerance), worst first."""
    deltas = values - baseline
    lost = [int(i) for i in np.flatnonzero(deltas < -TIE_TOLERANCE)]
    lost.sort(key=lambda i: (float(deltas[i]), query_ids[i]))
    out = []
    for i in lost:
        entry: dict[str, Any] = {"query_id": query_ids[i]}
        if strata is not None:
            entry["stratum"] = strata[i]
        entry.update(baseline=float(baseline[i]), value=float(values[i]), delta=float(deltas[i]))
        out.append(entry)
    return out


def compare_results(
    named: Sequence[tuple[str, BenchmarkResult]],
    metrics: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    query_subset: Sequence[str] | None = None,
    strata: bool = True,
    primary: Sequence[str] | None = None,
    primary_strata: bool = False,
    test: str = "randomisation",
) -> Comparison:
    """Compare each result with the first (the baseline), query by query (see `compare_values`).

    `query_subset` restricts the comparison to those queries (a sweep's test half); `strata=False`
    compares all queries only. `primary` names the decision metrics (default: the first compared
    metric that is not a diagnostic). Results of different datasets or query sets, or scored with
    different relevance levels (``-l``) or judged-only settings (``-J``), are refused.
    """
    check_resamples(n_resamples)  # user input (--resamples 0, 10**12), not a bug
    query_ids = check_comparable(named)
    check_scored_alike(named)
    names = shared_metrics(named, metrics)
    if query_subset is not None:
        keep = set(query_subset)
        query_ids = [q for q in query_ids if q in keep]
        if not query_ids:
            raise ResultFileError("No queries left to compare.")
    base = named[0][1]
    stratum_of = base.stratum_of()
    matrices = {m: [per_query_matrix(result, m, query_ids) for _, result in named] for m in names}
    comparison = compare_values(
        [label for label, _ in named], query_ids,
        [stratum_of[q] for q in query_ids] if strata else None, matrices,
        primary=primary, primary_strata=primary_strata, n_resamples=n_resamples, seed=seed, test=test,
    )
    ks = {str(result.k) for _, result in named}
    if len(ks) > 1:
        comparison.warnings.insert(
            0, f"The results were scored at different depths k ({', '.join(sorted(ks))})."
        )
    failed = failed_queries_warning(named)
    if failed is not None:  # ablate and sweep with --max-failed: marked, first; compare and gate refuse
        comparison.warnings.insert(0, failed)
    comparison.results = [result for _, result in named]
    return comparison


def compare_files(
    paths: Sequence[str | Path],
    metrics: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    primary: Sequence[str] | None = None,
    test: str = "randomisation",
    names: Sequence[str] | None = None,
    primary_strata: bool = False,
) -> Comparison:
    """`recall-kit compare`: load the files and compare each with the first. `names` labels the
    results (one per file, in order; default: each system's label); `primary_strata` puts the
    primary metrics' per-stratum rows in the Holm family beside the overall ones (as a study does)."""
    check_resamples(n_resamples)
    named = load_results(paths)
    if names is not None:
        named = [(name, result) for name, (_, result) in zip(_checked_names(names, len(paths)), named, strict=True)]
    refuse_failed_results(named)
    return compare_results(named, metrics=metrics, n_resamples=n_resamples, seed=seed,
                           primary=primary, test=test, primary_strata=primary_strata)


def _checked_names(names: Sequence[str], files: int) -> list[str]:
    """`--names`: one name per result file, none empty, none twice."""
    names = [name.strip() for name in names]
    if len(names) != files:
        raise OptionError(f"--names gives {len(names)} names for {files} result files: give one per file, in order.")
    if any(not name for name in names) or len(set(names)) != len(names):
        raise OptionError(f"--names must be distinct and non-empty, got {','.join(names)!r}.")
    return names


# -- a saved comparison, read back --------------------------------------------------------------------
# What `compare --json` writes (Comparison.to_dict), also inside an ablation and a sweep; a reader of
# a saved document (the study) goes through this type, not through the document's keys.

@dataclass(frozen=True)
class SavedComparison:
    """A saved `compare` document (comparison.json, or the comparison inside an ablation or a sweep)."""

    baseline: str
    systems: list[str]
    metrics: list[str]
    primary: list[str]
    resamples: int
    seed: int
    rows: list[ComparisonRow]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SavedComparison:
        test, bootstrap = data.get("test") or {}, data.get("bootstrap") or {}
        return cls(baseline=str(data["baseline"]), systems=[str(s) for s in data["systems"]],
                   metrics=[str(m) for m in data["metrics"]], primary=[str(m) for m in test.get("primary", [])],
                   resamples=int(bootstrap.get("resamples", 0)), seed=int(bootstrap.get("seed", 0)),
                   rows=[ComparisonRow.from_dict(row) for row in data["rows"]])

    @classmethod
    def load(cls, path: str | Path) -> SavedComparison:
        return read_saved(path, cls.from_dict)

    def decision_rows(self, scope: str | None = None) -> list[ComparisonRow]:
        """The primary family's rows (the decision), in `scope` when given."""
        return [row for row in self.rows if row.family == PRIMARY and (scope is None or row.scope == scope)]
