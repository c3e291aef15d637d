"""Relative precision at k: relevant in the top k over the most the top k could hold."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, relevant_retrieved, require_cutoff
from recall_kit.types import TREC_EVAL_CUTOFFS, JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def relative_precision_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Relative precision@k, per query: ``|relevant ∩ top k| / min(k, num_rel)``, so a query
    with fewer than k relevant documents can still score 1; 0 for a query with none.

    Reference: trec_eval ``relative_P_k`` (``-m relative_P.k``).
    """
    import numpy as np

    k = require_cutoff(cutoff)
    return divide(relevant_retrieved(data, k), np.minimum(data.num_relevant, k))


METRIC = Metric(
    name="relative_precision",
    compute=relative_precision_at_k,
    cutoff="required",
    description="Relevant in the top k over min(k, relevant in the qrels) (trec_eval relative_P_k).",
    aliases=("relative_P_{k}",),
    bounds=(0.0, 1.0),
    trec_eval=("relative_P",),
    trec_cutoffs=TREC_EVAL_CUTOFFS,
)
