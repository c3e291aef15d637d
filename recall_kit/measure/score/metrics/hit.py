"""Hit at k (success): whether any relevant document is in the top k."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff, relevant_at
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def hit_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Hit@k, per query: ``1 if |relevant ∩ top k| >= 1 else 0``.

    Reference: trec_eval ``success_k`` (``-m success.k``).
    """
    import numpy as np

    check_cutoff(cutoff, required=True)
    return np.asarray(relevant_at(data, cutoff).any(axis=1), dtype=np.float64)


METRIC = Metric(
    name="hit",
    compute=hit_at_k,
    cutoff="required",
    description="1 when any relevant document is in the top k (trec_eval success_k).",
    aliases=("success_{k}", "Success@{k}", "hit_rate@{k}"),
    bounds=(0.0, 1.0),
    trec_eval=("success",),
    trec_cutoffs=(1, 5, 10),
)
