"""Helpers shared by the fusion strategies: weights, leg cut-offs, min-max scaling, the bar check."""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Mapping, Sequence

from recall_kit.plugin import FusionRequest, Hit


def active_legs(request: FusionRequest, depth: int) -> list[tuple[str, float, list[Hit]]]:
    """(name, weight, top `depth` hits) for every leg with weight > 0, in the legs' order.

    A leg missing from `request.weights` has weight 1.0, as in the runner. Legs with weight 0
    contribute nothing, so they are left out here rather than scored with a zero factor.
    """
    legs = []
    for name, hits in request.legs.items():
        weight = float(request.weights.get(name, 1.0))
        if weight > 0:
            legs.append((name, weight, list(hits)[:depth]))
    return legs


def ranked(scores: Mapping[str, float], k: int) -> list[Hit]:
    """The top `k` of `scores` in recall-kit's order: exactly ``sort_hits(...)[:k]`` (score
    descending at float32 precision, ties by id descending); only the k kept become `Hit`s.

    A heap when k is a small part of the ids (the top 10 of a four-leg fusion's ~400), one sort
    otherwise: keeping the runner's depth of 100 out of ~330 ids, the sort takes 169 us against the
    heap's 235 (the two cross near k = n / 10)."""
    ids = list(scores)
    values = list(scores.values())
    keys = array("f", values)  # the float32 keys sort_hits compares
    if k * 10 < len(ids):
        top = heapq.nlargest(k, zip(keys, ids, values))
    else:
        top = sorted(zip(keys, ids, values), reverse=True)[:k]
    return [Hit(doc, value) for _, doc, value in top]


def minmax_values(scores: Sequence[float]) -> list[float]:
    """(s - min) / (max - min); every value 1.0 when all scores are equal (a single one included).

    1.0 rather than 0 in the degenerate case: a list whose scores are all equal says nothing about
    order within it, and scoring it 0 would make a one-hit leg contribute nothing at all.
    """
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    span = high - low
    return [(score - low) / span for score in scores]


def barred_legs(
    weights: Mapping[str, float],
    k: int,
    own_best: Callable[[float], float],
    contribution_at_rank: Callable[[float, int], float],
) -> list[tuple[str, float, str, float, float]]:
    """Legs that can never place a document only they found in the fused top `k`.

    `own_best(w)` is the highest fused score a document found by one leg of weight `w` alone can
    reach (its rank 1). `contribution_at_rank(w, r)` is the least score a leg of weight `w` gives
    the document it ranks `r`, whatever else happens. If some other leg M gives even its k-th
    document more than leg L's best, M's top k all beat every document only L found whenever M
    returns k hits, in every arrangement: L is barred. The check is as sharp as the bounds given:
    for RRF they are attained, so a leg that passes can place its rank-1 document (for instance
    when the other legs agree on their top documents and disagree below).

    "More" is decided as the fused ranking decides it: `recall_kit.sort_hits` compares scores at
    float32 precision (trec_eval's), and two scores equal there tie and are ordered by id, so L's
    document can win the tie. Comparing the float64 bounds instead would name a leg whose best
    falls a few ulps short (weights 0.01 and 0.010000000000000002, both at rank 1) although its
    document is placed whenever its id sorts first.

    Returns (leg, weight, blocking leg, leg's best, blocker's k-th contribution) per barred leg.
    """
    found = []
    active = {name: float(w) for name, w in weights.items() if w > 0}
    for name, weight in active.items():
        best = own_best(weight)
        blockers = [(contribution_at_rank(w, k), other) for other, w in active.items() if other != name]
        if not blockers:
            continue
        worst, other = max(blockers)
        if as_ranked(worst) > as_ranked(best):
            found.append((name, weight, other, best, worst))
    return found


def as_ranked(score: float) -> float:
    """`score` at the precision the fused ranking compares scores (float32, as `sort_hits`)."""
    return array("f", [score])[0]
