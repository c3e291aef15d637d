"""CombMAX: a document's best normalised score over the legs."""

from __future__ import annotations

from recall_kit_fusion._comb import ScoreCombination


class CombMax(ScoreCombination):
    r"""CombMAX (Fox & Shaw, "Combination of multiple searches", TREC-2 1993).

    .. math::  \mathrm{score}(d) = \max_{L \ni d} w_L \, \mathrm{norm}_L(s_L(d))

    Every leg's own best hit competes for the top: no agreement bonus. ``ranx.fuse(method="max")``
    with weight 1 everywhere.
    """

    description = "CombMAX: the largest normalised score (Fox & Shaw 1993)"

    def combine(self, values: list[float]) -> float:
        return max(values)
