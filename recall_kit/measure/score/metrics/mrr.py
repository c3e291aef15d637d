"""Reciprocal rank: one over the rank of the first relevant document."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff, relevant_at
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def reciprocal_rank(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Reciprocal rank (MRR once averaged), per query, over the whole ranking or its top k.

    ``RR = 1 / min{r : grade(r) >= 1}``, and 0 when no relevant document is ranked (in the top k
    when a cutoff is given).

    Reference: trec_eval ``recip_rank`` (whole ranking); ``mrr@k`` is ``recip_rank`` on the run
    cut at k (trec_eval ``-M k``).
    """
    import numpy as np

    check_cutoff(cutoff, required=False)
    relevant = relevant_at(data, cutoff)
    num_queries, depth = relevant.shape
    found = np.asarray(relevant.any(axis=1))
    first = np.argmax(relevant, axis=1) if depth else np.zeros(num_queries, dtype=np.intp)
    out = np.zeros(num_queries, dtype=np.float64)
    out[found] = 1.0 / (first[found] + 1.0)
    return out


METRIC = Metric(
    name="mrr",
    compute=reciprocal_rank,
    cutoff="optional",
    description="Reciprocal rank of the first relevant document (trec_eval recip_rank).",
    default_cutoffs=(None,),
    aliases=("recip_rank", "RR", "RR@{k}"),
    bounds=(0.0, 1.0),
    trec_eval=("recip_rank",),
)
