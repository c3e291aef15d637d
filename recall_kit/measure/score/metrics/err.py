"""Expected reciprocal rank: a cascade model of a user who stops at the first satisfying result."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import require_cutoff
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np

#: The top of the grade scale, as in the TREC Web track's gdeval.pl: a grade-4 document satisfies
#: with probability 15/16; higher grades are treated as 4.
ERR_MAX_GRADE = 4


def expected_reciprocal_rank(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """ERR@k, per query.

    ``ERR@k = sum_{r=1..k} (1 / r) * R(r) * prod_{i<r} (1 - R(i))`` with the probability that the
    document at rank r satisfies ``R = (2^g - 1) / 2^g_max``, g its grade (0 when unjudged or
    negative, at most g_max) and ``g_max = 4``. Binary grades give R = 1/16 per relevant document,
    so ERR is small on binary qrels: compare systems with it, not with other measures. It reads
    the grades, not the relevance level.

    Reference: Chapelle, Metzler, Zhang & Grinspan, "Expected reciprocal rank for graded
    relevance", CIKM 2009; gdeval.pl (TREC Web track, ir_measures ``ERR@k``), whose g_max is 4.
    """
    import numpy as np

    k = require_cutoff(cutoff)
    grades = np.clip(data.grades[:, :k], 0, ERR_MAX_GRADE).astype(np.float64)
    satisfied = (np.exp2(grades) - 1.0) / 2.0**ERR_MAX_GRADE
    # Probability of reaching rank r: the product of (1 - R) over the ranks above it.
    reached = np.cumprod(1.0 - satisfied, axis=1)
    if grades.shape[1]:
        reached = np.hstack([np.ones((len(reached), 1)), reached[:, :-1]])
    ranks = np.arange(1, grades.shape[1] + 1, dtype=np.float64)
    return (satisfied * reached / ranks).sum(axis=1)


METRIC = Metric(
    name="err",
    compute=expected_reciprocal_rank,
    cutoff="required",
    description="Expected reciprocal rank, cascade model, max grade 4 (gdeval ERR@k).",
    aliases=("ERR@{k}",),
    bounds=(0.0, 1.0),
)
