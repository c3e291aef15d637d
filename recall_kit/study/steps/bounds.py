"""The bounds step: what the pairs still unjudged could do to every decision row (bounds.json).
The document puts them on the study result (study/hole_evidence.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import StepRule, compare_reads, eval_steps, simpler_reads, write_output

if TYPE_CHECKING:
    from recall_kit.decide.holes import PairedBounds


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
