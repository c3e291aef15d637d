"""Presenting a comparison: its tables (scores, deltas, pairwise matrix), charts, trade-off and
verdict sentences, and the Report `recall-kit compare` renders.

`recall_kit.decide.compare` computes the Comparison (its trade-offs included, as data); this module
only shows it, and nothing in the computation imports it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from recall_kit.decide.compare import (
    ALPHA,
    DIAGNOSTIC,
    EXPLORATORY,
    PRIMARY,
    Comparison,
    ComparisonRow,
    PairwiseMatrix,
    TradeOff,
)
from recall_kit.decide.stats import PAIRED_TESTS, TIE_TOLERANCE
from recall_kit.measure.result_report import provenance
from recall_kit.reporting.formats import four_places
from recall_kit.types import Chart, Report, ReportTable


def _signed(value: float) -> str:
    return f"{value:+.4f}"


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 0.0001 else f"{value:.1e}"


def _effect(value: float) -> str:
    return f"{value:+.2f}" if np.isfinite(value) else ("+inf" if value > 0 else "-inf")


def tradeoff_sentence(tradeoff: TradeOff) -> str:
    """A trade-off in words: "fts5+dense wins recall@5 against fts5 (+0.0400) but loses
    significantly on mrr (-0.0300, p (Holm) 0.0100): a trade, not a plain win."."""
    lost = ", ".join(f"{metric} ({delta:+.4f}, p (Holm) {_p(p)})" for metric, delta, p in tradeoff.losses)
    return (f"{tradeoff.winner} wins {tradeoff.metric} against {tradeoff.loser} ({tradeoff.gain:+.4f}) but loses "
            f"significantly on {lost}: a trade, not a plain win.")


def tradeoffs(comparison: Comparison, scope: str = "overall") -> list[str]:
    """The comparison's trade-offs (`Comparison.tradeoffs`) in words, one sentence each."""
    return [tradeoff_sentence(tradeoff) for tradeoff in comparison.tradeoffs(scope)]


def _verdict(row: ComparisonRow) -> str:
    if row.family == DIAGNOSTIC:
        return "not tested"
    return "yes" if row.significant else "no"


def holm_p(comparison: Comparison, row: ComparisonRow) -> str:
    """A row's Holm-adjusted p with the family it was adjusted in: "Holm p 0.3183 among 6 primary
    rows". One pair gets another p in a family of another size (an ablation's 6 variants against
    a compare of 3), so the number is never shown without it."""
    size = sum(1 for other in comparison.rows if other.family == row.family)
    return holm_among(row.p_holm, size, row.family)


def holm_among(p_holm: float | None, size: int, family: str) -> str:
    """"Holm p 0.3183 among 6 primary rows": a Holm-adjusted p beside the family it was adjusted in
    (its size unknown, 0: the p alone, as a study.json written before the size was kept)."""
    p = f"Holm p {_p(p_holm if p_holm is not None else float('nan'))}"
    return f"{p} among {size} {family} row{'' if size == 1 else 's'}" if size else p


def family_note(comparison: Comparison) -> str:
    """One sentence on which rows Holm's correction ran over, and which decide."""
    count = {family: sum(1 for row in comparison.rows if row.family == family)
             for family in (PRIMARY, EXPLORATORY, DIAGNOSTIC)}
    def rows(n: int) -> str:
        return f"{n} row" if n == 1 else f"{n} rows"

    primary = ", ".join(comparison.primary) or "none"
    note = (f"Holm within each family: primary = {primary} ({rows(count[PRIMARY])}), the decision "
            f"(choose it before looking, with --primary); exploratory = the other "
            f"{rows(count[EXPLORATORY])}, corrected among themselves: for looking, not deciding")
    if count[DIAGNOSTIC]:
        note += "; diagnostic (judged@k) = a check on the qrels, not a hypothesis: not tested"
    return note + "."


def delta_table(comparison: Comparison, system: str, title: str | None = None) -> ReportTable:
    """One challenger against the baseline: a row per metric and scope, the primary family first."""
    order = {PRIMARY: 0, EXPLORATORY: 1, DIAGNOSTIC: 2}
    mine = sorted((row for row in comparison.rows if row.system == system), key=lambda r: order[r.family])
    rows = []
    for row in mine:
        rows.append([
            row.metric, row.scope, row.family, row.n, four_places(row.baseline), four_places(row.value), _signed(row.delta),
            f"[{_signed(row.ci_low)}, {_signed(row.ci_high)}]", four_places(row.prob_not_better),
            "" if row.family == DIAGNOSTIC else _p(row.p_value),
            "" if row.p_holm is None else _p(row.p_holm), _verdict(row),
            f"{row.wins}/{row.ties}/{row.losses}", _effect(row.effect_size),
        ])
    not_significant = sum(1 for row in mine if row.family != DIAGNOSTIC and not row.significant)
    notes = [(
        f"delta = {system} - {comparison.baseline}; 95% paired-bootstrap percentile interval "
        f"({comparison.n_resamples} resamples, seed {comparison.seed}); P(d<=0): share of resamples "
        f"where the delta is <= 0; d_z: Cohen's d_z, delta / sd of the per-query differences (a "
        f"standardised effect: about 0.2 small, 0.5 medium, 0.8 large); p: {PAIRED_TESTS[comparison.test]}; "
        "W/T/L: queries won/tied/lost (which ones: 'losses' in --json)."
    ), family_note(comparison)]
    if not_significant:
        notes.append(
            f"{not_significant} row(s) marked significant=no (Holm-adjusted p >= {ALPHA}): "
            "treat those deltas as noise."
        )
    return ReportTable(
        title=title or f"{system} vs {comparison.baseline} (baseline)",
        headers=["metric", "scope", "family", "n", comparison.baseline, system, "delta", "95% CI",
                 "P(d<=0)", "p", "p (Holm)", "significant", "W/T/L", "d_z"],
        rows=rows,
        notes=notes,
    )


