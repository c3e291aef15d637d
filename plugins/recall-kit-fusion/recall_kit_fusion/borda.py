"""Borda count fusion (BordaFuse)."""

from __future__ import annotations

from recall_kit.plugin import FusionRequest, Hit
from recall_kit_fusion._comb import RankCombination
from recall_kit_fusion._common import active_legs, ranked


class BordaFuse(RankCombination):
    r"""BordaFuse (Aslam & Montague, "Models for metasearch", SIGIR 2001).

    With n candidates (the union of the legs' top `depth` hits for the query), leg L gives its
    hit at rank r n - r + 1 points and every candidate it did not return (n - |L| + 1) / 2, the
    average of the points left over; a document's score is the weighted sum of its points:

    .. math::  \mathrm{score}(d) = \sum_L w_L \cdot \begin{cases} n - r_L(d) + 1 & d \in L \\
               (n - |L| + 1) / 2 & \text{otherwise} \end{cases}

    ``ranx.fuse(method="bordafuse")`` with weight 1 everywhere (ranx's ``w_bordafuse`` weighs
    the same points). Only positions count, so the legs' score scales do not matter.
    """

    description = "Borda count: n - rank + 1 points per leg, the unranked sharing the rest (Aslam & Montague 2001)"

    def fuse(self, request: FusionRequest) -> list[Hit]:
        legs = active_legs(request, self.depth(request.k))
        candidates = {hit.id: None for _name, _weight, hits in legs for hit in hits}
        n = len(candidates)
        scores = dict.fromkeys(candidates, 0.0)
        for _name, weight, hits in legs:
            points = {hit.id: float(n - index) for index, hit in enumerate(hits)}
            unranked = (n - len(hits) + 1) / 2.0
            for doc in candidates:
                scores[doc] += weight * points.get(doc, unranked)
        return ranked(scores, request.k)
