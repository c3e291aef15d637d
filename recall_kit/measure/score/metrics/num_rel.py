"""num_rel: how many relevant documents the qrels hold for a query."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import refuse_cutoff
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def num_relevant(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """The number of relevant documents (grade >= the relevance level) in the qrels, per query,
    retrieved or not. Summed, not averaged, over queries, as trec_eval's "all" line does.

    Reference: trec_eval ``num_rel``; ir_measures ``NumRel``.
    """
    import numpy as np

    refuse_cutoff("num_rel", cutoff)
    return np.asarray(data.num_relevant, dtype=np.float64)


METRIC = Metric(
    name="num_rel",
    compute=num_relevant,
    cutoff="none",
    description="Relevant documents in the qrels; summed over queries (trec_eval num_rel).",
    aliases=("NumRel",),
    summary="sum",
    bounds=(0.0, math.inf),
    trec_eval=("num_rel",),
)
