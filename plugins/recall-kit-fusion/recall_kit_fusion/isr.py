"""Inverse square rank fusion (ISR)."""

from __future__ import annotations

from recall_kit.plugin import FusionRequest, Hit
from recall_kit_fusion._comb import RankCombination, aggregate, rank_legs


class InverseSquareRank(RankCombination):
    r"""ISR (Mourão, Martins & Magalhães, "Multimodal medical information retrieval with
    unsupervised rank fusion", Computerized Medical Imaging and Graphics 39, 2015).

    .. math::  \mathrm{score}(d) = |\{L \ni d\}| \cdot \sum_{L \ni d} \frac{w_L}{r_L(d)^2}

    CombMNZ of 1 / rank^2: steeper than RRF, so a leg's first few ranks dominate, and agreement
    multiplies. ``ranx.fuse(method="isr")`` with weight 1 everywhere.
    """

    description = "ISR: (legs that returned it) x sum of w / rank^2 (Mourão et al. 2015)"

    def fuse(self, request: FusionRequest) -> list[Hit]:
        legs = rank_legs(request, self.depth(request.k), lambda rank, _n: 1.0 / rank ** 2)
        return aggregate(legs, lambda values: sum(values) * len(values), request.k)
