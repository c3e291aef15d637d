"""num_ret: how many documents a ranking holds."""

from __future__ import annotations

import numpy as np

from recall_kit.measure.metrics._common import refuse_cutoff
from recall_kit.types import JudgedRankings


def num_retrieved(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """The number of documents retrieved, per query: the ranking's length (after ``-J``, the
    judged ones only). Summed, not averaged, over queries, as trec_eval's "all" line does.

    Reference: trec_eval ``num_ret``; ir_measures ``NumRet``.
    """
    refuse_cutoff("num_ret", cutoff)
    return np.asarray(data.lengths, dtype=np.float64)
