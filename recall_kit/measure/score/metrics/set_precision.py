"""Set precision: the share of everything retrieved that is relevant, with no cutoff."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, refuse_cutoff, relevant_retrieved
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def set_precision(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Set precision, per query: ``num_rel_ret / num_ret``, the ranking read as an unordered set;
    0 for an empty ranking.

    Reference: trec_eval ``set_P``; ir_measures ``SetP``.
    """
    refuse_cutoff("set_precision", cutoff)
    return divide(relevant_retrieved(data, None), data.lengths)


METRIC = Metric(
    name="set_precision",
    compute=set_precision,
    cutoff="none",
    description="Relevant share of everything retrieved, no cutoff (trec_eval set_P).",
    aliases=("set_P", "SetP"),
    bounds=(0.0, 1.0),
    trec_eval=("set_P",),
)
