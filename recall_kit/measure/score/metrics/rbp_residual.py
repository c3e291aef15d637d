"""RBP's residual: how much rank-biased precision the unjudged and unseen ranks could still add."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import check_cutoff
from recall_kit.measure.score.metrics.rbp import RBP_PERSISTENCE, persistence_weights
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def rbp_residual(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """The RBP residual, per query: the most `rbp` could grow were every unknown rank relevant.

    ``residual = (1 - p) * sum_{r <= n, r unjudged} p^(r - 1) + p^n`` with p = 0.8 and n the
    ranking's length (cut at k when a cutoff is given): the unjudged documents in the ranking
    (absent from the qrels, or with a negative grade) plus every rank past it. ``rbp`` and
    ``rbp + rbp_residual`` bracket the score full judgments would give.

    Reference: Moffat & Zobel, ACM TOIS 27(1), 2008, section 4 (the residual). trec_eval 10's
    ``rbp_resid`` (p = 0.9) leaves out the ranks past the ranking when none is unjudged.
    """
    import numpy as np

    check_cutoff(cutoff, required=False)
    unjudged = ~data.judged[:, :cutoff]
    shown = np.minimum(np.asarray(data.lengths, dtype=np.int64), unjudged.shape[1])
    unjudged &= np.arange(unjudged.shape[1]) < shown[:, None]  # padding past a ranking is not a rank
    return unjudged @ persistence_weights(unjudged.shape[1]) + RBP_PERSISTENCE ** shown.astype(np.float64)


METRIC = Metric(
    name="rbp_residual",
    compute=rbp_residual,
    cutoff="optional",
    description="What rbp could still gain from unjudged and unseen ranks (Moffat & Zobel 2008).",
    bounds=(0.0, 1.0),
)
