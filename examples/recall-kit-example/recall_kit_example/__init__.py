"""recall-kit-example: a complete third-party recall-kit plugin, a TF-IDF cosine retriever in numpy.

Install it (``pip install ./examples/recall-kit-example``) and ``--retriever example`` works: the
entry point ``[project.entry-points.recall_kit] example = "recall_kit_example"`` points the host at
this module, and the host calls :func:`register_retrievers`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from recall_kit.plugin import Corpus, Hit, Register, Retriever, hookimpl

if TYPE_CHECKING:
    import numpy as np

# numpy is imported inside the methods that compute: the host loads every plugin to register
# it, also for `recall-kit --help`, and a module-level `import numpy` would slow that down.

__all__ = ["TfidfRetriever", "register_retrievers", "tokenize"]

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lower-cased (case-folded) runs of Unicode word characters: ``"Priya's API"`` ->
    ``["priya", "s", "api"]``. Anything else (quotes, operators, emoji) is a separator."""
    return _WORD.findall(text.casefold())


class TfidfRetriever(Retriever):
    """TF-IDF cosine similarity, computed with numpy.

    For a term t, a memory d and a corpus of n memories, of which df(t) contain t:

    - term frequency, sublinear: ``tf(t, d) = 1 + ln(count(t, d))`` (or the raw count);
    - inverse document frequency, smoothed: ``idf(t) = ln((1 + n) / (1 + df(t))) + 1``;
    - weight ``w(t, d) = tf(t, d) * idf(t)``, each memory's vector L2-normalised;
    - a query is weighted the same way, and a memory's score is the cosine of the two vectors.

    Memories that share no term with the query are not returned. This is the weighting of
    scikit-learn's ``TfidfVectorizer(sublinear_tf=True, smooth_idf=True, norm="l2")``.
    """

    description = "TF-IDF cosine (sublinear tf, smoothed idf), numpy; the plugin-guide example"

    @dataclass(frozen=True)
    class Options:
        #: ``1 + ln(count)`` when true, the raw count when false.
        sublinear_tf: bool = True
        #: Index the content only, or content, category, tags and keywords together.
        fields: Literal["all", "content"] = "all"
        #: Drop hits whose cosine is at or below this (0 drops memories with no shared term).
        min_score: float = 0.0

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._ids: list[str] = []
        self._vocabulary: dict[str, int] = {}
        # Set by build_index: the idf per term, the memories' unit vectors, and the position of
        # each memory in descending id order (ties are broken as trec_eval does).
        self._idf: np.ndarray | None = None
        self._matrix: np.ndarray | None = None
        self._tie_rank: np.ndarray | None = None

    def _weights(self, counts: np.ndarray) -> np.ndarray:
        import numpy as np

        if self.options.sublinear_tf:
            counts = np.where(counts > 0, 1.0 + np.log(np.maximum(counts, 1.0)), 0.0)
        return counts * self._idf

    def build_index(self, corpus: Corpus) -> None:
        import numpy as np

        texts = [m.searchable_text if self.options.fields == "all" else m.content for m in corpus]
        token_counts = [Counter(tokenize(text)) for text in texts]
        self._ids = list(corpus.ids)
        self._vocabulary = {
            term: column
            for column, term in enumerate(sorted(set().union(*token_counts)) if token_counts else [])
        }
        counts = np.zeros((len(texts), len(self._vocabulary)))
        for row, counter in enumerate(token_counts):
            for term, count in counter.items():
                counts[row, self._vocabulary[term]] = count
        n = len(texts)
        document_frequency = (counts > 0).sum(axis=0)
        self._idf = np.log((1.0 + n) / (1.0 + document_frequency)) + 1.0
        self._matrix = _l2_normalise(self._weights(counts))
        order = sorted(range(n), key=lambda i: self._ids[i], reverse=True)
        self._tie_rank = np.empty(n, dtype=np.int64)
        self._tie_rank[order] = np.arange(n)

    def _query_matrix(self, queries: Sequence[str]) -> np.ndarray:
        import numpy as np

        counts = np.zeros((len(queries), len(self._vocabulary)))
        for row, query in enumerate(queries):
            for term, count in Counter(tokenize(query)).items():
                column = self._vocabulary.get(term)
                if column is not None:
                    counts[row, column] = count
        return _l2_normalise(self._weights(counts))

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Every query's cosine against every memory as one matrix product."""
        import numpy as np

        queries = list(queries)
        if not queries:
            return []
        if self._matrix is None or self._tie_rank is None:
            raise RuntimeError("build_index() must be called before search()")
        scores = self._query_matrix(queries) @ self._matrix.T  # (queries, memories)
        answers = []
        for row in scores:
            candidates = np.flatnonzero(row > max(self.options.min_score, 0.0))
            # Best first; equal scores by id descending (trec_eval's order).
            order = candidates[np.lexsort((self._tie_rank[candidates], -row[candidates]))]
            answers.append([Hit(self._ids[i], float(row[i])) for i in order[: max(k, 0)]])
        return answers

    def index_size_bytes(self) -> int | None:
        if self._matrix is None or self._idf is None:
            return None
        size = (
            self._matrix.nbytes
            + self._idf.nbytes
            + sum(len(term.encode("utf-8")) for term in self._vocabulary)
        )
        return int(size) or None

    def index_stats(self) -> dict[str, Any]:
        return {"terms": len(self._vocabulary), "memories": len(self._ids)}


def _l2_normalise(matrix: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


@hookimpl
def register_retrievers(register: Register) -> None:
    """Register the ``example`` retriever."""
    register("example", TfidfRetriever)
