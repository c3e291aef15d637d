"""nDCG with exponential gain, 2^grade - 1: the Web-track and learning-to-rank variant."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff
from recall_kit.measure.score.metrics.ndcg import normalised_dcg
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def ndcg_exponential_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """nDCG@k with exponential gain, per query (the whole ranking when `cutoff` is None).

    ``DCG@k = sum_{r=1..k} (2^grade(r) - 1) / log2(r + 1)`` and ``nDCG@k = DCG@k / IDCG@k``, the
    ideal ranking being every positively judged document by grade descending, cut at k. Negative
    grades and unjudged documents gain 0. With binary grades it equals `ndcg_at_k`; with graded
    ones it rewards the highest grades more. 0 for a query with no positive judgment.

    Reference: Burges et al., "Learning to rank using gradient descent", ICML 2005; gdeval.pl of
    the TREC Web track (ir_measures ``nDCG(dcg='exp-log2')@k``).
    """
    import numpy as np

    check_cutoff(cutoff, required=False)
    grades = np.maximum(data.grades[:, :cutoff], 0).astype(np.float64)
    ideal = data.ideal_grades[:, :cutoff].astype(np.float64)
    return normalised_dcg(np.exp2(grades) - 1.0, np.exp2(ideal) - 1.0)


METRIC = Metric(
    name="ndcg_exp",
    compute=ndcg_exponential_at_k,
    cutoff="optional",
    description="Graded nDCG with exponential gain 2^grade - 1 (gdeval, Burges et al. 2005).",
    aliases=("nDCG(dcg='exp-log2')", "nDCG(dcg='exp-log2')@{k}", 'ndcg_burges', 'ndcg_burges@{k}'),
    bounds=(0.0, 1.0),
)
