"""What the candidate systems said about each (query, memory) pair (ranks, scores, leg ranks),
and the context a learning judge is fitted in (`types.JudgingContext`). Ids and numbers only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from recall_kit.curate.agreement import BinaryMeasures, binary_measures
from recall_kit.dataset import Dataset
from recall_kit.types import DocId, JudgingContext, PairEvidence, Qrels, RelevanceJudge

if TYPE_CHECKING:
    from recall_kit.measure.result import BenchmarkResult


def pair_evidence(named: Sequence[tuple[str, BenchmarkResult]]) -> dict[tuple[str, DocId], PairEvidence]:
    """(query, memory) -> each system's rank and score for it and each leg's best rank, over every
    id a system returned."""
    ranks: dict[tuple[str, DocId], dict[str, int]] = {}
    scores: dict[tuple[str, DocId], dict[str, float]] = {}
    legs: dict[tuple[str, DocId], dict[str, int]] = {}
    for system, result in named:
        for query in result.queries:
            for rank, (doc, score) in enumerate(zip(query.ranking, query.scores, strict=False), start=1):
                pair = (query.query_id, str(doc))
                ranks.setdefault(pair, {})[system] = rank
                scores.setdefault(pair, {})[system] = float(score)
                found = legs.setdefault(pair, {})
                for leg, leg_rank in (query.found_by.get(str(doc)) or {}).items():
                    found[leg] = min(found.get(leg, leg_rank), leg_rank)
    return {pair: PairEvidence(ranks[pair], scores[pair], legs[pair]) for pair in ranks}


def complete_labels(qrels: Qrels, evidence: dict[tuple[str, DocId], PairEvidence]) -> Qrels:
    """`qrels` taken as complete over the systems' rankings: every ranked id of a query with
    judgments that they do not list counts as not relevant (0)."""
    labels: Qrels = {query: dict(grades) for query, grades in qrels.items()}
    for query_id, doc in evidence:
        if query_id in labels:
            labels[query_id].setdefault(doc, 0)
    return labels


def judging_context(dataset: Dataset, named: Sequence[tuple[str, BenchmarkResult]], labels: Qrels,
                    seed: int = 0) -> JudgingContext:
    """A learning judge's context: `labels` on `dataset`, with the evidence of the `named` results."""
    evidence = pair_evidence(named)
    legs = sorted({leg for found in evidence.values() for leg in found.leg_ranks})
    return JudgingContext(labels=labels, queries={query.query_id: query for query in dataset.queries},
                          corpus={memory.id: memory for memory in dataset.corpus}, evidence=evidence, systems=tuple(name for name, _ in named),
                          legs=tuple(legs), seed=seed)


def measured_on_labels(judge: RelevanceJudge, context: JudgingContext, samples: int = 2000,
                       seed: int = 0) -> BinaryMeasures | None:
    """A fitted learning judge's grades of the labelled pairs it learnt from, against their labels.
    Honest only for a cross-fitted judge (`combined`: each labelled pair graded by a model fitted on
    other queries). None when no labelled pair is in the dataset."""
    pairs = [(context.queries[query], context.corpus[doc], grade)
             for query, grades in sorted(context.labels.items()) if query in context.queries
             for doc, grade in sorted(grades.items()) if doc in context.corpus]
    if not pairs:
        return None
    graded = list(judge.grade_many([(query, memory) for query, memory, _ in pairs]))
    kept = [(grade, found) for (_, _, grade), found in zip(pairs, graded, strict=True) if found is not None]
    return binary_measures([grade for grade, _ in kept], [found for _, found in kept], samples, seed=seed) if kept else None
