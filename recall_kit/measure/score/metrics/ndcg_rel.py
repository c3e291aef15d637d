"""nDCG averaged over the relevant documents: nDCG read at each relevant document's rank."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, refuse_cutoff
from recall_kit.measure.score.metrics.ndcg import discounts
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def dcg_prefixes(data: JudgedRankings) -> tuple[np.ndarray, np.ndarray]:
    """(DCG@r for r = 0..D, IDCG@r for r = 0..P): the run's and the ideal ranking's cumulated
    gains with linear gain (negative grades gain 0) and log2 discount, a leading 0 column each."""
    import numpy as np

    gains = np.maximum(data.grades, 0).astype(np.float64)
    ideal = data.ideal_grades.astype(np.float64)
    dcg = np.zeros((gains.shape[0], gains.shape[1] + 1))
    np.cumsum(gains * discounts(gains.shape[1]), axis=1, out=dcg[:, 1:])
    idcg = np.zeros((ideal.shape[0], ideal.shape[1] + 1))
    np.cumsum(ideal * discounts(ideal.shape[1]), axis=1, out=idcg[:, 1:])
    return dcg, idcg


def ndcg_rel(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """nDCG averaged over the P positively graded documents of the qrels, per query.

    ``ndcg_rel = (1 / P) * [ sum_{r: grade(r) > 0} DCG@r / IDCG@min(r, P)
    + (P - found) * DCG / IDCG ]``: at the rank r of each positively graded document retrieved,
    the DCG so far over the ideal DCG so far; each one not retrieved (P - found of them) counts
    the final DCG over the full ideal DCG. Gains are the grades. 0 when P is 0.

    Reference: trec_eval ``ndcg_rel`` (default gains).
    """
    import numpy as np

    refuse_cutoff("ndcg_rel", cutoff)
    dcg, idcg = dcg_prefixes(data)
    positive = data.grades > 0
    num_positive = np.count_nonzero(data.ideal_grades > 0, axis=1)
    ranks = np.arange(1, positive.shape[1] + 1)
    ideal_rank = np.minimum(ranks[None, :], num_positive[:, None])
    ratio = divide(dcg[:, 1:], np.take_along_axis(idcg, ideal_rank, axis=1))
    found = np.count_nonzero(positive, axis=1)
    total_ideal = idcg[np.arange(len(idcg)), num_positive]
    rest = (num_positive - found) * divide(dcg[:, -1], total_ideal)
    return divide(np.where(positive, ratio, 0.0).sum(axis=1) + rest, num_positive)


METRIC = Metric(
    name="ndcg_rel",
    compute=ndcg_rel,
    cutoff="none",
    description="nDCG averaged over the rank of each relevant document (trec_eval ndcg_rel).",
    bounds=(0.0, 1.0),
    trec_eval=("ndcg_rel",),
)
