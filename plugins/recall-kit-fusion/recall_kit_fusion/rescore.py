"""Re-score one leg's top hits with every leg's normalised scores (a second-stage re-ranker)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from recall_kit.plugin import Fusion, FusionRequest, Hit
from recall_kit_fusion._common import active_legs, ranked
from recall_kit_fusion.convex import Normalisation, normalise


class LeadRescore(Fusion):
    r"""Re-score the lead leg's top N hits by the convex combination of every leg's scores.

    .. math::  \mathrm{score}(d) = \sum_L w_L \, \mathrm{norm}_L(s_L(d)) \quad
               \text{for } d \text{ in the lead leg's top } N

    with `convex`'s normalisations and floors; documents outside the lead leg's top N are never
    returned (so the list holds at most N: set N >= the k scored). This is the two-stage pattern of retrieve-then-rerank (Nogueira & Cho 2019 for a
    cross-encoder; here the second stage is the other legs' scores): the lead leg (a lexical one)
    decides what can be found, the other legs only re-order it, so they cannot push a document
    the lead leg missed above its best hits.

    Options: `lead` (the leg whose hits are the candidates; default the first leg), `candidates`
    (N, default 20), `norm` (as `convex`, default minmax) and `depth` (hits of each other leg that
    take part in the scores, default 100).
    """

    description = "re-score the lead leg's top N by the weighted sum of every leg's normalised scores"
    combines_legs: ClassVar[bool] = True

    @dataclass(frozen=True)
    class Options:
        #: The leg whose top hits are the only candidates (None: the first leg).
        lead: str | None = None
        #: How many of the lead leg's hits are candidates (the fused list holds at most this many).
        candidates: int = 20
        #: How each leg's scores are put on one scale before the weighted sum.
        norm: Normalisation = "minmax"
        #: How many hits of each leg take part in the scores (at least the k scored).
        depth: int = 100

        def __post_init__(self) -> None:
            if self.candidates < 1:
                raise ValueError(f"candidates must be >= 1, got {self.candidates}")
            if self.depth < 1:
                raise ValueError(f"depth must be >= 1, got {self.depth}")

    def depth(self, k: int) -> int:
        return max(self.options.depth, self.options.candidates, k)

    def lead(self, legs: Mapping[str, object]) -> str:
        lead = self.options.lead or next(iter(legs))
        if lead not in legs:
            raise ValueError(f"rescore.lead {lead!r} is not a leg (legs: {', '.join(legs)})")
        return lead

    def fuse(self, request: FusionRequest) -> list[Hit]:
        lead = self.lead(request.legs)
        # Not max(candidates, k): the runner may ask a fusion for a deeper list than the k it scores.
        pool = [hit.id for hit in list(request.legs[lead])[: self.options.candidates]]
        scores = dict.fromkeys(pool, 0.0)
        for _name, weight, hits in active_legs(request, self.depth(request.k)):
            values, floor = normalise([hit.score for hit in hits], self.options.norm)
            by_id = {hit.id: value for hit, value in zip(hits, values, strict=True)}
            for doc in pool:
                scores[doc] += weight * by_id.get(doc, floor)
        return ranked(scores, request.k)

    def diagnose(self, weights: Mapping[str, float], k: int) -> list[str]:
        """Every leg but the lead one is barred, by design, from placing a document only it found."""
        legs = [name for name, weight in weights.items() if weight > 0]
        if not legs:
            return []
        lead = self.options.lead or next(iter(weights))
        if lead not in weights:
            return [f"Fusion 'rescore': rescore.lead {lead!r} is not a leg (legs: {', '.join(weights)})."]
        return [
            f"Fusion 'rescore': leg {name!r} only re-orders the lead leg {lead!r}'s top "
            f"{self.options.candidates} hits; a document only {name!r} found is never returned. "
            "Use convex to let it place its own finds."
            for name in legs if name != lead
        ]
