"""Hit at k (success): whether any relevant document is in the top k."""

from __future__ import annotations

import numpy as np

from recall_kit.measure.metrics._common import check_cutoff, relevant_at
from recall_kit.types import JudgedRankings


def hit_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Hit@k, per query: ``1 if |relevant ∩ top k| >= 1 else 0``.

    Reference: trec_eval ``success_k`` (``-m success.k``).
    """
    check_cutoff(cutoff, required=True)
    return np.asarray(relevant_at(data, cutoff).any(axis=1), dtype=np.float64)
