"""R-precision: precision at rank R, R being the number of relevant documents."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def r_precision(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """R-precision, per query: ``|relevant ∩ top R| / R`` with ``R = |relevant|``.

    The denominator is R even when the ranking is shorter than R. 0 for a query with no relevant
    document. Takes no cutoff (R is the query's own cutoff).

    Reference: trec_eval ``Rprec``.
    """
    import numpy as np

    if cutoff is not None:
        raise ValueError("r_precision takes no cutoff")
    relevant = data.relevant
    num_relevant = np.asarray(data.num_relevant, dtype=np.int64)
    depth = relevant.shape[1]
    if depth == 0:
        return np.zeros(len(num_relevant), dtype=np.float64)
    # Relevant documents among the first r ranks, for r = 0..D.
    found = np.zeros((relevant.shape[0], depth + 1), dtype=np.int32)
    np.cumsum(relevant, axis=1, out=found[:, 1:])
    at_r = np.take_along_axis(found, np.minimum(num_relevant, depth)[:, None], axis=1)[:, 0]
    return divide(at_r, num_relevant)


METRIC = Metric(
    name="r_precision",
    compute=r_precision,
    cutoff="none",
    description="Precision at rank R, R = number of relevant documents (trec_eval Rprec).",
    aliases=("Rprec", "r-precision"),
    bounds=(0.0, 1.0),
    trec_eval=("Rprec",),
)
