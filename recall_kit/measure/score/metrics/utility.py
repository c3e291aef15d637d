"""Set utility: a gain for each relevant document retrieved, a cost for each other one."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import refuse_cutoff, relevant_retrieved
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def utility(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Utility with trec_eval's default coefficients (1, -1, 0, 0), per query:
    ``num_rel_ret - (num_ret - num_rel_ret)``: +1 per relevant document retrieved, -1 per other
    document retrieved (judged or not). Other coefficients are not offered.

    Reference: trec_eval ``utility`` (``-m utility.1,-1,0,0``), averaged over queries as it does.
    """
    import numpy as np

    refuse_cutoff("utility", cutoff)
    found = relevant_retrieved(data, None)
    return 2.0 * found - np.asarray(data.lengths, dtype=np.float64)


METRIC = Metric(
    name="utility",
    compute=utility,
    cutoff="none",
    description="Relevant retrieved minus other retrieved (trec_eval utility, coefficients 1,-1,0,0).",
    bounds=(-math.inf, math.inf),
    trec_eval=("utility",),
)
