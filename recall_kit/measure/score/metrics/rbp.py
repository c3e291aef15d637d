"""Rank-biased precision: the expected rate of gain of a user who goes on with probability p."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff, relevant_at
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np

#: The persistence: the chance the user looks at the next document (ir_measures' default).
RBP_PERSISTENCE = 0.8


def persistence_weights(depth: int) -> np.ndarray:
    """``(1 - p) * p^(r - 1)`` for ranks r = 1..depth: how much each rank weighs in RBP."""
    import numpy as np

    return (1.0 - RBP_PERSISTENCE) * RBP_PERSISTENCE ** np.arange(depth, dtype=np.float64)


def rank_biased_precision(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """RBP, per query, over the whole ranking or its top k.

    ``RBP = (1 - p) * sum_r rel(r) * p^(r - 1)`` with p = 0.8 and rel(r) 1 when the document at
    rank r is relevant (grade >= the relevance level), else 0. Unjudged documents count as not
    relevant; `rbp_residual` says how much they (and the ranks past the ranking) could add.
    It needs no number of relevant documents, so it is defined on any qrels.

    Reference: Moffat & Zobel, "Rank-biased precision for measurement of retrieval
    effectiveness", ACM TOIS 27(1), 2008; equal to ir_measures ``RBP(rel=1)`` (p = 0.8; ir_measures'
    default ``RBP`` is graded, its gain the grade, so it differs on graded qrels). trec_eval
    10's ``rbp`` uses p = 0.9 and graded gains: it is not this measure's alias.
    """
    check_cutoff(cutoff, required=False)
    relevant = relevant_at(data, cutoff)
    return relevant @ persistence_weights(relevant.shape[1])


METRIC = Metric(
    name="rbp",
    compute=rank_biased_precision,
    cutoff="optional",
    description="Rank-biased precision, p = 0.8, binary (Moffat & Zobel 2008; ir_measures RBP(rel=1)).",
    aliases=("RBP", "RBP@{k}"),
    bounds=(0.0, 1.0),
)
