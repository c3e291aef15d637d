"""F1 at k: the harmonic mean of precision@k and recall@k."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff, divide, relevant_retrieved
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def f1_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """F1@k, per query (over the whole ranking when `cutoff` is None).

    ``F1@k = 2 P R / (P + R) = 2 |relevant ∩ top k| / (k + |relevant|)``, with P = precision@k
    (denominator k, as trec_eval's P_k, even for a ranking shorter than k) and R = recall@k.
    Without a cutoff, P is over the whole ranking: ``2 num_rel_ret / (num_ret + num_rel)``.
    0 when nothing relevant is retrieved or the query has no relevant document.

    Reference: van Rijsbergen, Information Retrieval (1979), the F measure with beta = 1;
    trec_eval ``set_F`` (no cutoff, ``-m set_F.1``).
    """
    import numpy as np

    check_cutoff(cutoff, required=False)
    found = relevant_retrieved(data, cutoff)
    shown = np.asarray(data.lengths, dtype=np.float64) if cutoff is None else float(cutoff)
    f1 = divide(2.0 * found, shown + data.num_relevant)
    return np.where(found > 0, f1, 0.0)


METRIC = Metric(
    name="f1",
    compute=f1_at_k,
    cutoff="optional",
    description="Harmonic mean of precision@k and recall@k; no cutoff: trec_eval set_F.",
    aliases=("set_F", "SetF", "F1@{k}"),
    bounds=(0.0, 1.0),
    trec_eval=("set_F",),
)
