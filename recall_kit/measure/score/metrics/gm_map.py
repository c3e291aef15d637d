"""Geometric mean average precision: AP averaged geometrically, rewarding consistency."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import refuse_cutoff
from recall_kit.measure.score.metrics.map import average_precision
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np

#: trec_eval's MIN_GEO_MEAN: a query's AP is raised to this before the log is taken.
MIN_GEO_MEAN = 0.00001


def log_floored(values: np.ndarray) -> np.ndarray:
    """``log(max(value, 0.00001))``: a per-query value of a "geometric" summary, as trec_eval's."""
    import numpy as np

    return np.log(np.maximum(values, MIN_GEO_MEAN))


def geometric_average_precision(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """``log(max(AP, 0.00001))`` per query, as trec_eval's ``-q`` and pytrec_eval give it; the
    summary over queries is exp of their mean, the geometric mean of the floored APs
    (`Metric.summary` "geometric").

    A run that does very badly on a few queries loses more than under MAP. Per-query values are
    logs, so `compare`'s paired deltas and tests are on log AP: a positive delta is exactly a
    higher GMAP.

    Reference: Robertson, "On GMAP", CIKM 2006; trec_eval ``gm_map``.
    """
    refuse_cutoff("gm_map", cutoff)
    return log_floored(average_precision(data, None))


METRIC = Metric(
    name="gm_map",
    compute=geometric_average_precision,
    cutoff="none",
    description="Geometric mean of AP (floored at 1e-5); per query: log AP (trec_eval gm_map).",
    summary="geometric",
    bounds=(math.log(MIN_GEO_MEAN), 1.0),  # a query's log (<= 0) and the summary (<= 1)
    trec_eval=("gm_map",),
)
