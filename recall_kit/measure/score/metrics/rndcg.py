"""R-nDCG: nDCG averaged over the ranks where the ideal ranking's gain changes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, refuse_cutoff
from recall_kit.measure.score.metrics.ndcg_rel import dcg_prefixes
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def rndcg(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """R-nDCG, per query: the mean of ``DCG@b / IDCG@b`` over the ranks b after which the ideal
    ranking's gain drops (from one grade to a lower one, the last drop being to 0 at b = P, the
    positively graded documents), plus ``DCG / IDCG`` over the whole ranking when it is longer
    than P + 1 (as trec_eval counts). Gains are the grades. 0 for a query with no relevant
    document.

    Reference: trec_eval ``Rndcg`` (default gains), which averages nDCG at these points because
    nDCG's expected value jumps at each of them.
    """
    import numpy as np

    refuse_cutoff("rndcg", cutoff)
    dcg, idcg = dcg_prefixes(data)
    ideal = data.ideal_grades
    padded = np.zeros((ideal.shape[0], ideal.shape[1] + 1), dtype=ideal.dtype)
    padded[:, :-1] = ideal
    drops = (padded[:, :-1] > 0) & (padded[:, :-1] != padded[:, 1:])  # a drop after rank b
    ranks = np.arange(1, ideal.shape[1] + 1)
    at = np.take_along_axis(dcg, np.minimum(ranks, dcg.shape[1] - 1)[None, :].repeat(len(dcg), 0), axis=1)
    points = np.where(drops, divide(at, idcg[:, 1:]), 0.0).sum(axis=1)
    count = np.count_nonzero(drops, axis=1).astype(np.float64)
    num_positive = np.count_nonzero(ideal > 0, axis=1)
    # trec_eval reads rank P + 1 in the loop that ends at the last drop: only a ranking longer
    # than that adds its whole-ranking point.
    longer = np.asarray(data.lengths) > num_positive + 1
    whole = divide(dcg[np.arange(len(dcg)), np.asarray(data.lengths)], idcg[np.arange(len(idcg)), num_positive])
    points += np.where(longer & (num_positive > 0), whole, 0.0)
    count += longer & (num_positive > 0)
    return np.where(np.asarray(data.num_relevant) > 0, divide(points, count), 0.0)


METRIC = Metric(
    name="rndcg",
    compute=rndcg,
    cutoff="none",
    description="nDCG averaged where the ideal gain drops (trec_eval Rndcg).",
    aliases=("Rndcg",),
    bounds=(0.0, 1.0),
    trec_eval=("Rndcg",),
)
