"""The `llm-embed` retriever: the dense leg with any embedding model `llm` knows (hosted or local),
in batches, each text's vector cached by (model id, text digest), transient errors retried, and a
dry run that counts what would be sent before anything is."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recall_kit.plugin import Corpus, Hit, RecallKitError, Retriever
from recall_kit_llm.calls import CallStats, Progress, effective_concurrency, ordered_map
from recall_kit_llm.models import CallCache, digest, estimate_tokens, get_embedding_model, with_retries

if TYPE_CHECKING:
    import numpy as np

EMBED_VERSION = "embed-1"


class DryRun(RecallKitError):
    """A dry run stops here, having sent nothing; its message says what a run would send."""


class LlmEmbedRetriever(Retriever):
    """Embeds memories and queries with an `llm` embedding model; cosine similarity, exact search."""

    description = "Dense retrieval with any `llm` embedding model (hosted or local); cosine, exact."

    @dataclass(frozen=True)
    class Options:
        #: The `llm` embedding model name or alias (`llm embed-models` lists them).
        model: str = ""
        #: Let a remote model receive memory text.
        allow_remote: bool = False
        #: Texts per call (None: the model's own batch size).
        batch_size: int | None = None
        #: Keep each text's vector in the user's cache folder, keyed by model id and text digest.
        cache: bool = True
        retries: int = 4
        retry_wait: float = 1.0
        #: Count the texts (and estimated tokens) a run would send, then stop with nothing sent.
        dry_run: bool = False
        #: Batches in flight (None: 16); a model that runs in this process takes one at a time.
        concurrency: int | None = None

        def __post_init__(self) -> None:
            if self.batch_size is not None and self.batch_size < 1:
                raise ValueError("batch_size must be at least 1")
            if self.concurrency is not None and self.concurrency < 1:
                raise ValueError("concurrency must be at least 1")
            if self.retries < 0 or self.retry_wait < 0:
                raise ValueError("retries and retry_wait must be >= 0")

    options: Options

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._model: Any = None
        self._ids: list[str] = []
        self._matrix: np.ndarray | None = None
        self._stats: dict[str, Any] = {}

    def _embedding_model(self) -> Any:
        if self._model is None:
            if not self.options.model:
                raise RecallKitError("llm-embed needs a model: -o llm-embed.model=NAME (see 'llm embed-models').")
            self._model = get_embedding_model(self.options.model, self.options.allow_remote,
                                              "-o llm-embed.allow_remote=true")
        return self._model

    def _key(self, text: str) -> str:
        return digest({"version": EMBED_VERSION, "model": self._embedding_model().model_id, "text": text})

    def embed(self, texts: Sequence[str], what: str, fresh: bool = False) -> np.ndarray:
        """L2-normalised vectors of `texts`: cached ones read (unless `fresh`: every text sent, as a
        query that meets the model for the first time), the rest sent in batches (each batch cached
        as it arrives, so an interrupted run resumes where it stopped)."""
        import numpy as np

        model = self._embedding_model()
        cache = CallCache(enabled=self.options.cache)
        vectors: list[Any] = [None if fresh else cache.get(self._key(text)) for text in texts]
        missing = [i for i, vector in enumerate(vectors) if not isinstance(vector, list)]
        if self.options.dry_run:
            tokens = sum(estimate_tokens(texts[i]) for i in missing)
            raise DryRun(f"dry run: {what}: would send {len(missing)} of {len(texts)} texts "
                         f"(about {tokens:,} tokens) to {model.model_id}; {len(texts) - len(missing)} "
                         "are cached. Nothing was sent.")
        size = self.options.batch_size or getattr(model, "batch_size", None) or 32
        stats = CallStats()

        def send(batch: list[int]) -> list[list[float]]:
            return [list(map(float, vector)) for vector in model.embed_multi([texts[i] for i in batch], batch_size=size)]

        def sent(batch: list[int]) -> list[int]:
            got = with_retries(functools.partial(send, batch), self.options.retries, self.options.retry_wait,
                               f"Embedding model {model.model_id!r}", on_retry=lambda: stats.add(retried=1))
            for i, vector in zip(batch, got, strict=True):
                vectors[i] = vector
                cache.put(self._key(texts[i]), vector)  # as it arrives: an interrupted run resumes
            stats.add(calls=1)
            return batch

        batches = [missing[start:start + size] for start in range(0, len(missing), size)]
        concurrency = effective_concurrency(model, self.options.concurrency, f"llm-embed {model.model_id!r}") \
            if len(batches) > 1 else 1
        for _ in ordered_map(sent, batches, concurrency, stats, Progress(f"llm-embed: {what}", len(batches), stats)):
            pass
        self._stats["embedded_" + what] = self._stats.get("embedded_" + what, 0) + len(missing)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        matrix = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)

    def build_index(self, corpus: Corpus) -> None:
        self._ids = list(corpus.ids)
        self._stats = {"model": self._embedding_model().model_id, "memories": len(self._ids)}
        self._matrix = self.embed([memory.searchable_text for memory in corpus], "memories")
        if self._matrix.size:
            self._stats["dimension"] = int(self._matrix.shape[1])

    def search(self, query: str, k: int) -> list[Hit]:
        """One query, its vector made by the model now: the runner times this call as a query's
        latency, and a vector the batch pass left in the cache would time a cache read."""
        return self._search([query], k, fresh=True)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return self._search(queries, k, fresh=False)

    def _search(self, queries: Sequence[str], k: int, fresh: bool) -> list[list[Hit]]:
        import numpy as np

        if self._matrix is None:
            raise RuntimeError("build_index must be called before search")
        results: list[list[Hit]] = [[] for _ in queries]
        wanted = [i for i, text in enumerate(queries) if text.strip()]
        if k <= 0 or not wanted or not self._ids:
            return results
        scores = self.embed([queries[i] for i in wanted], "queries", fresh=fresh) @ self._matrix.T
        for row, i in zip(scores, wanted, strict=True):
            # Best first; ties in corpus order (a stable sort of the negated scores).
            top = np.argsort(-row, kind="stable")[:k]
            results[i] = [Hit(self._ids[j], float(row[j])) for j in top]
        return results

    def index_size_bytes(self) -> int | None:
        return None if self._matrix is None else int(self._matrix.nbytes)

    def index_stats(self) -> dict[str, Any]:
        return dict(self._stats)

    def close(self) -> None:
        self._matrix = None

