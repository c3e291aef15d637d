"""How the document words the bounds step's rows and people's labels: each verdict's flip line, the
bounds table and the people's sentence (read from the study result).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from recall_kit.study.hole_evidence import verdict_bounds

if TYPE_CHECKING:
    from recall_kit.decide.holes import PairedBounds
    from recall_kit.study.result import KappaAgainst, KappaBetween, StudyResult, Verdict
    from recall_kit.types import ReportTable


def flip_line(verdict: Verdict, rows: Sequence[PairedBounds]) -> str:
    """``overall (adopt): cannot flip; recall@5 +0.19 in [+0.12, +0.30] ...`` for one verdict."""
    from recall_kit.decide.holes_report import flip_words

    can = [b for b in rows if b.can_flip]
    head = f"can flip (on {', '.join(b.metric for b in can)})" if can else "cannot flip"
    parts = [f"{b.metric} {b.delta:+.4f}, {b.low:+.4f} to {b.high:+.4f} over the unjudged top-{_k(b.metric)} hits "
             f"({b.verdict_low} / {b.verdict_high} at the ends; {flip_words(b)})" for b in rows]
    return f"{verdict.scope} ({verdict.verdict}): {head}; " + "; ".join(parts)


def _k(metric: str) -> str:
    return metric.rsplit("@", 1)[-1] if "@" in metric else "k"


def bounds_table(study: StudyResult) -> ReportTable | None:
    """The document's table: each verdict, whether the unjudged pairs can flip it, and its rows' bounds."""
    from recall_kit.types import ReportTable

    pairs = verdict_bounds(study)
    if not study.bounds or not pairs:
        return None
    rows = []
    for verdict, bounds in pairs:
        for b in bounds:
            rows.append([verdict.scope, verdict.verdict, "can flip" if b.can_flip else "cannot flip", b.metric,
                         f"{b.delta:+.4f}", f"[{b.low:+.4f}, {b.high:+.4f}]", f"{b.all_relevant:+.4f}",
                         f"{b.verdict_low} / {b.verdict_high}", b.holes, b.movers,
                         _f(b.condensed_baseline), _f(b.condensed_candidate)])
    return ReportTable(
        "What the unjudged pairs can do to each verdict",
        ["scope", "verdict", "flip", "metric", "delta", "range over the unjudged", "all relevant",
         "row at low / high end", "unjudged pairs", "can move it", f"{study.baseline} judged only",
         "challenger judged only"],
        rows,
        ["Every unjudged id in either system's top k labelled relevant or not, in every way: 'range' is the lowest "
         "and highest delta, 'row at low / high end' the paired test's outcome there (Holm over the decision "
         "rows). A verdict cannot flip when each of its rows keeps its outcome at both ends. `recall-kit label` "
         "orders the pairs by how far each can move a verdict that can flip."])


def _f(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _kappa(found: KappaBetween | KappaAgainst) -> str:
    """``0.42 on 12 pairs (10 agreed)``, or why kappa says nothing there."""
    agreed = f", {found.agreed} agreed" if found.agreed is not None else ""
    if found.kappa is None:
        return f"undefined on {found.n} pairs ({found.why or 'one grade only'}{agreed})"
    return f"{found.kappa:.3f} on {found.n} pairs" + (f" ({found.agreed} agreed)" if agreed else "")


def people_line(study: StudyResult) -> str | None:
    """Who labelled by hand, how many grades each gave, and their agreement (None: nobody)."""
    people = study.people
    if people is None or not people.assessors:
        return None
    counts = ", ".join(f"{name} {n} grades" for name, n in people.assessors.items())
    parts = [counts + (f"; {people.added} of their labels joined the judged set" if people.added is not None else "")]
    from recall_kit.study.people import conflicts_line

    conflicts = conflicts_line(people.conflicts)
    parts += [conflicts] if conflicts else []
    parts += [f"kappa {p.a} / {p.b} {_kappa(p)}" for p in people.between]
    parts += [f"kappa {p.assessor} / the model judge {_kappa(p)}" for p in people.against_model]
    parts += [f"kappa {p.assessor} / the user's qrels {_kappa(p)}" for p in people.against_qrels]
    if not people.between and len(people.assessors) > 1:
        parts.append("no pair graded by two assessors: agreement between them not measured")
    return "; ".join(parts)
