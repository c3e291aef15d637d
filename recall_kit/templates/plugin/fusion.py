"""recall-kit-my-plugin: the `my-plugin` fusion for recall-kit."""

from __future__ import annotations

from dataclasses import dataclass

from recall_kit.plugin import Fusion, FusionRequest, Hit, Register, hookimpl, sort_hits


class MyPluginFusion(Fusion):
    """Weighted Borda count.

    Each leg is cut at depth d = depth(k); the document at rank r gets ``weight * (d + 1 - r)``
    points, and documents are ranked by their total. Reference: de Borda (1781); Aslam and
    Montague, "Models for metasearch", SIGIR 2001.
    """

    description = "weighted Borda count over the legs' rankings"

    @dataclass(frozen=True)
    class Options:
        #: Each leg returns depth_factor * k hits.
        depth_factor: int = 2

        def __post_init__(self) -> None:
            if self.depth_factor < 1:
                raise ValueError("depth_factor must be >= 1")

    def depth(self, k: int) -> int:
        return k * self.options.depth_factor

    def fuse(self, request: FusionRequest) -> list[Hit]:
        depth = self.depth(request.k)
        points: dict[str, float] = {}
        for leg, hits in request.legs.items():
            weight = request.weights.get(leg, 1.0)
            for rank, hit in enumerate(hits[:depth], start=1):
                points[hit.id] = points.get(hit.id, 0.0) + weight * (depth + 1 - rank)
        fused = [Hit(doc_id, score) for doc_id, score in points.items() if score > 0]
        return sort_hits(fused)[: request.k]


@hookimpl
def register_fusions(register: Register) -> None:
    """Register the `my-plugin` fusion."""
    register("my-plugin", MyPluginFusion)
