"""Set F: trec_eval's weighted harmonic mean of set precision and set recall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.measure.score.metrics._common import divide, relevant_retrieved
from recall_kit.types import JudgedRankings, Metric

if TYPE_CHECKING:
    import numpy as np


def set_f_weighted(data: JudgedRankings, cutoff: int | None = None) -> np.ndarray:
    """Set F, per query, with weight ``x = cutoff / 100`` (1 when no cutoff is given):

    ``set_F_x = (x + 1) * P * R / (x * P + R)`` with P = num_rel_ret / num_ret and
    R = num_rel_ret / num_rel over the whole ranking; 0 when nothing relevant is retrieved. x is
    trec_eval's parameter, the relative importance of recall (beta squared in van Rijsbergen's
    F): ``set_f_weighted@50`` is trec_eval's ``-m set_F.0.5``. ``set_F`` itself (x = 1) is `f1` uncut, whose
    name results keep.

    Reference: van Rijsbergen, Information Retrieval (1979); trec_eval ``set_F``.
    """
    import numpy as np

    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 0):
        raise ValueError(f"set_f_weighted needs a weight in percent, >= 0, got {cutoff!r}")
    weight = 1.0 if cutoff is None else cutoff / 100
    found = relevant_retrieved(data, None)
    precision = divide(found, data.lengths)
    recall = divide(found, data.num_relevant)
    value = divide((weight + 1.0) * precision * recall, weight * precision + recall)
    return np.where(found > 0, value, 0.0)


METRIC = Metric(
    name="set_f_weighted",
    compute=set_f_weighted,
    cutoff="optional",
    description="(x+1)PR/(xP+R) over the whole ranking, x = k/100, 1 uncut (trec_eval set_F.x).",
    aliases=("set_F_{k}",),
    bounds=(0.0, 1.0),
    cutoff_unit="percent",
)
