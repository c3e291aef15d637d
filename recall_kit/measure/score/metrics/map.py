"""Average precision, over the whole ranking or cut at k."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff, divide, relevant_at
from recall_kit.types import TREC_EVAL_CUTOFFS, JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def average_precision(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Average precision (MAP once averaged), per query.

    ``AP@k = (1 / |relevant|) * sum_{r <= k, grade(r) >= 1} precision@r``: the precision at the
    rank of each relevant document retrieved (in the top k when a cutoff is given), divided by the
    number of relevant documents in the qrels, retrieved or not. 0 for a query with no relevant
    document.

    Reference: trec_eval ``map`` (no cutoff) and ``map_cut_k`` (``-m map_cut.k``).
    """
    import numpy as np

    check_cutoff(cutoff, required=False)
    relevant = relevant_at(data, cutoff)
    hits_so_far = np.cumsum(relevant, axis=1, dtype=np.int32)
    ranks = np.arange(1, relevant.shape[1] + 1, dtype=np.float64)
    precision_at_relevant = np.where(relevant, hits_so_far / ranks, 0.0)
    return divide(precision_at_relevant.sum(axis=1), data.num_relevant)


METRIC = Metric(
    name="map",
    compute=average_precision,
    cutoff="optional",
    description="Average precision, whole ranking or cut at k (trec_eval map, map_cut_k).",
    default_cutoffs=(None,),
    aliases=("map_cut_{k}", "AP", "AP@{k}"),
    bounds=(0.0, 1.0),
    trec_eval=("map", "map_cut"),
    trec_cutoffs=TREC_EVAL_CUTOFFS,
)
