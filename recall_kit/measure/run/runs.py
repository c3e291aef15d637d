"""A run's two intermediate values: each leg's output over the query set (`LegRun`) and the fused,
scored rankings (`FusedRun`). The runner makes them; diagnostics, the failed-query checks, the
checkpoints and the distributed tasks read them, so they live apart from the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from recall_kit.types import Hit


@dataclass
class LegRun:
    """One leg's output over the whole query set, and what it cost."""

    name: str
    #: Hits per query, in the dataset's query order, trec_eval-ordered, at most `depth` each.
    hits: list[list[Hit]]
    build_seconds: float = 0.0
    size_bytes: int | None = 0
    index_stats: dict[str, Any] = field(default_factory=dict)
    batch_seconds: float = 0.0
    #: Single-path latency in ms for the sampled queries: query index -> ms.
    latency_ms: dict[int, float] = field(default_factory=dict)
    #: Of that latency, the part spent waiting on an outside system (`Retriever.last_wait_ms`).
    wait_ms: dict[int, float] = field(default_factory=dict)
    #: The untimed first single-query call (lazy model loads), in ms; None when none was made.
    first_query_ms: float | None = None
    #: Queries whose search failed (a `FailedSearch`), scored as empty rankings: index -> reason.
    failures: dict[int, str] = field(default_factory=dict)
    #: Ids a live system returned that the corpus it was given does not hold: query index -> ids.
    outside: dict[int, list[str]] = field(default_factory=dict)
    #: The leg is a live system searching a store of its own (`Retriever.searches_own_store`).
    own_store: bool = False
    #: Ids the retriever itself names sensitive (`Retriever.sensitive_ids`: a live system's own ids).
    sensitive: set[str] = field(default_factory=set)
    #: What the retriever says to check when every query came back empty (`empty_hint`), or None.
    empty_hint: str | None = None
    indexes: int = 0


@dataclass
class FusedRun:
    """Every query's scored ranking (top k, parent level where the corpus has chunks), which legs
    found each returned or relevant id, and what fusion cost."""

    rankings: list[list[Hit]]
    found_by: list[dict[str, dict[str, int]]]
    fusion_ms: list[float]
