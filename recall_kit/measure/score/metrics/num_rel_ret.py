"""num_rel_ret: how many relevant documents a ranking holds."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import refuse_cutoff, relevant_retrieved
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def num_relevant_retrieved(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """The number of relevant documents (grade >= the relevance level) in the ranking, per query.
    Summed, not averaged, over queries, as trec_eval's "all" line does.

    Reference: trec_eval ``num_rel_ret``; ir_measures ``NumRelRet``.
    """
    refuse_cutoff("num_rel_ret", cutoff)
    return relevant_retrieved(data, None)


METRIC = Metric(
    name="num_rel_ret",
    compute=num_relevant_retrieved,
    cutoff="none",
    description="Relevant documents retrieved; summed over queries (trec_eval num_rel_ret).",
    aliases=("NumRelRet",),
    summary="sum",
    bounds=(0.0, math.inf),
    trec_eval=("num_rel_ret",),
)
