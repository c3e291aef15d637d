"""CombMIN: a document's worst normalised score over the legs that returned it."""

from __future__ import annotations

from recall_kit_fusion._comb import ScoreCombination


class CombMin(ScoreCombination):
    r"""CombMIN (Fox & Shaw, "Combination of multiple searches", TREC-2 1993).

    .. math::  \mathrm{score}(d) = \min_{L \ni d} w_L \, \mathrm{norm}_L(s_L(d))

    over the legs that returned d, as ``ranx.fuse(method="min")`` (a leg that missed d does
    not count as 0). Rewards documents no leg ranks low.
    """

    description = "CombMIN: the smallest normalised score among the legs that returned the document"

    def combine(self, values: list[float]) -> float:
        return min(values)
