"""Precision at multiples of R, the number of relevant documents."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def rprec_mult(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Precision at rank ``c = floor(x * R + 0.9)`` with ``x = cutoff / 100`` and R the relevant
    documents in the qrels, per query: ``rprec_mult@100`` is R-precision, ``@200`` precision at
    2R. The denominator is c even past the ranking's end; 0 when c is 0 (no relevant document).

    Reference: trec_eval ``Rprec_mult_0.20`` ... ``Rprec_mult_2.00`` (``-m Rprec_mult``; here
    @20 ... @200), whose +0.9 rounding this follows.
    """
    import numpy as np

    if isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 0:
        raise ValueError(f"rprec_mult needs a multiple of R in percent, >= 0, got {cutoff!r}")
    relevant = data.relevant
    rank = np.floor(cutoff / 100 * np.asarray(data.num_relevant, dtype=np.float64) + 0.9).astype(np.int64)
    found = np.zeros((relevant.shape[0], relevant.shape[1] + 1), dtype=np.int64)
    np.cumsum(relevant, axis=1, out=found[:, 1:])
    at_rank = np.take_along_axis(found, np.minimum(rank, relevant.shape[1])[:, None], axis=1)[:, 0]
    return divide(at_rank, rank)


METRIC = Metric(
    name="rprec_mult",
    compute=rprec_mult,
    cutoff="required",
    description="Precision at rank x*R for x = k/100 (trec_eval Rprec_mult_0.k; @100 is Rprec).",
    aliases=("Rprec_mult_{k}",),
    bounds=(0.0, 1.0),
    trec_eval=("Rprec_mult",),
    trec_cutoffs=(20, 40, 60, 80, 100, 120, 140, 160, 180, 200),
    cutoff_unit="percent",
)