def answer_table(comparison: Comparison) -> ReportTable:
    """The answer first: on the decision metric (the first primary metric), which system wins in
    each scope, by how much, with its 95% interval; "no real difference" unless Holm-significant
    within the row's family (the overall rows are the decision; strata are exploratory unless
    they were made primary)."""
    metric = comparison.primary[0] if comparison.primary else comparison.metrics[0]
    rows = []
    for row in comparison.rows:
        if row.metric != metric:
            continue
        if not row.significant:
            winner = "no real difference"
        else:
            winner = row.system if row.delta > 0 else comparison.baseline
            costs = comparison.costs(row)
            if costs:
                winner += ", but loses " + ", ".join(f"{c.metric} ({-abs(c.delta):+.4f})" for c in costs)
        rows.append([row.scope, row.n, row.system, row.family, winner, four_places(row.baseline), four_places(row.value),
                     _signed(row.delta), f"[{_signed(row.ci_low)}, {_signed(row.ci_high)}]",
                     "" if row.p_holm is None else _p(row.p_holm), "yes" if row.significant else "no"])
    return ReportTable(
        title=f"Answer: who wins on {metric}",
        headers=["scope", "n", "system", "family", "wins", f"{metric} {comparison.baseline}", f"{metric} system",
                 "delta", "95% CI", "p (Holm)", "significant"],
        rows=rows,
        notes=[f"Decision metric: {metric} (--primary; default the first of --metrics); each system "
               f"against the baseline {comparison.baseline}. A system wins a scope only when its delta "
               f"is significant (Holm-adjusted p < {ALPHA} within its family); the interval is the "
               "95% paired bootstrap."],
    )


def scores_table(comparison: Comparison) -> ReportTable:
    """Every system's value per metric and scope, side by side."""
    values: dict[tuple[str, str], list[str]] = {}
    for row in comparison.rows:
        cell = values.setdefault((row.metric, row.scope), [four_places(row.baseline)])
        cell.append(four_places(row.value))
    rows = [[metric, scope, comparison.scopes[scope], *cells] for (metric, scope), cells in values.items()]
    return ReportTable(title="Scores", headers=["metric", "scope", "n", *comparison.labels], rows=rows)


def comparison_charts(comparison: Comparison) -> list[Chart | dict[str, Any]]:
    """Per-stratum deltas with intervals, recall@k curves where available, latency distributions."""
    charts: list[Chart | dict[str, Any]] = []
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
        charts.append(Chart(kind="bar", title=f"{metric}: delta vs {comparison.baseline}, per stratum (95% CI)",
                            groups=groups, intervals=intervals, significant=significant, y_label=f"delta {metric}"))
    curves = _recall_curve(comparison)
    if curves is not None:
        charts.append(curves)
    latencies = {}
    for label, result in zip(comparison.labels, comparison.results, strict=True):
        values = result.latencies()
        if values:
            latencies[label] = values
    if latencies:
        charts.append(Chart(kind="histogram", title="Single-query latency (ms)", series=latencies, x_label="ms"))
    return charts


def _recall_curve(comparison: Comparison) -> Chart | None:
    """recall@k against k, from the recall@k metrics every result holds (two cutoffs at least)."""
    cutoffs: set[int] | None = None
    for result in comparison.results:
        found = {int(m.split("@")[1]) for m in result.metric_names if re.fullmatch(r"recall@\d+", m)}
        cutoffs = found if cutoffs is None else cutoffs & found
    if not cutoffs or len(cutoffs) < 2:
        return None
    xs = sorted(cutoffs)
    series = {label: [result.mean(f"recall@{x}") for x in xs]
              for label, result in zip(comparison.labels, comparison.results, strict=True)}
    return Chart(kind="line", title="recall@k (all queries)", x=xs, series=series, x_label="k", y_label="recall")


