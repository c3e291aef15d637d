"""Building fusion requests by hand for recall-kit-fusion's tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recall_kit import Corpus, FusionRequest, Hit, Memory, Query


def hits(*pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(doc, float(score)) for doc, score in pairs]


def ranked_ids(doc_ids: Sequence[str]) -> list[Hit]:
    """A leg's list from ids best first, with strictly decreasing scores."""
    return [Hit(doc, float(len(doc_ids) - index)) for index, doc in enumerate(doc_ids)]


def make_request(
    legs: Mapping[str, list[Hit]],
    weights: Mapping[str, float] | None = None,
    k: int = 10,
    ranking: list[Hit] | None = None,
    query: str = "q",
    corpus: Sequence[Memory] | None = None,
) -> FusionRequest:
    if corpus is None:
        ids = {hit.id for leg in legs.values() for hit in leg} | {hit.id for hit in ranking or []}
        corpus = [Memory(doc, f"memory {doc}") for doc in sorted(ids)]
    return FusionRequest(
        query=Query("q1", query),
        legs=dict(legs),
        weights=dict(weights or {name: 1.0 for name in legs}),
        ranking=ranking,
        corpus=Corpus(corpus),
        k=k,
    )


def as_dict(fused: Sequence[Hit]) -> dict[str, float]:
    return {hit.id: hit.score for hit in fused}
