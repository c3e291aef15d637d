"""Precision at k: the share of the top k that is relevant."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import relevant_retrieved, require_cutoff
from recall_kit.types import TREC_EVAL_CUTOFFS, JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def precision_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Precision@k, per query.

    ``precision@k = |relevant ∩ top k| / k``; the denominator is k even when the ranking is
    shorter than k, as in trec_eval.

    Reference: trec_eval ``P_k`` (``-m P.k``).
    """
    k = require_cutoff(cutoff)
    return relevant_retrieved(data, k) / float(k)


METRIC = Metric(
    name="precision",
    compute=precision_at_k,
    cutoff="required",
    description="Share of the top k that is relevant (trec_eval P_k).",
    aliases=("P_{k}", "P@{k}"),
    bounds=(0.0, 1.0),
    trec_eval=("P",),
    trec_cutoffs=TREC_EVAL_CUTOFFS,
)
