"""The `bm25` retriever: rank-bm25's scoring over each memory's searchable text."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from recall_kit.plugin import Corpus, Hit, Retriever, id_ranks
from recall_kit_bm25.tokenize import tokenize

if TYPE_CHECKING:
    import numpy as np

    from recall_kit_bm25.index import BM25Parameters, PostingIndex

# numpy and the index (which needs numpy) are imported where an index is built or searched:
# registering this retriever runs for `recall-kit --help`, which must not pay for numpy.

# `search_many` scores queries in groups of about this many cells / documents, so that one
# sparse product holds at most this many scores (about 12 bytes each).
_BLOCK_CELLS = 4_000_000


class BM25Retriever(Retriever):
    """BM25 over content, category, tags and expanded keywords (`Memory.searchable_text`).

    Scores are exactly those of rank-bm25's BM25Okapi / BM25L / BM25Plus `get_scores` on the same
    tokens. A document is returned when it contains at least one query term and its score is
    not 0; a query with no known term returns no hits.
    """

    description = "BM25 (rank-bm25 Okapi, BM25L, BM25+) over content, category, tags, keywords"

    @dataclass(frozen=True)
    class Options:
        #: okapi (BM25Okapi), bm25l (BM25L) or bm25plus (BM25Plus), as in rank-bm25.
        variant: Literal["okapi", "bm25l", "bm25plus"] = "okapi"
        k1: float = 1.5
        b: float = 0.75
        #: Okapi only: a negative idf becomes epsilon * (average idf).
        epsilon: float = 0.25
        #: BM25L and BM25+ only; None takes rank-bm25's default (0.5 for bm25l, 1 for bm25plus).
        delta: float | None = None
        #: Drop the small English stop-word list (recall_kit_bm25.stopwords) from text and queries.
        stopwords: bool = False
        #: Stem text and queries with `stemmer`.
        stemming: bool = False
        #: s (Harman's S-stemmer: plural endings only) or snowball (Snowball English, PyStemmer).
        stemmer: Literal["s", "snowball"] = "s"
        #: fast (posting arrays, same scores) or rank-bm25 (call its get_scores: the reference).
        implementation: Literal["fast", "rank-bm25"] = "fast"

        def __post_init__(self) -> None:
            if not (math.isfinite(self.k1) and self.k1 > 0):
                raise ValueError("k1 must be a finite number > 0")
            if not (0 <= self.b <= 1):
                raise ValueError("b must be between 0 and 1")
            if not (math.isfinite(self.epsilon) and self.epsilon >= 0):
                raise ValueError("epsilon must be a finite number >= 0")
            if self.delta is not None and not (math.isfinite(self.delta) and self.delta >= 0):
                raise ValueError("delta must be a finite number >= 0")

    options: BM25Retriever.Options

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._ids: list[str] = []
        self._index: PostingIndex | None = None
        self._reference: Any = None
        self._id_rank: np.ndarray | None = None  # set by build_index

    @property
    def parameters(self) -> BM25Parameters:
        from recall_kit_bm25.index import DEFAULT_DELTA, BM25Parameters

        o = self.options
        delta = o.delta if o.delta is not None else DEFAULT_DELTA.get(o.variant, 0.5)
        return BM25Parameters(variant=o.variant, k1=o.k1, b=o.b, epsilon=o.epsilon, delta=delta)

    def tokens(self, text: str) -> list[str]:
        """The tokens this retriever indexes and searches for `text`."""
        return tokenize(text, stopwords=self.options.stopwords, stemming=self.options.stemming,
                        stemmer=self.options.stemmer)

    def build_index(self, corpus: Corpus) -> None:
        from recall_kit_bm25.index import PostingIndex

        self._ids = [memory.id for memory in corpus]
        # Tokenized as the index reads them (one memory's tokens alive at a time), unless the
        # rank-bm25 reference needs them all.
        keep = self.options.implementation == "rank-bm25"
        tokenized = (self.tokens(memory.searchable_text) for memory in corpus)
        documents = list(tokenized) if keep else tokenized
        # Ties are broken as recall_kit.sort_hits does (id descending): 0 for the highest id.
        self._id_rank = len(self._ids) - 1 - id_ranks(self._ids)
        self._index = PostingIndex(documents, self.parameters)
        if keep and self._index.corpus_size:
            self._reference = make_reference(documents, self.parameters)  # type: ignore[arg-type]

    # -- searching ---------------------------------------------------------------------------

    def search(self, query: str, k: int) -> list[Hit]:
        index = self._require_index()
        if k <= 0:
            return []
        tokens = self.tokens(query)
        if self._reference is not None:
            return self._reference_search(tokens, k)
        candidates, scores = index.score(index.term_ids(tokens))
        return self._top_k(candidates, scores, k)

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """The batch path: a sparse (queries x terms) @ (terms x documents) product per group.

        Each query row lists its term ids in query order, repeats included, and scipy's CSR
        product accumulates a row's terms in stored order, so the sums are the same additions
        as `search` and rank-bm25. BM25+ adds a constant for every absent term, which a sparse
        product cannot interleave, so it answers each query with `search`'s kernel.
        """
        index = self._require_index()
        if k <= 0:
            return [[] for _ in queries]
        if self._reference is not None or index.adds_baseline or index.corpus_size == 0:
            return [self.search(query, k) for query in queries]
        import numpy as np
        from scipy.sparse import csr_matrix

        term_lists = [index.term_ids(self.tokens(query)) for query in queries]
        results: list[list[Hit]] = []
        group_size = max(1, _BLOCK_CELLS // index.corpus_size)
        for start in range(0, len(queries), group_size):
            group = term_lists[start:start + group_size]
            indptr = np.zeros(len(group) + 1, dtype=np.int64)
            np.cumsum([len(terms) for terms in group], out=indptr[1:])
            columns = np.fromiter((t for terms in group for t in terms), dtype=np.int64,
                                  count=int(indptr[-1]))
            # Only the group's terms' rows of the (terms x documents) contribution matrix, so
            # the batch path never holds a weight for every posting.
            terms, columns = np.unique(columns, return_inverse=True)
            rows = csr_matrix((np.ones(len(columns)), columns.reshape(-1), indptr),
                              shape=(len(group), len(terms)))
            product = rows @ index.weight_matrix(terms)  # zero sums are dropped, as `search` drops them
            for row in range(len(group)):
                lo, hi = product.indptr[row], product.indptr[row + 1]
                results.append(self._top_k(product.indices[lo:hi], product.data[lo:hi], k))
        return results

    def _top_k(self, candidates: np.ndarray, scores: np.ndarray, k: int) -> list[Hit]:
        """The best `k` candidates with a non-zero score: score descending, then id descending."""
        import numpy as np

        assert self._id_rank is not None  # set with the index, before any search
        keep = scores != 0
        candidates, scores = candidates[keep], scores[keep]
        if len(scores) > k:
            threshold = np.partition(scores, len(scores) - k)[len(scores) - k]
            keep = scores >= threshold  # every tie at the boundary, then order and cut
            candidates, scores = candidates[keep], scores[keep]
        order = np.lexsort((self._id_rank[candidates], -scores))[:k]
        ids = self._ids
        return [Hit(ids[doc], float(score))
                for doc, score in zip(candidates[order].tolist(), scores[order].tolist(), strict=True)]

    def _reference_search(self, tokens: list[str], k: int) -> list[Hit]:
        import numpy as np

        reference = self._reference
        wanted = set(tokens)
        present = np.fromiter((not wanted.isdisjoint(doc) for doc in reference.doc_freqs),
                              dtype=bool, count=len(reference.doc_freqs))
        candidates = np.flatnonzero(present)
        if len(candidates) == 0:
            return []
        scores = np.asarray(reference.get_scores(tokens), dtype=np.float64)
        return self._top_k(candidates, scores[candidates], k)

    def _require_index(self) -> PostingIndex:
        if self._index is None:
            raise RuntimeError("build_index() must be called before search()")
        return self._index

    # -- reporting ---------------------------------------------------------------------------

    def index_size_bytes(self) -> int | None:
        if self._index is None:
            return None
        rank_bytes = self._id_rank.nbytes if self._id_rank is not None else 0
        return self._index.nbytes() + int(rank_bytes)

    def index_stats(self) -> dict[str, Any]:
        if self._index is None:
            return {}
        index = self._index
        return {
            "variant": self.options.variant,
            "implementation": self.options.implementation,
            "documents": index.corpus_size,
            "vocabulary": len(index.vocabulary),
            "postings": len(index.post_docs),
            "avg_doc_length": round(float(index.avgdl), 4),
        }

    def close(self) -> None:
        self._index = None
        self._reference = None


def make_reference(documents: list[list[str]], params: BM25Parameters) -> Any:
    """rank-bm25's own object for these tokens and parameters (the reference implementation)."""
    import rank_bm25

    if params.variant == "okapi":
        return rank_bm25.BM25Okapi(documents, k1=params.k1, b=params.b, epsilon=params.epsilon)
    if params.variant == "bm25l":
        return rank_bm25.BM25L(documents, k1=params.k1, b=params.b, delta=params.delta)
    return rank_bm25.BM25Plus(documents, k1=params.k1, b=params.b, delta=params.delta)
