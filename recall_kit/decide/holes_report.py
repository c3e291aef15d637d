"""Presenting what the holes can do: one line per bound, and the table `compare --bounds` shows.
Imports nothing from the computation but the bound's type."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from recall_kit.types import Report, ReportTable

if TYPE_CHECKING:
    from recall_kit.decide.holes import PairedBounds


def flip_words(bound: PairedBounds) -> str:
    """``cannot flip`` or ``can flip (N unjudged pairs can move it)``."""
    if not bound.can_flip:
        return "cannot flip"
    return f"can flip ({bound.movers} unjudged pair{'s' if bound.movers != 1 else ''} can move it)"


def bound_sentence(bound: PairedBounds) -> str:
    """One line: the delta, its range over the holes, the verdict at each end, and whether it can flip."""
    ends = (f"{bound.verdict_low} at the low end (p {bound.p_low:.4f})"
            if bound.verdict_low == bound.verdict_high else
            f"{bound.verdict_low} at the low end (p {bound.p_low:.4f}), {bound.verdict_high} at the high end "
            f"(p {bound.p_high:.4f})")
    if bound.verdict_low == bound.verdict_high:
        ends = f"{bound.verdict_low} at both ends (p {bound.p_low:.4f} / {bound.p_high:.4f})"
    condensed = ""
    if bound.condensed_baseline is not None and bound.condensed_candidate is not None:
        condensed = (f"; judged only: {bound.baseline} {bound.condensed_baseline:.4f}, "
                     f"{bound.candidate} {bound.condensed_candidate:.4f}")
    return (f"{flip_words(bound)}: {bound.candidate} vs {bound.baseline}, {bound.metric} ({bound.scope}, n {bound.n}) "
            f"{bound.delta:+.4f} now ({bound.verdict}); {bound.low:+.4f} to {bound.high:+.4f} over every labelling "
            f"of its {bound.holes} unjudged top hits ({bound.all_relevant:+.4f} if all were relevant); {ends}"
            f"{condensed}")


def bounds_table(bounds: Sequence[PairedBounds]) -> ReportTable:
    """The bounds, one row each."""
    rows = [[b.candidate, b.metric, b.scope, b.n, f"{b.delta:+.4f}", f"[{b.low:+.4f}, {b.high:+.4f}]",
             f"{b.all_relevant:+.4f}", b.verdict, f"{b.verdict_low} / {b.verdict_high}", b.holes, b.movers,
             "" if b.condensed_baseline is None else f"{b.condensed_baseline:.4f}",
             "" if b.condensed_candidate is None else f"{b.condensed_candidate:.4f}",
             "can flip" if b.can_flip else "cannot flip"] for b in bounds]
    baseline = bounds[0].baseline if bounds else "baseline"
    return ReportTable(
        title=f"What the unjudged top hits can do (against {baseline})",
        headers=["system", "metric", "scope", "n", "delta", "delta if holes relevant / not (range)", "all relevant",
                 "verdict", "verdict at low / high end", "unjudged pairs", "can move it",
                 f"{baseline} judged only", "judged only", "flip"],
        rows=rows,
        notes=["Each unjudged id in either system's top k is labelled relevant or not in every way (graded 0-3 for a "
               "metric that reads grades, such as nDCG); the range is "
               "the lowest and highest delta, the verdict the paired test's at each end (Holm as the comparison). "
               "'judged only' drops unjudged ids before scoring (trec_eval -J)."],
    )


def bounds_report(bounds: Sequence[PairedBounds]) -> Report:
    return Report(title="recall-kit compare --bounds", tables=[bounds_table(bounds)],
                  summary=[bound_sentence(b) for b in bounds if b.scope == "overall"],
                  data={"bounds": [b.to_dict() for b in bounds]})
