"""Discounted cumulative gain, not normalised: trec_eval's linear gain and log2 discount."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff
from recall_kit.measure.score.metrics.ndcg import discounts
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def dcg_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """DCG@k (the whole ranking when `cutoff` is None), per query:
    ``sum_{r=1..k} gain(r) / log2(r + 1)`` with ``gain = grade`` (negative grades and unjudged
    documents gain 0). Unbounded above: it grows with the grades and the number of relevant
    documents, so compare it only on the same qrels; `ndcg` is the normalised form.

    Reference: Järvelin & Kekäläinen, ACM TOIS 20(4), 2002; trec_eval ``ndcg``'s numerator, which
    pytrec_eval does not report, and ir_measures ``nDCG``'s (dcg='log2').
    """
    import numpy as np

    check_cutoff(cutoff, required=False)
    gains = np.maximum(data.grades[:, :cutoff], 0).astype(np.float64)
    return gains @ discounts(gains.shape[1])


METRIC = Metric(
    name="dcg",
    compute=dcg_at_k,
    cutoff="optional",
    description="DCG, linear gain, log2 discount, not normalised (nDCG's numerator).",
    aliases=("dcg_cut_{k}", "DCG", "DCG@{k}"),
    bounds=(0.0, math.inf),
    trec_eval=("dcg",),
)
