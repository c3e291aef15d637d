"""A posting-array BM25 index that reproduces rank-bm25's scores bit for bit, without its
per-document Python loops.

rank-bm25 scores a query by looping over its terms (repeats included) and, for each, building a
dense array of that term's frequency in every document from per-document dicts, then adding
`idf * f(tf, doc_len)` to a running score. Documents that lack the term add `idf * f(0, ...)`,
which is exactly 0.0 for Okapi and BM25L and `idf * delta` for BM25+.

Here the index keeps, per term, the documents holding it and their term frequencies (int32 +
uint16: 6 bytes a posting; at 1,000,000 memories a stored float64 weight per posting and the
build's sort over every token cost gigabytes). A query computes its terms' contributions
`idf * f(tf, doc_len)` with the same float operations in the same order as rank-bm25 and adds
them into a score array in the query's term order, so every document's score is the same
sequence of IEEE additions rank-bm25 performs: identical floats, not merely close ones.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
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
    """Term -> (document indexes, term frequencies), plus what scoring needs.

    Documents are numbered 0..N-1 in corpus order. `term_ptr[t]:term_ptr[t+1]` slices
    `post_docs` (ascending document indexes) and `post_tf` for term id `t`. A posting's
    contribution `idf * f(tf, doc_len)` is computed when a query reads the term, from `post_tf`
    and a per-document length factor: 6 bytes a posting instead of a stored float64 weight.
    """

    #: Documents read per chunk while building; each chunk's postings are kept as small arrays
    #: until every term's total is known, then placed into the final arrays chunk by chunk.
    chunk_documents = 65_536
    #: The contributions of the terms with the longest posting lists (the common words most
    #: queries contain) are computed once and kept, up to this many bytes: the rest per query.
    weight_cache_bytes = 64 << 20

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
        lengths = array("q")
        chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (terms, tf, postings per doc)
        add = vocabulary.setdefault
        terms, freqs, per_doc = array("i"), array("I"), array("i")
        for doc in documents:
            lengths.append(len(doc))
            # Each document's distinct terms with their counts, in first-appearance order.
            counted = Counter([add(token, len(vocabulary)) for token in doc])
            terms.extend(counted.keys())
            freqs.extend(counted.values())
            per_doc.append(len(counted))
            if len(per_doc) == self.chunk_documents:
                chunks.append(_chunk(terms, freqs, per_doc))
                terms, freqs, per_doc = array("i"), array("I"), array("i")
        if len(per_doc):
            chunks.append(_chunk(terms, freqs, per_doc))
        del terms, freqs, per_doc
        self.corpus_size = len(lengths)
        self.vocabulary = vocabulary
        doc_len = np.frombuffer(lengths, dtype=np.int64) if len(lengths) else np.zeros(0, np.int64)
        vocab_size = len(vocabulary)
        doc_freq = np.zeros(vocab_size, dtype=np.int64)
        for chunk_terms, _, _ in chunks:
            doc_freq += np.bincount(chunk_terms, minlength=vocab_size)
        self.term_ptr = np.zeros(vocab_size + 1, dtype=np.int64)
        np.cumsum(doc_freq, out=self.term_ptr[1:])
        postings = int(self.term_ptr[-1])
        tf_type = np.uint16 if all(chunk[1].dtype == np.uint16 for chunk in chunks) else np.uint32
        self.post_docs = np.empty(postings, dtype=np.int32)
        self.post_tf = np.empty(postings, dtype=tf_type)
        # A counting sort by term, stable in document order: each chunk's postings go to the
        # next free slots of their terms, so every term's documents stay ascending.
        fill = self.term_ptr[:-1].copy()
        first_doc = 0
        while chunks:
            chunk_terms, chunk_tf, chunk_per_doc = chunks.pop(0)
            docs = np.repeat(np.arange(first_doc, first_doc + len(chunk_per_doc), dtype=np.int32),
                             chunk_per_doc)
            first_doc += len(chunk_per_doc)
            order = np.argsort(chunk_terms, kind="stable")
            sorted_terms = chunk_terms[order]
            starts = np.flatnonzero(np.r_[True, sorted_terms[1:] != sorted_terms[:-1]])
            rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
            slots = fill[sorted_terms] + rank
            self.post_docs[slots] = docs[order]
            self.post_tf[slots] = chunk_tf[order]
            fill += np.bincount(chunk_terms, minlength=vocab_size)
        # rank-bm25: avgdl = (int sum of lengths) / corpus_size.
        total = int(doc_len.sum())
        self.avgdl = total / self.corpus_size if self.corpus_size else 0.0
        self.idf = self._idf(doc_freq)
        self.baseline = np.zeros(vocab_size)
        if params.variant == "bm25plus":
            # BM25+: a document without the term still gets idf * (delta + 0 / (...)) = idf * delta.
            self.baseline = self.idf * (params.delta + 0.0)
        # The per-document length factor of rank-bm25's formulas, the same float operations:
        # Okapi and BM25+ use k1 * (1 - b + b * doc_len / avgdl), BM25L (1 - b + b * doc_len / avgdl).
        p = params
        length_norm = 1 - p.b + p.b * doc_len / self.avgdl if self.avgdl else np.zeros(self.corpus_size)
        self.doc_norm = length_norm if p.variant == "bm25l" else p.k1 * length_norm
        self.cached: dict[int, np.ndarray] = {}
        budget = self.weight_cache_bytes // 8
        for term in np.argsort(-doc_freq, kind="stable").tolist():
            size = int(doc_freq[term])
            if size > budget:
                break
            budget -= size
            self.cached[term] = self.postings(term)[1]

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

    def weights(self, idf: np.ndarray | float, tf: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """Postings' contributions `idf * f(tf, doc_len)`, in rank-bm25's operation order (numpy
        float64; `tf` is exact in any integer type, so the products are the same floats)."""
        p = self.params
        norm = self.doc_norm[docs]
        if p.variant == "okapi":
            return idf * (tf * (p.k1 + 1) / (tf + norm))
        if p.variant == "bm25l":
            ctd = tf / norm
            return idf * tf * (p.k1 + 1) * (ctd + p.delta) / (p.k1 + ctd + p.delta)
        return idf * (p.delta + (tf * (p.k1 + 1)) / (norm + tf))

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """One term's (document indexes ascending, contributions)."""
        start, end = self.term_ptr[term], self.term_ptr[term + 1]
        docs = self.post_docs[start:end]
        weights = self.cached.get(term)
        if weights is None:
            weights = self.weights(self.idf[term], self.post_tf[start:end], docs)
        return docs, weights

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
        scores = np.zeros(self.corpus_size)
        present = np.zeros(self.corpus_size, dtype=bool)
        cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for term in term_ids:
            if term not in cache:
                cache[term] = self.postings(term)
            docs, weights = cache[term]
            if self.adds_baseline:
                contribution = np.full(self.corpus_size, self.baseline[term])
                contribution[docs] = weights
                scores += contribution
            else:
                # Posting documents are unique within a term, so this is one addition each.
                scores[docs] += weights
            present[docs] = True
        candidates = np.flatnonzero(present)
        return candidates, scores[candidates]

    def weight_matrix(self, terms: np.ndarray) -> Any:
        """The (len(terms) x documents) CSR matrix of these terms' contributions, row i for
        `terms[i]`: the batch path's operand for one group of queries."""
        from scipy.sparse import csr_matrix

        counts = self.term_ptr[terms + 1] - self.term_ptr[terms]
        indptr = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        rows = [self.postings(term) for term in terms.tolist()]
        docs = np.concatenate([row[0] for row in rows]) if rows else np.zeros(0, np.int32)
        weights = np.concatenate([row[1] for row in rows]) if rows else np.zeros(0)
        return csr_matrix((weights, docs, indptr), shape=(len(terms), max(self.corpus_size, 1)))

    def nbytes(self) -> int:
        """Bytes held by the arrays and the vocabulary dict (keys included)."""
        arrays = (self.term_ptr, self.post_docs, self.post_tf, self.idf, self.baseline,
                  self.doc_norm)
        size = sum(array.nbytes for array in arrays) + sum(w.nbytes for w in self.cached.values())
        size += sys.getsizeof(self.vocabulary) + sum(sys.getsizeof(t) for t in self.vocabulary)
        return int(size)


def _chunk(terms: array, freqs: array, per_doc: array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One chunk's postings as numpy arrays, term frequencies in 16 bits when they fit."""
    tf = np.frombuffer(freqs, dtype=np.uint32)
    if len(tf) and tf.max() < 1 << 16:
        tf = tf.astype(np.uint16)
    else:
        tf = tf.copy()
    return np.frombuffer(terms, dtype=np.int32).copy(), tf, np.frombuffer(per_doc, dtype=np.int32).copy()
