"""Geometric mean bpref: bpref averaged geometrically over queries."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import refuse_cutoff
from recall_kit.measure.score.metrics.bpref import bpref
from recall_kit.measure.score.metrics.gm_map import MIN_GEO_MEAN, log_floored
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def geometric_bpref(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """``log(max(bpref, 0.00001))`` per query, as trec_eval gives it; summarised by exp of the
    mean, the geometric mean, as `gm_map` summarises AP.

    Reference: trec_eval ``gm_bpref``.
    """
    refuse_cutoff("gm_bpref", cutoff)
    return log_floored(bpref(data, None))


METRIC = Metric(
    name="gm_bpref",
    compute=geometric_bpref,
    cutoff="none",
    description="Geometric mean of bpref (floored at 1e-5); per query: log bpref (trec_eval gm_bpref).",
    summary="geometric",
    bounds=(math.log(MIN_GEO_MEAN), 1.0),  # a query's log (<= 0) and the summary (<= 1)
    trec_eval=("gm_bpref",),
)
