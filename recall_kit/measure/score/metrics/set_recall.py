"""Set recall: the share of the relevant documents retrieved at any depth."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, refuse_cutoff, relevant_retrieved
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def set_recall(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Set recall, per query: ``num_rel_ret / num_rel``, the whole ranking read as a set; 0 for a
    query with no relevant document.

    Reference: trec_eval ``set_recall``; ir_measures ``SetR``.
    """
    refuse_cutoff("set_recall", cutoff)
    return divide(relevant_retrieved(data, None), data.num_relevant)


METRIC = Metric(
    name="set_recall",
    compute=set_recall,
    cutoff="none",
    description="Share of the relevant documents retrieved at any depth (trec_eval set_recall).",
    aliases=("SetR",),
    bounds=(0.0, 1.0),
    trec_eval=("set_recall",),
)
