"""Judged at k: the share of the top k that has a relevance judgment (a check on the qrels)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, require_cutoff
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def judged_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Judged@k, per query: the fraction of the top ``min(k, n)`` documents that are judged.

    ``judged@k = |judged ∩ top k| / min(k, n)``, n being the ranking's length; a judgment is a
    grade >= 0 (0 included). A negative grade (trec_eval's -1: in the pool, not judged) is not a
    judgment, as trec_eval's ``unj_k`` counts it unjudged. The denominator is ``min(k, n)``, not
    k, so that a short ranking whose every document is judged scores 1: the metric says how far
    the other scores can be trusted, not how long the ranking is. An empty ranking scores 0
    (nothing was judged). Low values warn that unjudged documents, scored as not relevant, may
    hide real hits.

    Reference: ir_measures ``Judged@k`` (same denominator; it counts a -1 grade as judged);
    trec_eval ``unj_k`` (2023), the unjudged share with denominator k.
    """
    import numpy as np

    k = require_cutoff(cutoff)
    judged = np.count_nonzero(data.judged[:, :k], axis=1)
    # No ranking is longer than the arrays are wide: a huge k (2**63) means the whole ranking.
    shown = np.minimum(np.asarray(data.lengths, dtype=np.int64), min(k, data.grades.shape[1]))
    return divide(judged, shown)


METRIC = Metric(
    name="judged",
    compute=judged_at_k,
    cutoff="required",
    description="Share of the top k that has a judgment (grade >= 0): how far to trust the others.",
    default_cutoffs=(10,),
    aliases=("Judged@{k}",),
    diagnostic=True,
    bounds=(0.0, 1.0),
)
