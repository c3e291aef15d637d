"""The machinery the Comb* family and the rank-based fusions share: each active leg's top hits
turned into per-document values, then one aggregate per document over the legs that returned it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from recall_kit.plugin import Fusion, FusionRequest, Hit
from recall_kit_fusion._common import active_legs, ranked
from recall_kit_fusion.convex import ConvexFusion, Normalisation, normalise

#: One leg's contribution: its weight and each returned document's value.
LegValues = tuple[float, dict[str, float]]


def normalised_legs(request: FusionRequest, depth: int, norm: Normalisation) -> list[LegValues]:
    """Every active leg's top `depth` hits, normalised on their own (see `convex.normalise`)."""
    out = []
    for _name, weight, hits in active_legs(request, depth):
        values, _floor = normalise([hit.score for hit in hits], norm)
        out.append((weight, {hit.id: value for hit, value in zip(hits, values, strict=True)}))
    return out


def rank_legs(request: FusionRequest, depth: int, value: Callable[[int, int], float]) -> list[LegValues]:
    """Every active leg's top `depth` hits valued by position: `value(rank, returned)`, rank 1-based."""
    out = []
    for _name, weight, hits in active_legs(request, depth):
        out.append((weight, {hit.id: value(rank, len(hits)) for rank, hit in enumerate(hits, start=1)}))
    return out


def aggregate(legs: Sequence[LegValues], combine: Callable[[list[float]], float], k: int) -> list[Hit]:
    """Each document's fused score: `combine` of the weighted values of the legs that returned it."""
    found: dict[str, list[float]] = {}
    for weight, values in legs:
        for doc, value in values.items():
            found.setdefault(doc, []).append(weight * value)
    return ranked({doc: combine(scores) for doc, scores in found.items()}, k)


@dataclass(frozen=True)
class DepthOptions:
    """The one option of a fusion of positions."""

    #: How many hits of each leg take part (at least the k scored).
    depth: int = 100

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"depth must be >= 1, got {self.depth}")


class ScoreCombination(Fusion):
    """A Comb* fusion: normalise each leg's scores, then combine per document (Fox & Shaw 1993).

    Options: `norm` (minmax, zscore, max or rank, as `convex`; default minmax, as ranx's `fuse`)
    and `depth` (how many hits of each leg take part, default 100). A leg's weight multiplies its
    normalised values (weight 1 everywhere: ranx's unweighted method).
    """

    combines_legs: ClassVar[bool] = True
    #: The same options as `convex`: `norm` and `depth`.
    Options = ConvexFusion.Options

    def depth(self, k: int) -> int:
        return max(self.options.depth, k)

    def combine(self, values: list[float]) -> float:
        """The fused score of a document from the weighted values of the legs that returned it."""
        raise NotImplementedError

    def fuse(self, request: FusionRequest) -> list[Hit]:
        return aggregate(normalised_legs(request, self.depth(request.k), self.options.norm), self.combine, request.k)


class RankCombination(Fusion):
    """A fusion of positions only: each leg's hit at rank r gets a value, combined per document.

    Options: `depth` (how many hits of each leg take part, default 100).
    """

    combines_legs: ClassVar[bool] = True
    Options = DepthOptions

    def depth(self, k: int) -> int:
        return max(self.options.depth, k)
