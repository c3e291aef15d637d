"""Interpolated precision at a recall level: one point of the recall-precision curve."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics.eleven_point_precision import interpolated_precision
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def iprec_at_recall(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Interpolated precision at recall ``cutoff / 100``, per query: ``iprec_at_recall@50`` is
    the best precision at or below the rank where half the relevant documents are found (see
    `interpolated_precision` for trec_eval 9's rule turning the level into a count); 0 when the
    ranking never reaches that recall.

    Reference: trec_eval ``iprec_at_recall_0.50`` (``-m iprec_at_recall``: levels 0.0, 0.1, ...,
    1.0, here @0, @10, ..., @100); the standard recall-precision graph (Salton & McGill 1983).
    """
    if isinstance(cutoff, bool) or not isinstance(cutoff, int) or not 0 <= cutoff <= 100:
        raise ValueError(f"iprec_at_recall needs a recall level in percent, 0..100, got {cutoff!r}")
    return interpolated_precision(data, (cutoff / 100,))[:, 0]


METRIC = Metric(
    name="iprec_at_recall",
    compute=iprec_at_recall,
    cutoff="required",
    description="Interpolated precision at recall k% (trec_eval iprec_at_recall_0.k0; @0 .. @100).",
    aliases=("iprec_at_recall_{k}",),
    bounds=(0.0, 1.0),
    trec_eval=("iprec_at_recall",),
    trec_cutoffs=(0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100),
    cutoff_unit="percent",
)
