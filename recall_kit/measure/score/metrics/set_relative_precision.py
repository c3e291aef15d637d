"""Set relative precision: relevant retrieved over the most that could have been."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, refuse_cutoff, relevant_retrieved
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def set_relative_precision(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Set relative precision, per query: ``num_rel_ret / min(num_ret, num_rel)``: 1 when the
    ranking is as good as its length and the qrels allow; 0 for an empty ranking or a query with
    no relevant document.

    Reference: trec_eval ``set_relative_P``.
    """
    import numpy as np

    refuse_cutoff("set_relative_precision", cutoff)
    return divide(relevant_retrieved(data, None), np.minimum(data.lengths, data.num_relevant))


METRIC = Metric(
    name="set_relative_precision",
    compute=set_relative_precision,
    cutoff="none",
    description="num_rel_ret / min(num_ret, num_rel) (trec_eval set_relative_P).",
    aliases=("set_relative_P",),
    bounds=(0.0, 1.0),
    trec_eval=("set_relative_P",),
)
