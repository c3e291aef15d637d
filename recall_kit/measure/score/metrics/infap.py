"""Inferred average precision: AP estimated from a random sample of the judgment pool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, exclusive_cumsum, refuse_cutoff
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np

#: trec_eval's INFAP_EPSILON: keeps the estimated precision defined when nothing above is judged.
INFAP_EPSILON = 0.00001


def inferred_average_precision(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """infAP, per query, over the whole ranking.

    The qrels say which documents were pooled (any grade, negative included) and which of those
    were judged (grade >= 0); a negative grade (trec_eval's -1) marks a pooled document left
    unjudged by the sampling. At each relevant document, at 1-based rank r, with j = r - 1
    documents above it, of which ``rel`` relevant, ``non`` judged non-relevant and ``unj`` pooled
    but unjudged (documents outside the pool count as non-relevant):

    ``E[prec@r] = 1/r + ((r - 1) / r) * ((rel + non + unj) / (r - 1))
    * ((rel + eps) / (rel + non + 2 eps))``  (1 at rank 1),

    and ``infAP = (1 / R) * sum E[prec@r]`` over the relevant documents retrieved, R the relevant
    documents in the qrels, eps = 0.00001. With complete judgments (no negative grades) the
    estimate is AP up to eps. It is random-free: the sampling happened when the pool was judged,
    and the qrels record its outcome.

    Reference: Yilmaz & Aslam, "Estimating average precision with incomplete and imperfect
    judgments", CIKM 2006; trec_eval ``infAP``.
    """
    import numpy as np

    refuse_cutoff("infap", cutoff)
    relevant = data.relevant
    nonrelevant = data.judged & ~relevant
    unjudged = data.pooled & ~data.judged
    rel_above = exclusive_cumsum(relevant).astype(np.float64)
    non_above = exclusive_cumsum(nonrelevant).astype(np.float64)
    unj_above = exclusive_cumsum(unjudged).astype(np.float64)
    ranks = np.arange(1, relevant.shape[1] + 1, dtype=np.float64)
    share = (rel_above + INFAP_EPSILON) / (rel_above + non_above + 2 * INFAP_EPSILON)
    expected_precision = (1.0 + (rel_above + non_above + unj_above) * share) / ranks
    terms = np.where(relevant, expected_precision, 0.0)
    return divide(terms.sum(axis=1), data.num_relevant)


METRIC = Metric(
    name="infap",
    compute=inferred_average_precision,
    cutoff="none",
    description="Inferred AP from a sampled pool; grade -1: pooled, unjudged (trec_eval infAP).",
    aliases=("infAP",),
    bounds=(0.0, 1.0),
    trec_eval=("infAP",),
)
