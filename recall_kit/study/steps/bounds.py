"""The bounds step: what the pairs still unjudged could do to every decision row (bounds.json), and
those bounds (with people's labels and their agreement) put on the study result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import StepRule, compare_reads, eval_steps, simpler_reads, write_output

if TYPE_CHECKING:
    from recall_kit.decide.holes import PairedBounds
    from recall_kit.study.result import HoleBounds, StudyResult, Verdict


@dataclass
class BoundsOutput:
    """bounds.json: the head-to-head's decision rows' bounds (`rows`) and the compare-down's (`simpler`),
    each `PairedBounds.to_dict` (its fields and the verdicts they give), read back by `PairedBounds.from_dict`."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    simpler: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class BoundsReads:
    """What the bounds step reads: the head-to-head's systems (the baseline first) and the compare-down
    systems (the best candidate first), the decision metrics, resamples and seed."""

    systems: list[str]
    simpler: list[str]
    decision: list[str]
    resamples: int
    seed: int


def bounds_reads(config: StudyConfig, artefacts: Artefacts) -> BoundsReads:
    """The bounds step's rows: the head-to-head's (the baseline first) and the compare-down's (the best first)."""
    head = compare_reads(config)
    simpler = simpler_reads(config, artefacts).systems if len(head.systems) > 2 else []
    return BoundsReads(head.systems, simpler, list(config.decision_metrics), config.resamples, config.seed)


def decision_bounds(reads: BoundsReads, artefacts: Artefacts) -> tuple[list[PairedBounds], list[PairedBounds]]:
    """The bounds of every decision row: each candidate against the baseline on each decision metric
    with a rank cutoff, overall and per stratum (one Holm family, as the comparison); and the best
    candidate against each simpler one, overall (their own family, as the compare-down step). The
    holes are the pairs no label judges: a pair only a model judge graded is one (its grade is a
    prediction), so a row says whether what the model alone graded can flip it."""
    from recall_kit.decide.holes import Holes, boundable, decision_contrasts
    from recall_kit.measure.result import load_result
    from recall_kit.study.people import labelled_qrels

    labelled = labelled_qrels(artefacts.path("judgments"))  # a model's grade is not a label: its pairs are holes
    names = list(dict.fromkeys([*reads.systems, *reads.simpler]))
    results = {name: load_result(artefacts.path(f"eval/{name}") / "result.json") for name in names}
    base = results[reads.systems[0]]
    metrics = boundable(reads.decision)
    head = decision_contrasts(reads.systems[0], reads.systems[1:], metrics, base.query_ids, base.stratum_of())
    down = decision_contrasts(reads.simpler[0], reads.simpler[1:], metrics, base.query_ids,
                              dict.fromkeys(base.query_ids, ""), family="simpler") if reads.simpler else []
    if not head and not down:
        return [], []
    holes = Holes({name: result.rankings() for name, result in results.items()}, labelled, [*head, *down],
                  n_resamples=reads.resamples, seed=reads.seed)
    found = holes.bounds()
    return found[:len(head)], found[len(head):]


def make_bounds(reads: BoundsReads, artefacts: Artefacts, folder: Path) -> None:
    """The bounds step: bounds.json."""
    head, down = decision_bounds(reads, artefacts)
    write_output(folder / "bounds.json", BoundsOutput([b.to_dict() for b in head], [b.to_dict() for b in down]))


RULE = StepRule("bounds", BoundsReads, lambda at, artefacts: bounds_reads(at.config, artefacts), make_bounds,
                needs=lambda at: ["judgments", *eval_steps(at)])


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
