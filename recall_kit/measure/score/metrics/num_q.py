"""num_q: how many queries were scored."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import refuse_cutoff
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def num_queries(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """1 per query scored; summed over queries, it is their number, as trec_eval's ``num_q``.

    Reference: trec_eval ``num_q``.
    """
    import numpy as np

    refuse_cutoff("num_q", cutoff)
    return np.ones(len(data.query_ids), dtype=np.float64)


METRIC = Metric(
    name="num_q",
    compute=num_queries,
    cutoff="none",
    description="Queries scored; summed (trec_eval num_q).",
    aliases=("NumQ",),
    summary="sum",
    bounds=(0.0, math.inf),
    trec_eval=("num_q",),
)
