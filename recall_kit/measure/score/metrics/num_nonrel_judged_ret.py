"""num_nonrel_judged_ret: how many judged non-relevant documents a ranking holds."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import refuse_cutoff
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def num_nonrelevant_judged_retrieved(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """The number of judged non-relevant documents (0 <= grade < the relevance level) in the
    ranking, per query; unjudged documents are not counted. Summed over queries, as trec_eval's
    "all" line does.

    Reference: trec_eval ``num_nonrel_judged_ret``.
    """
    import numpy as np

    refuse_cutoff("num_nonrel_judged_ret", cutoff)
    return np.count_nonzero(data.judged & ~data.relevant, axis=1).astype(np.float64)


METRIC = Metric(
    name="num_nonrel_judged_ret",
    compute=num_nonrelevant_judged_retrieved,
    cutoff="none",
    description="Judged non-relevant documents retrieved; summed (trec_eval num_nonrel_judged_ret).",
    summary="sum",
    bounds=(0.0, math.inf),
    trec_eval=("num_nonrel_judged_ret",),
)
