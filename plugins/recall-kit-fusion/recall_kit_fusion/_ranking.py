"""The ranking a re-ranking step works on."""

from __future__ import annotations

from recall_kit.plugin import FusionRequest, Hit


def ranking_to_rerank(request: FusionRequest, name: str) -> list[Hit]:
    """The previous step's ranking, or the single leg's hits when this step stands first."""
    if request.ranking is not None:
        return list(request.ranking)
    if len(request.legs) == 1:
        return list(next(iter(request.legs.values())))
    raise ValueError(
        f"{name} only re-ranks a fused list: put a fusion that combines legs before it "
        f"(got {len(request.legs)} legs and no ranking)"
    )
