"""CombSUM: the sum of a document's normalised scores."""

from __future__ import annotations

from recall_kit_fusion._comb import ScoreCombination


class CombSum(ScoreCombination):
    r"""CombSUM (Fox & Shaw, "Combination of multiple searches", TREC-2 1993).

    .. math::  \mathrm{score}(d) = \sum_{L \ni d} w_L \, \mathrm{norm}_L(s_L(d))

    over the legs that returned d (a leg that missed it adds 0). ``ranx.fuse(method="sum")``
    with weight 1 everywhere; with weights it is ranx's ``wsum`` (and our `convex`, whose floors
    are 0 for minmax, rank and max on non-negative scores).
    """

    description = "CombSUM: sum of normalised scores (Fox & Shaw 1993)"

    def combine(self, values: list[float]) -> float:
        return sum(values)
