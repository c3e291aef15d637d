"""Log inverse square rank fusion (log-ISR)."""

from __future__ import annotations

import math

from recall_kit.plugin import FusionRequest, Hit
from recall_kit_fusion._comb import RankCombination, aggregate, rank_legs


class LogInverseSquareRank(RankCombination):
    r"""log-ISR (Mourão, Martins & Magalhães, Computerized Medical Imaging and Graphics 39, 2015).

    .. math::  \mathrm{score}(d) = \ln |\{L \ni d\}| \cdot \sum_{L \ni d} \frac{w_L}{r_L(d)^2}

    ISR with the agreement factor damped by a logarithm, as ``ranx.fuse(method="log_isr")``
    (weight 1 everywhere). As defined, a document only one leg returned scores ln 1 = 0: it ranks
    below every document two legs agree on, whatever its rank; use `isr` or `rrf` when a leg
    must be able to place a document only it found.
    """

    description = "log-ISR: ln(legs that returned it) x sum of w / rank^2 (Mourão et al. 2015)"

    def fuse(self, request: FusionRequest) -> list[Hit]:
        legs = rank_legs(request, self.depth(request.k), lambda rank, _n: 1.0 / rank ** 2)
        return aggregate(legs, lambda values: sum(values) * math.log(len(values)), request.k)
