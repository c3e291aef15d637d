"""A posting-array BM25 index that reproduces rank-bm25's scores bit for bit, without its
per-document Python loops.

rank-bm25 scores a query by looping over its terms (repeats included) and, for each, building a
dense array of that term's frequency in every document from per-document dicts, then adding
`idf * f(tf, doc_len)` to a running score. Documents that lack the term add `idf * f(0, ...)`,
which is exactly 0.0 for Okapi and BM25L and `idf * delta` for BM25+.

Here the per-(term, document) contribution `idf * f(tf, doc_len)` is computed once at build time,
with the same float operations in the same order as rank-bm25, and stored in posting arrays
grouped by term. A query then adds each term's postings into a score array in the query's term
order, so every document's score is the same sequence of IEEE additions rank-bm25 performs:
identical floats, not merely close ones.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

VARIANTS = ("okapi", "bm25l", "bm25plus")
#: rank-bm25's default delta per variant (BM25L: 0.5, BM25Plus: 1).
DEFAULT_DELTA = {"bm25l": 0.5, "bm25plus": 1.0}


@dataclass(frozen=True)
class BM25Parameters:
    variant: str = "okapi"
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    delta: float = 0.5


class PostingIndex:
    """Term -> (document indexes, precomputed contributions), plus what scoring needs.

    Documents are numbered 0..N-1 in corpus order. `term_ptr[t]:term_ptr[t+1]` slices
    `post_docs` (ascending document indexes) and `post_weights` for term id `t`.
    """

    def __init__(self, documents: Iterable[Sequence[str]], params: BM25Parameters) -> None:
        """`documents`: each document's tokens, in corpus order; read once, so a generator that
        tokenizes as it goes keeps only one document's tokens in memory at a time."""
        if params.variant not in VARIANTS:
            raise ValueError(f"unknown BM25 variant {params.variant!r}")
        self.params = params
        # Term ids in order of first appearance, scanning documents in order: the order in which
        # rank-bm25 fills its document-frequency dict, which fixes the float sum of Okapi's
        # average idf.
        vocabulary: dict[str, int] = {}
        counts = array("q")

        def term_ids() -> Iterator[int]:
            add = vocabulary.setdefault
            for doc in documents:
                counts.append(len(doc))
                for token in doc:
                    yield add(token, len(vocabulary))

        term_of_token = np.fromiter(term_ids(), dtype=np.int64)
        lengths = np.frombuffer(counts, dtype=np.int64).copy() if len(counts) else np.zeros(0, np.int64)
        self.corpus_size = len(lengths)
        total = int(lengths.sum())
        self.vocabulary = vocabulary
        self.doc_len = lengths
        # One (term, doc) key per token, built in place: term * N + doc.
        width = max(self.corpus_size, 1)
        keys = term_of_token
        keys *= width
        keys += np.repeat(np.arange(self.corpus_size, dtype=np.int64), lengths)
        del term_of_token
        vocab_size = len(vocabulary)
        # Unique keys sorted by term then doc, with counts = tf.
        keys.sort()
        first = np.empty(len(keys), dtype=bool)
        if len(keys):
            first[0] = True
            np.not_equal(keys[1:], keys[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        del first
        tf = np.diff(np.append(starts, len(keys)))
        keys = keys[starts]
        del starts
        post_terms = keys // width
        self.post_docs = (keys % width).astype(np.int32)
        del keys
        self.term_ptr = np.zeros(vocab_size + 1, dtype=np.int64)
        np.cumsum(np.bincount(post_terms, minlength=vocab_size), out=self.term_ptr[1:])
        doc_freq = np.diff(self.term_ptr)
        # rank-bm25: avgdl = (int sum of lengths) / corpus_size.
        self.avgdl = total / self.corpus_size if self.corpus_size else 0.0
        self.idf = self._idf(doc_freq)
        self.baseline = np.zeros(vocab_size)
        self.post_weights = self._weights(tf, post_terms)

    def _idf(self, doc_freq: np.ndarray) -> np.ndarray:
        """rank-bm25's idf per term, computed with `math.log` in its order (Python floats)."""
        p, n = self.params, self.corpus_size
        freqs = doc_freq.tolist()
        if p.variant == "okapi":
            values = []
            idf_sum = 0.0
            negative = []
            for term, freq in enumerate(freqs):
                idf = math.log(n - freq + 0.5) - math.log(freq + 0.5)
                values.append(idf)
                idf_sum += idf
                if idf < 0:
                    negative.append(term)
            if values:
                # The Okapi quirk: a term in more than half the documents has a negative idf,
                # which rank-bm25 replaces by epsilon times the average idf over all terms.
                eps = p.epsilon * (idf_sum / len(values))
                for term in negative:
                    values[term] = eps
        elif p.variant == "bm25l":
            values = [math.log(n + 1) - math.log(freq + 0.5) for freq in freqs]
        else:
            values = [math.log((n + 1) / freq) for freq in freqs]
        return np.asarray(values, dtype=np.float64)

    def _weights(self, tf: np.ndarray, post_terms: np.ndarray) -> np.ndarray:
        """Each posting's contribution, in rank-bm25's operation order (numpy float64).

        Computed in slices of postings: element-wise, so the values are the same, and the
        temporaries stay small however large the corpus.
        """
        if self.params.variant == "bm25plus":
            # BM25+: a document without the term still gets idf * (delta + 0 / (...)) = idf * delta.
            self.baseline = self.idf * (self.params.delta + 0.0)
        weights = np.empty(len(tf))
        step = 1 << 22
        for start in range(0, len(tf), step):
            part = slice(start, start + step)
            weights[part] = self._slice_weights(tf[part], post_terms[part], self.post_docs[part])
        return weights

    def _slice_weights(self, tf: np.ndarray, post_terms: np.ndarray, post_docs: np.ndarray) -> np.ndarray:
        p = self.params
        k1, b, avgdl = p.k1, p.b, self.avgdl
        idf = self.idf[post_terms]
        doc_len = self.doc_len[post_docs]
        if p.variant == "okapi":
            return idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl)))
        if p.variant == "bm25l":
            ctd = tf / (1 - b + b * doc_len / avgdl)
            return idf * tf * (k1 + 1) * (ctd + p.delta) / (k1 + ctd + p.delta)
        return idf * (p.delta + (tf * (k1 + 1)) / (k1 * (1 - b + b * doc_len / avgdl) + tf))

    @property
    def adds_baseline(self) -> bool:
        """True for BM25+, where every term adds to every document's score."""
        return self.params.variant == "bm25plus"

    def term_ids(self, tokens: Sequence[str]) -> list[int]:
        """Known query terms as ids, in query order with repeats (unknown terms add 0 in rank-bm25)."""
        vocabulary = self.vocabulary
        return [vocabulary[token] for token in tokens if token in vocabulary]

    def score(self, term_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(document indexes sharing a term with the query, their scores), indexes ascending."""
        if not term_ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        ptr, docs, weights = self.term_ptr, self.post_docs, self.post_weights
        scores = np.zeros(self.corpus_size)
        present = np.zeros(self.corpus_size, dtype=bool)
        if self.adds_baseline:
            for term in term_ids:
                start, end = ptr[term], ptr[term + 1]
                contribution = np.full(self.corpus_size, self.baseline[term])
                contribution[docs[start:end]] = weights[start:end]
                scores += contribution
                present[docs[start:end]] = True
        else:
            for term in term_ids:
                start, end = ptr[term], ptr[term + 1]
                # Posting documents are unique within a term, so this is one addition each.
                scores[docs[start:end]] += weights[start:end]
                present[docs[start:end]] = True
        candidates = np.flatnonzero(present)
        return candidates, scores[candidates]

    def weight_matrix(self) -> Any:
        """The (terms x documents) CSR matrix of posting contributions, for batch products."""
        from scipy.sparse import csr_matrix

        vocab_size = len(self.vocabulary)
        return csr_matrix(
            (self.post_weights, self.post_docs, self.term_ptr),
            shape=(vocab_size, max(self.corpus_size, 1)),
        )

    def nbytes(self) -> int:
        """Bytes held by the arrays and the vocabulary dict (keys included)."""
        arrays = (self.term_ptr, self.post_docs, self.post_weights, self.idf, self.baseline,
                  self.doc_len)
        size = sum(array.nbytes for array in arrays)
        size += sys.getsizeof(self.vocabulary) + sum(sys.getsizeof(t) for t in self.vocabulary)
        return int(size)