def verdict_sentences(comparison: Comparison) -> list[str]:
    """The answer in words, one sentence per challenger, on the decision metric over all queries:
    "bm25+dense does not beat bm25 on recall@5: +0.0130 [-0.0050, +0.0310], 984 queries, Holm p
    0.2000 among 3 primary rows"."""
    metric = comparison.primary[0] if comparison.primary else comparison.metrics[0]
    sentences = []
    for row in comparison.rows:
        if row.metric != metric or row.scope != "overall":
            continue
        if row.significant and row.delta > 0:
            verb = "beats"
        elif row.significant:
            verb = "is worse than"
        else:
            verb = "does not beat"
        held = "" if row.p_holm is None else f", {holm_p(comparison, row)}"
        sentences.append(f"{row.system} {verb} {comparison.baseline} on {metric}: {_signed(row.delta)} "
                         f"[{_signed(row.ci_low)}, {_signed(row.ci_high)}], {row.n} queries{held}.")
    return sentences


def shared_options(comparison: Comparison) -> set[tuple[str, str, str]]:
    """The option entries (part, key, value) every compared system has alike: a page shows each
    system's differing options and folds these away."""
    entries = [set(result.system.option_entries()) for result in comparison.results]
    return set.intersection(*entries) if entries else set()


def comparison_provenance(comparison: Comparison) -> list[tuple[str, str]]:
    """What a comparison measured: the dataset and its fingerprint, each system's settings, the
    software and dates of the runs, and the resampling; for a report's header."""
    import datetime
    import importlib.metadata

    if not comparison.results:
        return []
    rows = [row for row in provenance(comparison.results[0]) if row[0] == "dataset"]
    shared = shared_options(comparison)
    for label, result in zip(comparison.labels, comparison.results, strict=True):
        own = dict(provenance(result, hidden=shared))
        rows.append((f"system {label}", own.get(f"system {result.label}", "?")))
        rows.append((f"run of {label}", f"{own.get('run at', '?')}; {own.get('software', '?')}"))
    made = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    version = importlib.metadata.version("recall-kit")
    rows.append(("compared", f"{made} by recall-kit {version}: {comparison.n_resamples:,} paired bootstrap "
                             f"resamples and randomisation permutations, seed {comparison.seed}"))
    return rows


def pairwise_table(matrix: PairwiseMatrix, baseline: str | None = None) -> ReportTable:
    """The all-pairs matrix: row system minus column system, with the adjusted p and a marker.

    With a `baseline`, its pairs show their delta only: their p-values are the comparison's with the
    baseline (its table, in the decision's Holm families), so no pair carries two p-values on one
    page; the cells name the family of the p they show."""
    rows: list[list[Any]] = []
    for i, label in enumerate(matrix.labels):
        row: list[Any] = [label, four_places(matrix.means[i])]
        for j, cell in enumerate(matrix.cells[i]):
            if cell is None:
                row.append("")
                continue
            delta = _signed(cell.delta if abs(cell.delta) > TIE_TOLERANCE else 0.0)
            if baseline is not None and baseline in (label, matrix.labels[j]):
                row.append(f"{delta} (p: vs {baseline} table)")
            else:
                row.append(f"{delta} (p {_p(cell.p_adjusted)}, all pairs){' *' if cell.significant else ''}")
        rows.append(row)
    answered = (f" Pairs with the baseline {baseline} show no p here: theirs is in the {baseline} comparison "
                "tables (Holm within the decision's families), one p per pair on the page." if baseline else "")
    return ReportTable(
        title=f"All pairs on {matrix.metric} (all queries): row - column",
        headers=["system", matrix.metric, *matrix.labels],
        rows=rows,
        notes=[f"Each cell: mean {matrix.metric} of the row system minus the column system; p: "
               f"{PAIRED_TESTS[matrix.test]}, corrected by {matrix.correction} (the family named 'all pairs' "
               f"in the cells); * = significant (corrected p < {ALPHA}). Every pair is its own hypothesis "
               f"here, not only those with the baseline.{answered}"],
    )


def comparison_report(comparison: Comparison, title: str | None = None) -> Report:
    tables = [answer_table(comparison), scores_table(comparison)]
    tables += [pairwise_table(matrix, comparison.baseline) for matrix in comparison.pairwise.values()]
    tables += [delta_table(comparison, label) for label in comparison.labels[1:]]
    return Report(
        title=title or f"recall-kit compare: {', '.join(comparison.labels)}",
        tables=tables,
        notes=list(comparison.warnings) + tradeoffs(comparison),
        data=comparison.to_dict(),
        charts=comparison_charts(comparison),
        summary=verdict_sentences(comparison),
        provenance=comparison_provenance(comparison),
        provenance_details=_shared_details(comparison),
    )


def _shared_details(comparison: Comparison) -> list[tuple[str, str]]:
    shared = sorted(shared_options(comparison))
    return [("options every system shares", "; ".join(f"{part}.{key}={value}" for part, key, value in shared))] if shared else []


__all__ = ["answer_table", "comparison_charts", "comparison_provenance", "comparison_report", "delta_table", "family_note", "four_places", "holm_p", "pairwise_table", "scores_table", "shared_options", "tradeoff_sentence", "tradeoffs", "verdict_sentences"]
