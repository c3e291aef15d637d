"""Exact top-k over a normalised matrix, and the optional approximate indexes (hnswlib, faiss)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from recall_kit.plugin import Hit, RecallKitError, id_ranks, sort_hits, top_hits


class MissingExtraError(RecallKitError):
    """An optional search library is not installed."""


def ann_recall_stats(checked: Mapping[Any, tuple[int, int]]) -> dict[str, Any]:
    """Index stats of an ANN recall check: per checked query, (exact top-k ids the index found, k).

    Counts as well as the ratio: with scopes the runner sums the counts and averages the ratio
    weighted by ``ann_recall_expected`` (recall_kit.measure.run.index_stats), which makes it
    matched / expected over every index. Used by the dense and pgvector legs.
    """
    matched = sum(found for found, _ in checked.values())
    expected = sum(total for _, total in checked.values())
    return {
        "ann_recall_at_k": round(matched / expected, 6) if expected else 1.0,
        "ann_recall_matched": matched,
        "ann_recall_expected": expected,
        "ann_recall_queries": len(checked),
    }


def top_k_rows(scores: np.ndarray, ids: list[str], k: int, id_rank: np.ndarray | None = None) -> list[list[Hit]]:
    """The `k` best hits of each row of `scores` (queries x memories), in `sort_hits` order.

    `recall_kit.top_hits` per row: every memory tied (at float32) with the k-th best stays until
    the ids order them (higher id first), so where a partition cut decides nothing. `id_rank` is
    `recall_kit.id_ranks(ids)`, kept with the index.
    """
    rank = id_ranks(ids) if id_rank is None else id_rank
    return [top_hits(row, ids, k, rank) for row in scores]


class AnnIndex(Protocol):
    """An approximate inner-product index over the rows of a normalised matrix."""

    def query(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, scores), each (queries, k); a row of -1 marks a slot with no result."""
        ...

    def size_bytes(self) -> int:
        ...


class HnswlibIndex:
    """hnswlib HNSW graph, inner-product space (cosine on normalised vectors)."""

    def __init__(self, matrix: np.ndarray, m: int, ef_construction: int, ef_search: int,
                 seed: int = 0) -> None:
        try:
            import hnswlib
        except ImportError:
            raise MissingExtraError(
                "dense.index=hnsw needs hnswlib: pip install 'recall-kit-dense[hnsw]'."
            ) from None
        count, dimension = matrix.shape
        self._index = hnswlib.Index(space="ip", dim=dimension)
        self._index.init_index(max_elements=max(count, 1), ef_construction=ef_construction, M=m,
                               random_seed=seed)
        self._index.set_num_threads(1)
        self._index.add_items(matrix, np.arange(count))
        self._ef_search = ef_search
        self._count = count

    def query(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(k, self._count)
        self._index.set_ef(max(self._ef_search, k))
        labels, distances = self._index.knn_query(vectors, k=k)
        return labels.astype(np.int64), (1.0 - distances).astype(np.float32)

    def size_bytes(self) -> int:
        size = getattr(self._index, "index_file_size", None)
        if size is not None:
            return int(size())
        import os
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "index.bin")
            self._index.save_index(path)
            return os.path.getsize(path)


class FaissHnswIndex:
    """faiss IndexHNSWFlat with the inner-product metric."""

    def __init__(self, matrix: np.ndarray, m: int, ef_construction: int, ef_search: int,
                 seed: int = 0) -> None:
        try:
            import faiss
        except ImportError:
            raise MissingExtraError(
                "dense.index=faiss needs faiss: pip install 'recall-kit-dense[faiss]'."
            ) from None
        self._faiss = faiss
        count, dimension = matrix.shape
        self._index = faiss.IndexHNSWFlat(dimension, m, faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = ef_construction
        self._index.add(np.ascontiguousarray(matrix, dtype=np.float32))
        self._ef_search = ef_search
        self._count = count

    def query(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(k, self._count)
        self._index.hnsw.efSearch = max(self._ef_search, k)
        scores, rows = self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
        return rows.astype(np.int64), scores.astype(np.float32)

    def size_bytes(self) -> int:
        return int(self._faiss.serialize_index(self._index).nbytes)


def build_ann(kind: str, matrix: np.ndarray, m: int, ef_construction: int,
              ef_search: int) -> AnnIndex:
    if kind == "hnsw":
        return HnswlibIndex(matrix, m, ef_construction, ef_search)
    if kind == "faiss":
        return FaissHnswIndex(matrix, m, ef_construction, ef_search)
    raise ValueError(f"unknown ANN index {kind!r}")


def ann_hits(rows: np.ndarray, scores: np.ndarray, ids: list[str], k: int) -> list[list[Hit]]:
    """Turn an ANN answer into hits, dropping empty slots, in `sort_hits` order."""
    out = []
    for row_ids, row_scores in zip(rows, scores, strict=True):
        hits = [Hit(ids[int(i)], float(s)) for i, s in zip(row_ids, row_scores, strict=True) if i >= 0]
        out.append(sort_hits(hits)[:k])
    return out
