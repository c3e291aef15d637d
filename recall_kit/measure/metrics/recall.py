"""Recall at k: the share of a query's relevant documents found in the top k."""

from __future__ import annotations

import numpy as np

from recall_kit.measure.metrics._common import check_cutoff, divide, relevant_retrieved
from recall_kit.types import JudgedRankings


def recall_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Recall@k, per query.

    ``recall@k = |relevant ∩ top k| / |relevant|``, relevant meaning grade >= 1; 0 for a query
    with no relevant document.

    Reference: trec_eval ``recall_k`` (``-m recall.k``).
    """
    check_cutoff(cutoff, required=True)
    return divide(relevant_retrieved(data, cutoff), data.num_relevant)
