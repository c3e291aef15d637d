"""CombMNZ: the sum of a document's normalised scores times how many legs returned it."""

from __future__ import annotations

from recall_kit_fusion._comb import ScoreCombination


class CombMnz(ScoreCombination):
    r"""CombMNZ (Fox & Shaw, "Combination of multiple searches", TREC-2 1993; Lee, SIGIR 1997).

    .. math::  \mathrm{score}(d) = |\{L \ni d\}| \cdot \sum_{L \ni d} w_L \, \mathrm{norm}_L(s_L(d))

    Agreement is rewarded: a document two legs returned counts its sum twice.
    ``ranx.fuse(method="mnz")`` with weight 1 everywhere.
    """

    description = "CombMNZ: sum of normalised scores x number of legs that returned the document"

    def combine(self, values: list[float]) -> float:
        return sum(values) * len(values)
