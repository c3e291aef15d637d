"""CombANZ: the mean of a document's normalised scores over the legs that returned it."""

from __future__ import annotations

from recall_kit_fusion._comb import ScoreCombination


class CombAnz(ScoreCombination):
    r"""CombANZ (Fox & Shaw, "Combination of multiple searches", TREC-2 1993).

    .. math::  \mathrm{score}(d) = \frac{1}{|\{L \ni d\}|} \sum_{L \ni d} w_L \, \mathrm{norm}_L(s_L(d))

    CombSUM divided by the number of legs that returned d: no agreement bonus, so a document one
    leg found counts as much as its average elsewhere. ``ranx.fuse(method="anz")`` with weight
    1 everywhere.
    """

    description = "CombANZ: mean normalised score over the legs that returned the document"

    def combine(self, values: list[float]) -> float:
        return sum(values) / len(values)
