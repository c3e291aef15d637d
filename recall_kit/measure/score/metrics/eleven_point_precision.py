"""11-point interpolated average precision: the recall-precision curve at recall 0, 0.1, ..., 1."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import refuse_cutoff, relevant_at
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np

#: trec_eval's recall levels for iprec_at_recall and 11pt_avg.
RECALL_LEVELS = tuple(level / 10 for level in range(11))


def interpolated_precision(data: JudgedRankings, levels: tuple[float, ...] = RECALL_LEVELS) -> np.ndarray:
    """(Q, len(levels)) interpolated precision at each recall level, as trec_eval 9 computes it.

    The level becomes a count of relevant documents, ``c = floor(level * R + 0.9)`` (R the
    relevant documents in the qrels; trec_eval 9 and pytrec_eval, where trec_eval 10 rounds), and
    the value is the best precision at or below the rank of the c-th relevant document retrieved
    (``max_{j >= rank} P@j``; for c = 0, the best precision anywhere); 0 when fewer than c relevant
    documents are retrieved.
    """
    import numpy as np

    relevant = relevant_at(data, None)
    num_queries, depth = relevant.shape
    out = np.zeros((num_queries, len(levels)), dtype=np.float64)
    if depth == 0:
        return out
    found = np.cumsum(relevant, axis=1, dtype=np.int64)
    precision = found / np.arange(1, depth + 1, dtype=np.float64)
    best_below = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
    num_found = found[:, -1]
    num_relevant = np.asarray(data.num_relevant, dtype=np.float64)
    for column, level in enumerate(levels):
        needed = np.floor(level * num_relevant + 0.9).astype(np.int64)
        rank = np.argmax(found >= np.maximum(needed, 1)[:, None], axis=1)
        value = best_below[np.arange(num_queries), rank]
        out[:, column] = np.where(needed <= num_found, value, 0.0)
    return out


def eleven_point_precision(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """The mean of the interpolated precision at recall 0.0, 0.1, ..., 1.0, per query (see
    `interpolated_precision`); 0 for a query with nothing relevant retrieved.

    Reference: Salton & McGill, Introduction to Modern Information Retrieval (1983); trec_eval
    ``11pt_avg`` (the mean of its ``iprec_at_recall_0.00`` ... ``iprec_at_recall_1.00``).
    """
    refuse_cutoff("eleven_point_precision", cutoff)
    return interpolated_precision(data).mean(axis=1)


METRIC = Metric(
    name="eleven_point_precision",
    compute=eleven_point_precision,
    cutoff="none",
    description="Mean interpolated precision at recall 0, 0.1, ..., 1 (trec_eval 11pt_avg).",
    aliases=("11pt_avg",),
    bounds=(0.0, 1.0),
    trec_eval=("11pt_avg",),
)
