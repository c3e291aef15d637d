"""Convex combination of normalised scores (weighted CombSUM)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from recall_kit.plugin import Fusion, FusionRequest, Hit
from recall_kit_fusion._common import active_legs, barred_legs, minmax_values, ranked

Normalisation = Literal["minmax", "zscore", "max", "rank"]


def normalise(scores: Sequence[float], norm: Normalisation) -> tuple[list[float], float]:
    """One leg's scores (best first) normalised, and the floor given to documents it did not return.

    ============  ==================================  ======================================
    norm          value of the hit at rank r, score s  floor (a document the leg missed)
    ============  ==================================  ======================================
    ``minmax``    (s - min) / (max - min)              0 (its worst hit's value)
    ``zscore``    (s - mean) / std (population std)    the lowest value it returned (its worst hit's)
    ``max``       s / max |s|                          min(0, the lowest value it returned)
    ``rank``      1 - (r - 1) / n  (n hits returned)   0
    ============  ==================================  ======================================

    Degenerate case: when every returned score is equal (a single hit included), `minmax`,
    `zscore` and `max` give every returned hit 1.0 and the floor is 0, so a one-hit leg still
    lifts its hit above what it missed (min-max would give 0/0; ranx's guard gives 0, which would
    make such a leg contribute nothing). `rank` is never degenerate: it uses positions (ties are in
    trec_eval order). An empty leg contributes nothing (floor 0).

    The floor never exceeds a value the leg returned, so missing a document never helps it; for
    `minmax`, `rank` and (non-negative scores) `max` it is 0, as in ranx, which fills absent
    documents with 0 after normalising.
    """
    count = len(scores)
    if count == 0:
        return [], 0.0
    if norm == "rank":
        return [1.0 - index / count for index in range(count)], 0.0
    if max(scores) == min(scores):
        return [1.0] * count, 0.0
    if norm == "minmax":
        return minmax_values(scores), 0.0
    if norm == "zscore":
        mean = sum(scores) / count
        std = math.sqrt(sum((score - mean) ** 2 for score in scores) / count)
        values = [(score - mean) / std for score in scores]
        return values, min(values)
    if norm == "max":
        scale = max(abs(score) for score in scores)
        values = [score / scale for score in scores]
        return values, min(0.0, min(values))
    raise ValueError(f"unknown normalisation {norm!r}")


class ConvexFusion(Fusion):
    r"""Convex (weighted-sum) fusion of normalised scores.

    .. math::  \mathrm{score}(d) = \sum_{L} w_L \cdot
               \begin{cases} \mathrm{norm}_L(s_L(d)) & \text{if leg } L \text{ returned } d \\
                             \mathrm{floor}_L & \text{otherwise} \end{cases}

    over the legs with weight w_L > 0, each leg's top max(depth, k) hits normalised on their own
    (see `normalise` for the four normalisations and their floors). The weights need not sum to
    1: scaling every weight by one factor leaves the ranking unchanged. With `norm=minmax` this
    is ``ranx.fuse(norm="min-max", method="wsum")`` (Fox & Shaw, "Combination of multiple
    searches", TREC-2 1993, CombSUM; Bruch, Gai & Ingber, "An analysis of fusion functions for
    hybrid retrieval", ACM TOIS 2023, for the convex combination of normalised scores). Fused
    ties are broken by `recall_kit.sort_hits`.
    """

    description = "weighted sum of normalised scores (minmax, zscore, max or rank)"
    combines_legs: ClassVar[bool] = True

    @dataclass(frozen=True)
    class Options:
        #: How each leg's scores are put on one scale before the weighted sum.
        norm: Normalisation = "minmax"
        #: How many hits of each leg take part (at least the k scored).
        depth: int = 100

        def __post_init__(self) -> None:
            if self.depth < 1:
                raise ValueError(f"depth must be >= 1, got {self.depth}")

    def depth(self, k: int) -> int:
        return max(self.options.depth, k)

    def fuse(self, request: FusionRequest) -> list[Hit]:
        legs = []
        pool: dict[str, None] = {}
        for _name, weight, hits in active_legs(request, self.depth(request.k)):
            values, floor = normalise([hit.score for hit in hits], self.options.norm)
            legs.append((weight, {hit.id: value for hit, value in zip(hits, values, strict=True)}, floor))
            pool.update(dict.fromkeys(hit.id for hit in hits))
        scores = {
            doc: sum(weight * values.get(doc, floor) for weight, values, floor in legs) for doc in pool
        }
        return ranked(scores, request.k)

    def diagnose(self, weights: Mapping[str, float], k: int) -> list[str]:
        """Legs barred from the fused top k whatever the scores, for `minmax`, `max` and `rank`.

        A document only leg L found scores at most w_L (its value is at most 1; the other legs'
        floors are 0). Leg M gives its r-th hit at least w_M * b(r), where b(1) = 1 and b(r) = 0
        below for `minmax` and `max` (scores >= 0), and b(r) = 1 - (r - 1) / D for `rank` when M
        returns its full D = max(depth, k) hits. If w_M * b(k) > w_L, M's top k fill the fused
        top k first. `zscore` values are unbounded and its floors data-dependent: no structural
        bound exists, so nothing is reported for it.
        """
        norm = self.options.norm
        if norm == "zscore":
            return []
        full = self.depth(k)

        def bound(rank: int) -> float:
            if norm == "rank":
                return 1.0 - (rank - 1) / full
            return 1.0 if rank == 1 else 0.0

        warnings = []
        for leg, weight, other, best, worst in barred_legs(weights, k, lambda w: w, lambda w, r: w * bound(r)):
            condition = f"returns {full} hits" if norm == "rank" else "returns any hit"
            formula = f"{weights[other]:g} x (1 - ({k}-1)/{full})" if norm == "rank" else f"{weights[other]:g} x 1"
            warnings.append(
                f"Fusion 'convex' (norm={norm}): leg {leg!r} (weight {weight:g}) cannot place a document "
                f"that only it found in the fused top {k}: its best score {weight:g} x 1 = {best:.6f} is "
                f"below the score leg {other!r} gives its own {k}th hit, {formula} = {worst:.6f}, so whenever "
                f"{other!r} {condition} its top {k} fill the fused top {k} first. To fix it, raise its "
                f"weight above {worst:.4g}" + (" or use norm=minmax." if norm == "rank" else ".")
            )
        return warnings
