"""Ideal DCG: the DCG of the best possible ranking, nDCG's denominator."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff
from recall_kit.measure.score.metrics.ndcg import discounts
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def ideal_dcg(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """IDCG (cut at k when a cutoff is given), per query: the DCG of every positively graded
    document of the qrels ranked by grade, ``sum_r grade_r / log2(r + 1)``. It depends on the
    qrels only, not on the run: a check on how much gain each query offers.

    Reference: trec_eval 10 ``ideal_dcg`` (not in trec_eval 9 or pytrec_eval).
    """
    check_cutoff(cutoff, required=False)
    ideal = data.ideal_grades[:, :cutoff].astype("float64")
    return ideal @ discounts(ideal.shape[1])


METRIC = Metric(
    name="ideal_dcg",
    compute=ideal_dcg,
    cutoff="optional",
    description="DCG of the ideal ranking, nDCG's denominator (trec_eval 10 ideal_dcg).",
    bounds=(0.0, math.inf),
    trec_eval=("ideal_dcg",),
)
