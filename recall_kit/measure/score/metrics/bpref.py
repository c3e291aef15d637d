"""Binary preference: how often judged relevant documents are ranked above judged non-relevant ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, exclusive_cumsum, refuse_cutoff
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def bpref(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """bpref, per query, over the whole ranking.

    ``bpref = (1 / R) * sum_{relevant r retrieved} (1 - min(n_r, R) / min(N, R))``, where R is
    the number of relevant documents in the qrels, N the number of judged non-relevant ones
    (0 <= grade < relevance level), and n_r the judged non-relevant documents ranked above r
    (the term is 1 when n_r = 0). Unjudged documents, and pooled ones with a negative grade, are
    ignored: bpref reads judgments only. 0 for a query with no relevant document.

    Reference: Buckley & Voorhees, "Retrieval evaluation with incomplete information", SIGIR
    2004; trec_eval ``bpref``.
    """
    import numpy as np

    refuse_cutoff("bpref", cutoff)
    relevant = data.relevant
    nonrelevant = data.judged & ~relevant
    above = exclusive_cumsum(nonrelevant)
    num_relevant = np.asarray(data.num_relevant, dtype=np.int64)[:, None]
    bound = np.minimum(np.asarray(data.num_judged_nonrelevant, dtype=np.int64)[:, None], num_relevant)
    penalty = divide(np.minimum(above, num_relevant), np.maximum(bound, 1))
    terms = np.where(relevant, np.where(above > 0, 1.0 - penalty, 1.0), 0.0)
    return divide(terms.sum(axis=1), data.num_relevant)


METRIC = Metric(
    name="bpref",
    compute=bpref,
    cutoff="none",
    description="Share of judged relevant ranked above judged non-relevant (trec_eval bpref).",
    aliases=("Bpref",),
    bounds=(0.0, 1.0),
    trec_eval=("bpref",),
)
