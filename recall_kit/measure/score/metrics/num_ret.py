"""num_ret: how many documents a ranking holds."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import refuse_cutoff
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def num_retrieved(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """The number of documents retrieved, per query: the ranking's length (after ``-J``, the
    judged ones only). Summed, not averaged, over queries, as trec_eval's "all" line does.

    Reference: trec_eval ``num_ret``; ir_measures ``NumRet``.
    """
    import numpy as np

    refuse_cutoff("num_ret", cutoff)
    return np.asarray(data.lengths, dtype=np.float64)


METRIC = Metric(
    name="num_ret",
    compute=num_retrieved,
    cutoff="none",
    description="Documents retrieved; summed over queries (trec_eval num_ret).",
    aliases=("NumRet",),
    summary="sum",
    bounds=(0.0, math.inf),
    trec_eval=("num_ret",),
)
