"""Geometric mean average precision: AP averaged geometrically, rewarding consistency."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.metrics.map import average_precision
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np

#: trec_eval's MIN_GEO_MEAN: a query's AP is raised to this before the log is taken.
MIN_GEO_MEAN = 0.00001


def geometric_average_precision(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Each query's average precision raised to at least 0.00001; the summary over queries is
    their geometric mean, ``exp(mean(log(max(AP, 0.00001))))`` (`Metric.summary` "geometric").

    A run that does very badly on a few queries loses more than under MAP. trec_eval reports
    gm_map only as a summary and its per-query value (``-q``, pytrec_eval) is the log; here the
    per-query value is the floored AP itself, so it reads as AP does.

    Reference: Robertson, "On GMAP", CIKM 2006; trec_eval ``gm_map``.
    """
    import numpy as np

    if cutoff is not None:
        raise ValueError("gm_map takes no cutoff")
    return np.maximum(average_precision(data, None), MIN_GEO_MEAN)


METRIC = Metric(
    name="gm_map",
    compute=geometric_average_precision,
    cutoff="none",
    description="Geometric mean of AP over queries, AP floored at 1e-5 (trec_eval gm_map).",
    summary="geometric",
    bounds=(0.0, 1.0),
    trec_eval=("gm_map",),
)
