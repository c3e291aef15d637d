"""Normalised discounted cumulative gain at k, graded, with trec_eval's linear gain."""

from __future__ import annotations

import numpy as np

from recall_kit.measure.metrics._common import check_cutoff, divide
from recall_kit.types import JudgedRankings


def discounts(length: int) -> np.ndarray:
    """``1 / log2(rank + 1)`` for ranks 1..length (rank 1 is not discounted)."""
    return 1.0 / np.log2(np.arange(2, length + 2, dtype=np.float64))


def ndcg_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """nDCG@k, per query.

    ``DCG@k = sum_{r=1..k} gain(r) / log2(r + 1)`` with ``gain = grade`` (linear; negative grades
    count as 0), and ``nDCG@k = DCG@k / IDCG@k``, where IDCG@k is the DCG of the ideal ranking:
    every positively judged document of the qrels (retrieved or not), by grade descending, cut at
    k. 0 for a query with no relevant document.

    Reference: trec_eval ``ndcg_cut_k`` (``-m ndcg_cut.k``), whose default gain is the relevance
    level and whose discount is ``log2(rank + 1)``; Järvelin & Kekäläinen (2002).
    """
    check_cutoff(cutoff, required=True)
    gains = np.maximum(data.grades[:, :cutoff], 0).astype(np.float64, copy=False)
    ideal = data.ideal_grades[:, :cutoff].astype(np.float64, copy=False)
    dcg = gains @ discounts(gains.shape[1])
    idcg = ideal @ discounts(ideal.shape[1])
    return divide(dcg, idcg)
