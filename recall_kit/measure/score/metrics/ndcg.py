"""Normalised discounted cumulative gain, graded, with trec_eval's linear gain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff, divide
from recall_kit.types import TREC_EVAL_CUTOFFS, JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def discounts(length: int) -> np.ndarray:
    """``1 / log2(rank + 1)`` for ranks 1..length (rank 1 is not discounted)."""
    import numpy as np

    return 1.0 / np.log2(np.arange(2, length + 2, dtype=np.float64))


def normalised_dcg(gains: np.ndarray, ideal_gains: np.ndarray) -> np.ndarray:
    """``DCG(gains) / DCG(ideal_gains)`` row by row, both already cut; 0 where the ideal is 0."""
    dcg = gains @ discounts(gains.shape[1])
    idcg = ideal_gains @ discounts(ideal_gains.shape[1])
    return divide(dcg, idcg)


def ndcg_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """nDCG@k (or nDCG over the whole ranking when `cutoff` is None), per query.

    ``DCG@k = sum_{r=1..k} gain(r) / log2(r + 1)`` with ``gain = grade`` (linear; negative grades
    count as 0), and ``nDCG@k = DCG@k / IDCG@k``, where IDCG@k is the DCG of the ideal ranking:
    every positively judged document of the qrels (retrieved or not), by grade descending, cut at
    k. Without a cutoff, DCG covers the whole ranking and IDCG every positive judgment. 0 for a
    query with no positive judgment. The relevance level (``-l``) does not change it: gains are
    the grades, as in trec_eval.

    Reference: trec_eval ``ndcg_cut_k`` (``-m ndcg_cut.k``) and ``ndcg`` (no cutoff), whose
    default gain is the relevance grade and whose discount is ``log2(rank + 1)``; Järvelin &
    Kekäläinen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4), 2002.
    """
    import numpy as np

    check_cutoff(cutoff, required=False)
    gains = np.maximum(data.grades[:, :cutoff], 0).astype(np.float64, copy=False)
    ideal = data.ideal_grades[:, :cutoff].astype(np.float64, copy=False)
    return normalised_dcg(gains, ideal)


METRIC = Metric(
    name="ndcg",
    compute=ndcg_at_k,
    cutoff="optional",
    description="Graded nDCG, linear gain, log2 discount (trec_eval ndcg_cut_k; ndcg uncut).",
    default_cutoffs=(10,),
    aliases=("ndcg_cut_{k}", "nDCG", "nDCG@{k}"),
    bounds=(0.0, 1.0),
    trec_eval=("ndcg", "ndcg_cut"),
    trec_cutoffs=TREC_EVAL_CUTOFFS,
)
