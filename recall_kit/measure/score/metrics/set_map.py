"""Set MAP: set precision times set recall, the unranked analogue of average precision."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, refuse_cutoff, relevant_retrieved
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def set_map(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Set MAP, per query: ``set_P * set_recall = num_rel_ret^2 / (num_ret * num_rel)``; 0 for
    an empty ranking or a query with no relevant document.

    Reference: trec_eval ``set_map`` ("the unranked analogue of map").
    """
    refuse_cutoff("set_map", cutoff)
    found = relevant_retrieved(data, None)
    return divide(found, data.lengths) * divide(found, data.num_relevant)


METRIC = Metric(
    name="set_map",
    compute=set_map,
    cutoff="none",
    description="set_P times set_recall: unranked average precision (trec_eval set_map).",
    aliases=("SetAP",),
    bounds=(0.0, 1.0),
    trec_eval=("set_map",),
)
