"""Geometric mean bpref: bpref averaged geometrically over queries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.metrics.bpref import bpref
from recall_kit.measure.metrics.gm_map import MIN_GEO_MEAN
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def geometric_bpref(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Each query's bpref raised to at least 0.00001; summarised by the geometric mean, as
    `gm_map` summarises AP (per-query values are the floored bpref, not trec_eval's log).

    Reference: trec_eval ``gm_bpref``.
    """
    import numpy as np

    if cutoff is not None:
        raise ValueError("gm_bpref takes no cutoff")
    return np.maximum(bpref(data, None), MIN_GEO_MEAN)


METRIC = Metric(
    name="gm_bpref",
    compute=geometric_bpref,
    cutoff="none",
    description="Geometric mean of bpref over queries, floored at 1e-5 (trec_eval gm_bpref).",
    summary="geometric",
    bounds=(0.0, 1.0),
    trec_eval=("gm_bpref",),
)
