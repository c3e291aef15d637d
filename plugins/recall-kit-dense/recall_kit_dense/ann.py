"""Exact top-k over a normalised matrix, and the optional approximate indexes (hnswlib, faiss)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from recall_kit.plugin import Hit, RecallKitError, id_ranks, inner_products, sort_hits, top_hits


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


def portable_top_k(matrix: np.ndarray, vectors: np.ndarray, scores: np.ndarray, ids: list[str], k: int,
                   id_rank: np.ndarray | None = None) -> list[list[Hit]]:
    """The `k` best hits of each query, scored the same on every CPU.

    `scores` are the float32 inner products of `vectors` (queries) with the rows of `matrix`, as
    BLAS or einsum summed them: their last bits depend on the CPU's kernel. They only pick the
    candidates: every memory within `margin` of the k-th best, where `margin` is twice the
    largest error a float32 sum of `dimension` products of unit vectors' entries can have
    (dimension x float32's epsilon, at most 2.3e-5 for 384 dimensions); the candidates are then
    scored again in float64 and put on `recall_kit.plugin.GRID` (`inner_products`), and ranked
    by that score, ties by id (as `recall_kit.plugin.top_hits` orders them). So where a last bit would have ordered two
    memories, the id does, on every machine.
    """
    rank = id_ranks(ids) if id_rank is None else id_rank
    margin = 2 * matrix.shape[1] * float(np.finfo(np.float32).eps)
    found = []
    for row, vector in zip(scores, vectors, strict=True):
        if k <= 0 or not len(row):
            found.append([])
            continue
        candidates = np.arange(len(row))
        if len(row) > k:
            kth = np.partition(row, len(row) - k)[len(row) - k]
            if not np.isnan(kth):
                candidates = np.flatnonzero(row >= kth - margin)
        exact = inner_products(matrix[candidates], vector[None, :])[:, 0]
        found.append(top_hits(exact, ids, k, rank, candidates=candidates))
    return found


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
