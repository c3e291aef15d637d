"""Recall at k: the share of a query's relevant documents found in the top k."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff, divide, relevant_retrieved
from recall_kit.types import TREC_EVAL_CUTOFFS, JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def recall_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Recall@k, per query.

    ``recall@k = |relevant ∩ top k| / |relevant|``, relevant meaning grade >= 1; 0 for a query
    with no relevant document.

    Reference: trec_eval ``recall_k`` (``-m recall.k``).
    """
    check_cutoff(cutoff, required=True)
    return divide(relevant_retrieved(data, cutoff), data.num_relevant)


METRIC = Metric(
    name="recall",
    compute=recall_at_k,
    cutoff="required",
    description="Share of the relevant documents found in the top k (trec_eval recall_k).",
    default_cutoffs=(5, 10),
    aliases=("recall_{k}", "R@{k}"),
    bounds=(0.0, 1.0),
    trec_eval=("recall",),
    trec_cutoffs=TREC_EVAL_CUTOFFS,
)
