"""Exact-phrase bonus: lift memories that contain the query verbatim."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from recall_kit.plugin import Fusion, FusionRequest, Hit, sort_hits
from recall_kit_fusion._ranking import ranking_to_rerank

_WHITESPACE = re.compile(r"\s+")
_QUOTED = re.compile(r'"([^"]*)"')


def normalise_text(text: str) -> str:
    """Case-folded, with every run of whitespace made one space and the ends stripped."""
    return _WHITESPACE.sub(" ", text).strip().casefold()


def query_phrase(query: str) -> str:
    """What must appear verbatim: the longest double-quoted phrase if the query has one, else all of it."""
    quoted = [normalise_text(phrase) for phrase in _QUOTED.findall(query)]
    quoted = [phrase for phrase in quoted if phrase]
    if quoted:
        return max(quoted, key=len)  # max keeps the first of equally long phrases
    return normalise_text(query)


class ExactBonus(Fusion):
    r"""Re-rank: add a bonus to the memories whose content holds the query phrase verbatim.

    .. math::  \mathrm{score}'(d) = \mathrm{score}(d) + b \cdot [\,p \sqsubseteq \mathrm{content}(d)\,]

    where p is the query (or its longest double-quoted phrase, if it has one) and the containment
    test is on case-folded text with whitespace runs collapsed to one space. Queries whose phrase
    is shorter than `min_chars` characters (after that normalisation) get no bonus: short strings
    match by accident. The default bonus b = (max - min) + eps over the ranking being re-ranked,
    eps = 1e-6 * max(1, |max|, |min|), is the smallest round choice that puts every matching
    memory above every non-matching one (a match at the bottom reaches max + eps) while keeping
    the previous order within each group; an explicit `bonus` gives a softer lift. Only documents
    already in the ranking are re-scored; none is added or removed.

    This recovers the rank of the one perfect lexical hit that blending with near-tie dense hits
    pushes down: the "exact" stratum of a memory benchmark. It is the phrase-match boost of
    classic search engines (e.g. Lucene/Elasticsearch ``match_phrase`` in a ``bool.should``
    clause) applied after fusion. Ties are broken by `recall_kit.sort_hits`.
    """

    description = "re-rank: lift memories containing the query (or its quoted phrase) verbatim"
    combines_legs: ClassVar[bool] = False

    @dataclass(frozen=True)
    class Options:
        #: Added to a matching memory's score; None: (max - min) of the ranking + a tiny epsilon.
        bonus: float | None = None
        #: Queries (or quoted phrases) shorter than this, in characters, get no bonus.
        min_chars: int = 10

        def __post_init__(self) -> None:
            if self.bonus is not None and not self.bonus >= 0:
                raise ValueError(f"bonus must be >= 0, got {self.bonus}")
            if self.min_chars < 0:
                raise ValueError(f"min_chars must be >= 0, got {self.min_chars}")

    def fuse(self, request: FusionRequest) -> list[Hit]:
        hits = ranking_to_rerank(request, "exact-bonus")
        phrase = query_phrase(request.query.text)
        if not hits or not phrase or len(phrase) < self.options.min_chars:
            return sort_hits(hits)[: request.k]
        bonus = self.options.bonus
        if bonus is None:
            high = max(hit.score for hit in hits)
            low = min(hit.score for hit in hits)
            bonus = (high - low) + 1e-6 * max(1.0, abs(high), abs(low))
        rescored = []
        for hit in hits:
            memory = request.corpus.get(hit.id)
            matched = memory is not None and phrase in normalise_text(memory.content)
            rescored.append(Hit(hit.id, hit.score + bonus) if matched else hit)
        return sort_hits(rescored)[: request.k]
