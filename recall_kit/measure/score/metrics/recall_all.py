"""All-recall at k: whether every relevant document of a query is in the top k."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff, relevant_retrieved
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def recall_all_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Recall_all@k, per query: 1 when the top k hold every relevant document, else 0.

    ``recall_all@k = [ |relevant ∩ top k| = |relevant| ]`` for ``|relevant| >= 1``; 0 for a query
    with no relevant document. Useful for multi-hop queries, where one missing piece fails the
    answer.

    Reference: no trec_eval measure; equals ``recall_k == 1`` (ranx: none; sometimes called
    "complete recall" or "R-cap").
    """
    import numpy as np

    check_cutoff(cutoff, required=True)
    found = relevant_retrieved(data, cutoff)
    complete = (found == data.num_relevant) & (data.num_relevant > 0)
    return complete.astype(np.float64)


METRIC = Metric(
    name="recall_all",
    compute=recall_all_at_k,
    cutoff="required",
    description="1 when every relevant document is in the top k, else 0.",
    bounds=(0.0, 1.0),
)
