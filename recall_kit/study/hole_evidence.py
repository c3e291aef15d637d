"""What the document makes of the bounds and intervals steps' outputs: every decision row's bounds
and each verdict's summary of them (`attach_bounds`, with people's labels and their agreement), the
hole-aware intervals of the system the verdict is about (`attach_intervals`), and the bottom line's
sentence and the table they give. Kept apart from the steps, so a study run enters each step's
module once, while that step runs (tests/study/steps/test_steps.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.bounds import BoundsOutput
from recall_kit.study.steps.intervals import BY_PROBABILITIES, FILE, NO_JUDGE

if TYPE_CHECKING:
    from recall_kit.decide.holes import PairedBounds
    from recall_kit.study.result import HoleBounds, HoleInterval, HoleIntervals, StudyResult, Verdict
    from recall_kit.types import ReportTable


def attach_bounds(study: StudyResult, found: BoundsOutput, people: Mapping[str, Any] | None,
                  agreement: Mapping[str, Any] | None) -> None:
    """Put the bounds step's rows on the study result: every row (`study.bounds`), each verdict's
    summary (`Verdict.bounds`) and each compare-down pair's (`SimplerComparison.bounds`); and the
    people's labels with their agreement (`study.people`)."""
    from recall_kit.decide.holes import PairedBounds
    from recall_kit.document_reader import from_json
    from recall_kit.study.result import SCHEMA, KappaAgainst, KappaBetween, PeopleSummary

    study.bounds = [PairedBounds.from_dict(row) for row in found.rows]
    down = [PairedBounds.from_dict(row) for row in found.simpler]
    for verdict in study.verdicts:
        verdict.bounds = hole_bounds([b for b in study.bounds if b.candidate == verdict.system
                                      and b.scope == verdict.scope])
    if study.recommendation is not None:
        for pair in study.recommendation.comparisons:
            pair.bounds = hole_bounds([b for b in down if b.baseline == pair.best and b.candidate == pair.simpler])
            if pair.bounds is None and pair.simpler == study.baseline:  # the head-to-head's row, the other way round
                pair.bounds = hole_bounds([b for b in study.bounds if b.candidate == pair.best and b.scope == "overall"],
                                          sign=-1.0)
    agreement = agreement or {}
    if people or agreement:
        study.people = PeopleSummary(
            assessors=agreement.get("assessors", {}), added=(people or {}).get("added"),
            conflicts=dict((people or {}).get("conflicts") or {}),
            between=[from_json(KappaBetween, row, "agreement.json", SCHEMA) for row in agreement.get("between", [])],
            against_model=[from_json(KappaAgainst, row, "agreement.json", SCHEMA) for row in agreement.get("against_model", [])],
            against_qrels=[from_json(KappaAgainst, row, "agreement.json", SCHEMA) for row in agreement.get("against_qrels", [])])


def hole_bounds(rows: Sequence[PairedBounds], sign: float = 1.0) -> HoleBounds | None:
    """One verdict's (or pair's) `HoleBounds`: it can flip when any of its rows can; the deltas are its
    first decision metric's (times `sign`: -1 reads a row the other way round). None without rows."""
    from recall_kit.study.result import HoleBounds

    if not rows:
        return None
    first = rows[0]
    judged_only = (None if first.condensed_baseline is None or first.condensed_candidate is None
                   else first.condensed_candidate - first.condensed_baseline)
    return HoleBounds(can_flip=any(b.can_flip for b in rows), delta_if_all_relevant=sign * first.all_relevant,
                      delta_if_none_relevant=sign * first.delta,
                      judged_only_delta=None if judged_only is None else sign * judged_only)


def verdict_bounds(study: StudyResult) -> list[tuple[Verdict, list[PairedBounds]]]:
    """Each verdict with the bounds of its decision rows (the challenger's, in its scope)."""
    return [(verdict, [b for b in study.bounds if b.candidate == verdict.system and b.scope == verdict.scope])
            for verdict in study.verdicts]


def attach_intervals(study: StudyResult, graph: Artefacts) -> None:
    """Put the intervals step's evidence on the study result (`study.intervals`)."""
    import json

    from recall_kit.study.result import HoleIntervals

    path = graph.path("intervals") / FILE
    if not path.is_file():
        return
    study.intervals = verdict_intervals(study, HoleIntervals.from_dict(json.loads(path.read_text(encoding="utf-8")),
                                                                     str(path)))


