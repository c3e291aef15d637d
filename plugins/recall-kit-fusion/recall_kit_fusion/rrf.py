"""Weighted reciprocal rank fusion (RRF)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from recall_kit.plugin import Fusion, FusionRequest, Hit
from recall_kit_fusion._common import active_legs, barred_legs, ranked


class ReciprocalRankFusion(Fusion):
    r"""Weighted reciprocal rank fusion.

    .. math::  \mathrm{score}(d) = \sum_{L} \frac{w_L}{k + \mathrm{rank}_L(d)}

    summed over the legs L with weight w_L > 0 that returned d among their top `depth` hits;
    rank_L(d) is d's 1-based position in leg L's list (the runner puts ties in trec_eval order,
    so positions are deterministic). A leg that did not return d adds nothing. With every weight
    1 this is exactly the formula of Cormack, Clarke & Büttcher, "Reciprocal rank fusion
    outperforms Condorcet and individual rank learning methods", SIGIR 2009 (k = 60), and of
    ``ranx.fuse(method="rrf")``. Fused ties are broken by `recall_kit.sort_hits`.

    Options: `k` (the rank offset, default 60) and `depth` (how many hits of each leg take part,
    default 100; each leg contributes its top max(depth, k) hits).

    When it loses: rrf ignores scores, so a weak leg's rank 1 counts as much as a strong leg's,
    and a weak leg drags a strong one down (LoCoMo dev: bm25 0.7052 recall@5, dense 0.4607,
    rrf 0.6202, convex min-max 0.7258). For two legs of different nature prefer `convex`;
    `diagnose` below catches configurations that bar a leg whatever the data, and the runner
    warns, after the run, when a leg alone beats the fused ranking.
    """

    description = "weighted reciprocal rank fusion: sum of w / (k + rank) (Cormack et al. 2009)"
    combines_legs: ClassVar[bool] = True

    @dataclass(frozen=True)
    class Options:
        #: The rank offset: larger k flattens the curve, so agreement counts more than top ranks.
        k: int = 60
        #: How many hits of each leg take part (at least the k scored).
        depth: int = 100

        def __post_init__(self) -> None:
            if self.k < 0:
                raise ValueError(f"k must be >= 0, got {self.k}")
            if self.depth < 1:
                raise ValueError(f"depth must be >= 1, got {self.depth}")

    def depth(self, k: int) -> int:
        return max(self.options.depth, k)

    def fuse(self, request: FusionRequest) -> list[Hit]:
        offset = self.options.k
        scores: dict[str, float] = {}
        for _name, weight, hits in active_legs(request, self.depth(request.k)):
            shares = [weight / (offset + rank) for rank in range(1, len(hits) + 1)]
            if not scores:  # the first leg's shares are the sums so far, if its ids are distinct
                scores = dict(zip([hit.id for hit in hits], shares))
                if len(scores) == len(hits):
                    continue
                scores = {}
            get = scores.get
            for hit, share in zip(hits, shares):
                scores[hit.id] = get(hit.id, 0.0) + share
        return ranked(scores, request.k)

    def diagnose(self, weights: Mapping[str, float], k: int) -> list[str]:
        """Legs whose rank-1 document scores below another leg's k-th alone: barred from the top k.

        Leg L's document found by no other leg scores at most w_L / (k_rrf + 1). Leg M gives its
        k-th document at least w_M / (k_rrf + k). When the second exceeds the first, M's top k
        documents outscore every document only L found whenever M returns k hits, whatever the
        other legs do. When no leg does that, some leg outputs let L's rank-1 document in (the
        other legs rank the same few documents first and disagree below), so nothing else is
        flagged. Agreement among the other legs can still push it out on a given query (k
        documents ranked in the top k by all of them collect sum_M w_M / (k_rrf + k) each), but
        that depends on the data: the runner's attribution table shows how often it happens.
        Scores are compared at float32 precision, as the fused ranking compares them (see
        `barred_legs`): a leg whose best only ties the other's k-th there is not barred.
        """
        offset = self.options.k
        warnings = []
        for leg, weight, other, best, worst in barred_legs(
            weights, k, lambda w: w / (offset + 1), lambda w, r: w / (offset + r)
        ):
            other_weight = weights[other]
            needed = other_weight * (offset + 1) / (offset + k)
            fix = f"raise its weight above {needed:.4g}"
            if other_weight > weight:
                # w_M / (c + k) <= w_L / (c + 1)  <=>  c <= (w_L k - w_M) / (w_M - w_L)
                limit = (weight * k - other_weight) / (other_weight - weight)
                if limit >= 0:
                    fix += f" or lower rrf.k to {int(limit)} or less"
            warnings.append(
                f"Fusion 'rrf': leg {leg!r} (weight {weight:g}) cannot place a document that only it "
                f"found in the fused top {k}: its best score {weight:g}/({offset}+1) = {best:.6f} is "
                f"below the score leg {other!r} gives its own {k}th hit, {other_weight:g}/({offset}+{k}) "
                f"= {worst:.6f}, so whenever {other!r} returns {k} hits they fill the top {k} first. "
                f"To fix it, {fix}."
            )
        return warnings
