"""Importance blend: mix each memory's stored importance into the fused score."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from recall_kit.plugin import Fusion, FusionRequest, Hit, sort_hits
from recall_kit_fusion._common import minmax_values
from recall_kit_fusion._ranking import ranking_to_rerank


class ImportanceBlend(Fusion):
    r"""Re-rank: blend the memory's importance into the score.

    .. math::  \mathrm{score}'(d) = (1 - \lambda) \cdot \mathrm{minmax}(\mathrm{score}(d))
               + \lambda \cdot \mathrm{importance}(d)

    with λ the `importance_weight` option (default 0.3). minmax is (s - min) / (max - min) over the ranking
    being re-ranked, 1.0 for every hit when all scores are equal (a single hit included), so the
    score and importance (expected in [0, 1]) are on one scale. A memory without an importance
    gets `default_importance` (0.5, the middle of the scale: neither promoted nor demoted). Weight 0
    keeps the order; weight 1 sorts by importance alone. The linear blend of a relevance score with a
    static document prior is the classic query-independent-evidence combination (Craswell,
    Robertson, Zaragoza & Taylor, "Relevance weighting for query independent evidence", SIGIR
    2005); Park et al.'s generative agents (UIST 2023) score memories with the same kind of
    weighted sum of relevance and importance. Ties are broken by `recall_kit.sort_hits`.
    """

    description = "re-rank: (1 - weight) * minmax(score) + weight * importance"
    combines_legs: ClassVar[bool] = False

    @dataclass(frozen=True)
    class Options:
        #: Share of the new score that comes from importance, in [0, 1].
        importance_weight: float = 0.3
        #: Importance of a memory that has none.
        default_importance: float = 0.5
        # Old spellings, still accepted (with a warning): fts5 and pg-hybrid name these options alike.
        renamed_options: ClassVar[Mapping[str, str]] = {"weight": "importance_weight",
                                                        "default": "default_importance"}

        def __post_init__(self) -> None:
            if not 0.0 <= self.importance_weight <= 1.0:
                raise ValueError(f"importance_weight must be in [0, 1], got {self.importance_weight}")

    def fuse(self, request: FusionRequest) -> list[Hit]:
        hits = ranking_to_rerank(request, "importance")
        weight = self.options.importance_weight
        values = minmax_values([hit.score for hit in hits])
        rescored = []
        for hit, value in zip(hits, values, strict=True):
            memory = request.corpus.get(hit.id)
            importance = memory.importance if memory is not None and memory.importance is not None else None
            prior = self.options.default_importance if importance is None else float(importance)
            rescored.append(Hit(hit.id, (1.0 - weight) * value + weight * prior))
        return sort_hits(rescored)[: request.k]
