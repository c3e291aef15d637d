"""num_rel_ret: how many relevant documents a ranking holds."""

from __future__ import annotations

import numpy as np

from recall_kit.measure.metrics._common import refuse_cutoff, relevant_retrieved
from recall_kit.types import JudgedRankings


def num_relevant_retrieved(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """The number of relevant documents (grade >= the relevance level) in the ranking, per query.
    Summed, not averaged, over queries, as trec_eval's "all" line does.

    Reference: trec_eval ``num_rel_ret``; ir_measures ``NumRelRet``.
    """
    refuse_cutoff("num_rel_ret", cutoff)
    return relevant_retrieved(data, None)
