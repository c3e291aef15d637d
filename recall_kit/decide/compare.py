"""Paired comparison of result files on one dataset: deltas, bootstrap intervals, randomisation
p-values with Holm's correction, and win/tie/loss records, overall and per stratum."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit.decide.stats import holm, paired_comparison
from recall_kit.errors import ResultFileError
from recall_kit.measure.result import BenchmarkResult, check_comparable, load_results
from recall_kit.types import Report, ReportTable

SCHEMA = "recall-kit/compare/1"
ALPHA = 0.05
#: Below this many queries a stratum's interval and p-value are too rough to lean on.
SMALL_STRATUM = 30


def shared_metrics(named: Sequence[tuple[str, BenchmarkResult]], wanted: Sequence[str] | None) -> list[str]:
    """The metrics to compare: the ones asked for (each must be in every file), else all shared."""
    if wanted:
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
    p_holm: float = 1.0
    wins: int = 0
    ties: int = 0
    losses: int = 0

    @property
    def significant(self) -> bool:
        return self.p_holm < ALPHA

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system, "metric": self.metric, "scope": self.scope, "n": self.n,
            "baseline": self.baseline, "value": self.value, "delta": self.delta,
            "ci_low": self.ci_low, "ci_high": self.ci_high, "prob_not_better": self.prob_not_better,
            "p_value": self.p_value, "p_holm": self.p_holm, "significant": self.significant,
            "wins": self.wins, "ties": self.ties, "losses": self.losses,
        }


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

    @property
    def baseline(self) -> str:
        return self.labels[0]

    def row(self, system: str, metric: str, scope: str = "overall") -> ComparisonRow:
        for row in self.rows:
            if (row.system, row.metric, row.scope) == (system, metric, scope):
                return row
        raise KeyError((system, metric, scope))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "baseline": self.baseline,
            "systems": self.labels,
            "metrics": self.metrics,
            "scopes": self.scopes,
            "bootstrap": {"resamples": self.n_resamples, "seed": self.seed, "confidence": 0.95,
                          "method": "paired percentile bootstrap"},
            "test": {"name": "paired randomisation (sign-flip), two-sided", "correction": "holm",
                     "alpha": ALPHA, "family": "every row of the comparison"},
            "dataset": self.results[0].dataset if self.results else {},
            "rows": [row.to_dict() for row in self.rows],
            "warnings": self.warnings,
        }


def compare_results(
    named: Sequence[tuple[str, BenchmarkResult]],
    metrics: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    query_subset: Sequence[str] | None = None,
    strata: bool = True,
) -> Comparison:
    """Compare each result with the first (the baseline), query by query.

    For each challenger, metric and scope (overall, then each stratum): the paired delta, a 95%
    paired-bootstrap percentile interval, P(delta <= 0) under the bootstrap, and a two-sided
    paired randomisation p-value; then Holm's correction over every row. Each row is seeded with
    `seed` alone, so a row's numbers do not depend on which other rows are asked for.
    `query_subset` restricts the comparison to those queries (a sweep's test half).
    """
    query_ids = check_comparable(named)
    names = shared_metrics(named, metrics)
    if query_subset is not None:
        keep = set(query_subset)
        query_ids = [q for q in query_ids if q in keep]
        if not query_ids:
            raise ResultFileError("No queries left to compare.")
    base = named[0][1]
    stratum_of = base.stratum_of()
    scopes: dict[str, list[int]] = {"overall": list(range(len(query_ids)))}
    if strata:
        by_stratum: dict[str, list[int]] = {}
        for index, query_id in enumerate(query_ids):
            by_stratum.setdefault(stratum_of[query_id], []).append(index)
        if len(by_stratum) > 1 or "overall" in by_stratum:
            for stratum, indexes in by_stratum.items():
                scopes[f"stratum {stratum}" if stratum == "overall" else stratum] = indexes
    warnings = []
    ks = {str(result.k) for _, result in named}
    if len(ks) > 1:
        warnings.append(f"The results were scored at different depths k ({', '.join(sorted(ks))}).")
    for scope, indexes in scopes.items():
        if scope != "overall" and len(indexes) < SMALL_STRATUM:
            warnings.append(
                f"Stratum {scope!r} has {len(indexes)} queries (< {SMALL_STRATUM}): its intervals and "
                "p-values are rough; do not decide on it alone."
            )
    matrices = {m: [per_query_matrix(result, m, query_ids) for _, result in named] for m in names}
    rows: list[ComparisonRow] = []
    for position, (label, _) in enumerate(named[1:], start=1):
        for metric in names:
            baseline_all = matrices[metric][0]
            values_all = matrices[metric][position]
            for scope, indexes in scopes.items():
                a, b = baseline_all[indexes], values_all[indexes]
                c = paired_comparison(a, b, n_resamples=n_resamples, seed=seed)
                rows.append(ComparisonRow(
                    system=label, metric=metric, scope=scope, n=c.n, baseline=c.baseline_mean,
                    value=c.candidate_mean, delta=c.delta, ci_low=c.ci_low, ci_high=c.ci_high,
                    prob_not_better=c.prob_not_better, p_value=c.p_value,
                    wins=c.record.wins, ties=c.record.ties, losses=c.record.losses,
                ))
    for row, adjusted in zip(rows, holm([row.p_value for row in rows]), strict=True):
        row.p_holm = adjusted
    return Comparison(
        labels=[label for label, _ in named], metrics=names,
        scopes={scope: len(indexes) for scope, indexes in scopes.items()}, rows=rows,
        n_resamples=n_resamples, seed=seed, warnings=warnings, results=[r for _, r in named],
    )


def _f(value: float) -> str:
    return f"{value:.4f}"


def _signed(value: float) -> str:
    return f"{value:+.4f}"


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 0.0001 else f"{value:.1e}"


def delta_table(comparison: Comparison, system: str, title: str | None = None) -> ReportTable:
    """One challenger against the baseline: a row per metric and scope."""
    rows = []
    for row in comparison.rows:
        if row.system != system:
            continue
        rows.append([
            row.metric, row.scope, row.n, _f(row.baseline), _f(row.value), _signed(row.delta),
            f"[{_signed(row.ci_low)}, {_signed(row.ci_high)}]", _f(row.prob_not_better),
            _p(row.p_value), _p(row.p_holm), "yes" if row.significant else "no",
            f"{row.wins}/{row.ties}/{row.losses}",
        ])
    not_significant = sum(1 for row in comparison.rows if row.system == system and not row.significant)
    notes = [(
        f"delta = {system} - {comparison.baseline}; 95% paired-bootstrap percentile interval "
        f"({comparison.n_resamples} resamples, seed {comparison.seed}); P(d<=0): share of resamples "
        "where the delta is <= 0; p: two-sided paired randomisation test; Holm over all "
        f"{len(comparison.rows)} rows; W/T/L: queries won/tied/lost."
    )]
    if not_significant:
        notes.append(
            f"{not_significant} row(s) marked significant=no (Holm-adjusted p >= {ALPHA}): "
            "treat those deltas as noise."
        )
    return ReportTable(
        title=title or f"{system} vs {comparison.baseline} (baseline)",
        headers=["metric", "scope", "n", comparison.baseline, system, "delta", "95% CI", "P(d<=0)",
                 "p", "p (Holm)", "significant", "W/T/L"],
        rows=rows,
        notes=notes,
    )


def answer_table(comparison: Comparison) -> ReportTable:
    """The answer first: on the decision metric (the first of --metrics), which system wins in
    each scope, by how much, with its 95% interval; "no real difference" unless Holm-significant."""
    metric = comparison.metrics[0]
    rows = []
    for row in comparison.rows:
        if row.metric != metric:
            continue
        if not row.significant:
            winner = "no real difference"
        else:
            winner = row.system if row.delta > 0 else comparison.baseline
        rows.append([row.scope, row.n, row.system, winner, _f(row.baseline), _f(row.value), _signed(row.delta),
                     f"[{_signed(row.ci_low)}, {_signed(row.ci_high)}]", _p(row.p_holm),
                     "yes" if row.significant else "no"])
    return ReportTable(
        title=f"Answer: who wins on {metric}",
        headers=["scope", "n", "system", "wins", f"{metric} {comparison.baseline}", f"{metric} system",
                 "delta", "95% CI", "p (Holm)", "significant"],
        rows=rows,
        notes=[f"Decision metric: {metric} (the first of --metrics); each system against the baseline "
               f"{comparison.baseline}. A system wins a scope only when its delta is significant "
               f"(Holm-adjusted p < {ALPHA}); the interval is the 95% paired bootstrap."],
    )


def scores_table(comparison: Comparison) -> ReportTable:
    """Every system's value per metric and scope, side by side."""
    values: dict[tuple[str, str], list[str]] = {}
    for row in comparison.rows:
        cell = values.setdefault((row.metric, row.scope), [_f(row.baseline)])
        cell.append(_f(row.value))
    rows = [[metric, scope, comparison.scopes[scope], *cells] for (metric, scope), cells in values.items()]
    return ReportTable(title="Scores", headers=["metric", "scope", "n", *comparison.labels], rows=rows)


def comparison_charts(comparison: Comparison) -> list[dict[str, Any]]:
    """Per-stratum deltas with intervals, recall@k curves where available, latency distributions."""
    charts: list[dict[str, Any]] = []
    for metric in comparison.metrics:
        groups: dict[str, dict[str, float]] = {}
        intervals: dict[str, dict[str, list[float]]] = {}
        significant: dict[str, dict[str, bool]] = {}
        for row in comparison.rows:
            if row.metric != metric:
                continue
            groups.setdefault(row.scope, {})[row.system] = row.delta
            intervals.setdefault(row.scope, {})[row.system] = [row.ci_low, row.ci_high]
            significant.setdefault(row.scope, {})[row.system] = row.significant
        charts.append({
            "kind": "bar", "title": f"{metric}: delta vs {comparison.baseline}, per stratum (95% CI)",
            "groups": groups, "intervals": intervals, "significant": significant, "y_label": f"delta {metric}",
        })
    curves = _recall_curve(comparison)
    if curves is not None:
        charts.append(curves)
    latencies = {}
    for label, result in zip(comparison.labels, comparison.results, strict=True):
        values = result.latencies()
        if values:
            latencies[label] = values
    if latencies:
        charts.append({"kind": "histogram", "title": "Single-query latency (ms)", "series": latencies,
                       "x_label": "ms"})
    return charts


def _recall_curve(comparison: Comparison) -> dict[str, Any] | None:
    """recall@k against k, from the recall@k metrics every result holds (two cutoffs at least)."""
    cutoffs: set[int] | None = None
    for result in comparison.results:
        found = {int(m.split("@")[1]) for m in result.metric_names if re.fullmatch(r"recall@\d+", m)}
        cutoffs = found if cutoffs is None else cutoffs & found
    if not cutoffs or len(cutoffs) < 2:
        return None
    xs = sorted(cutoffs)
    series = {label: [float(result.overall[f"recall@{x}"]) for x in xs]
              for label, result in zip(comparison.labels, comparison.results, strict=True)}
    return {"kind": "line", "title": "recall@k (all queries)", "x": xs, "series": series,
            "x_label": "k", "y_label": "recall"}


def comparison_report(comparison: Comparison, title: str | None = None) -> Report:
    tables = [answer_table(comparison), scores_table(comparison)]
    tables += [delta_table(comparison, label) for label in comparison.labels[1:]]
    return Report(
        title=title or f"recall-kit compare: {', '.join(comparison.labels)}",
        tables=tables,
        notes=list(comparison.warnings),
        data=comparison.to_dict(),
        charts=comparison_charts(comparison),
    )


def compare_files(
    paths: Sequence[str | Path],
    metrics: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """`recall-kit compare`: load the files and compare each with the first."""
    if n_resamples < 1:
        raise ResultFileError(f"--bootstrap must be at least 1, got {n_resamples}.")
    return compare_results(load_results(paths), metrics=metrics, n_resamples=n_resamples, seed=seed)
