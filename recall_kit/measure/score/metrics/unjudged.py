"""Unjudged at k: the share of the top k without a relevance judgment (a red flag on the qrels)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import require_cutoff
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def unjudged_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """unj@k, per query: ``|unjudged ∩ top k| / k``, unjudged meaning absent from the qrels or
    with a negative grade (trec_eval counts -1 and -2 only: other negative grades are rare). The
    denominator is k even for a shorter ranking: the missing ranks count as judged, as in
    trec_eval. `judged@k` is the complementary share over the ranks shown.

    Reference: trec_eval 10 ``unj`` (Soboroff 2023; ``-m unj``: 5, 10, 20).
    """
    import numpy as np

    k = require_cutoff(cutoff)
    shown = np.arange(min(k, data.judged.shape[1])) < np.asarray(data.lengths)[:, None]
    return np.count_nonzero(shown & ~data.judged[:, :k], axis=1) / float(k)


METRIC = Metric(
    name="unjudged",
    compute=unjudged_at_k,
    cutoff="required",
    description="Share of the top k with no judgment, denominator k (trec_eval 10 unj_k).",
    aliases=("unj_{k}",),
    diagnostic=True,
    bounds=(0.0, 1.0),
    trec_eval=("unj",),
    trec_cutoffs=(5, 10, 20),
)