def verdict_intervals(study: StudyResult, found: HoleIntervals) -> HoleIntervals:
    """The intervals step's rows of the system the verdict is about (`rules.verdict_subject`: the
    recommended system, or the best candidate where the rule keeps the baseline), the others left out:
    the document's intervals, its bottom line and the label page speak of one comparison."""
    from recall_kit.study.rules import verdict_subject

    found.challenger = verdict_subject(study)
    found.rows = [row for row in found.rows if row.candidate == found.challenger]
    return found


def _overall(study: StudyResult) -> list[HoleInterval]:
    found = study.intervals
    return [] if found is None else [row for row in found.rows if row.scope == "overall"]


def interval_line(study: StudyResult) -> str | None:
    """The bottom line's sentence on the holes: the hole-aware interval of each overall decision row
    once people labelled enough of the sample, else what the printed intervals assume and how many
    labels would give one that does not. None when no row has a hole that can move it."""
    found, rows = study.intervals, _overall(study)
    if found is None or not rows or all(row.open == 0 for row in rows):
        return None
    predictor = found.predictor
    labelled = [(row.metric, row.interval) for row in rows if row.interval is not None]
    if labelled:
        first = labelled[0][1]
        parts = [f"{metric} {iv.delta:+.4f} [{iv.low:+.4f}, {iv.high:+.4f}]" + (" (includes 0)" if iv.low <= 0 <= iv.high else "")
                 for metric, iv in labelled]
        return (f"Hole-aware interval ({found.challenger} against {study.baseline}, prediction-powered: "
                f"people's labels on {first.labelled} of the {first.open} open queries drawn at random, "
                f"{first.labels} labels; predictor: {predictor}): " + "; ".join(parts) + ".")
    need = max(rows, key=lambda row: row.plan.labels)
    how = (f"labelling every open query's holes ({need.plan.labels:,} labels)" if need.plan.everything else
           f"about {need.plan.labels:,} labels ({need.plan.queries} queries of the seeded sample)")
    goal = ("narrow enough to tell the delta as scored from 0, if it holds" if need.plan_target == "zero"
            else "as narrow as the printed one")
    assumed = ("every unjudged hit is not relevant" if predictor == NO_JUDGE else
               f"{predictor} for the unjudged hits are right" if predictor.endswith(BY_PROBABILITIES) else
               f"{predictor}'s grades of the unjudged hits are right")
    return (f"These intervals assume {assumed} ({need.open} of {need.n} queries have a hole in the"
            f" store's own labels that can move their {need.metric} delta). A prediction-powered interval "
            f"that does not, {goal} (width {need.plan.width:.3f}), needs {how} (ppi-python's power "
            f"analysis; `recall-kit label` offers the sample first).")


def intervals_table(study: StudyResult) -> ReportTable | None:
    """The document's table: each of the challenger's decision rows with its hole-aware interval."""
    from recall_kit.decide.ppi import MIN_LABELLED
    from recall_kit.types import ReportTable

    found = study.intervals
    if found is None or not found.rows:
        return None
    rows = []
    for row in found.rows:
        iv = row.interval
        rows.append([row.scope, row.metric, row.open, row.labelled,
                     "" if iv is None else f"{iv.delta:+.4f}",
                     f"not yet (fewer than {MIN_LABELLED} labelled)" if iv is None else f"[{iv.low:+.4f}, {iv.high:+.4f}]",
                     "" if iv is None else iv.method, "" if iv is None else iv.labels,
                     "all" if row.plan.everything else f"{row.plan.labels:,} ({row.plan.queries})"])
    return ReportTable(
        "Hole-aware intervals",
        ["scope", "metric", "open queries", "labelled", "delta", "95% interval", "method", "labels",
         "labels (queries) for the planned width"],
        rows,
        [f"{found.challenger} against {study.baseline}. Prediction-powered inference (ppi-python, PPI++): a "
         f"person's labels on a seeded random sample of the open queries (a label can move their delta; the others "
         f"count exactly), the predictor ({found.predictor}) on the rest. Valid whatever the predictor's errors; "
         f"the sample's first queries: {', '.join(found.sample[:5])}{' ...' if len(found.sample) > 5 else ''}."])
