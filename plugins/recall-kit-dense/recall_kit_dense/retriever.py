"""The `dense` retriever: sentence-transformers embeddings (on ONNX Runtime or torch), cosine by
inner product, exact or ANN."""

from __future__ import annotations

import hashlib
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from recall_kit.plugin import Corpus, Hit, Memory, Retriever, id_ranks
from recall_kit_dense.models import (
    DEFAULT_MODEL,
    LoadedModel,
    load_model,
    resolve_model,
    token_lengths,
    usable_cpus,
)
from recall_kit_dense.prefixes import Prefixes, resolve_prefixes

if TYPE_CHECKING:
    import numpy as np

    from recall_kit_dense.ann import AnnIndex
    from recall_kit_dense.cache import EmbeddingCache

# numpy, and the modules that need it (ann, cache), are imported where vectors are made or
# searched: registering this retriever runs for `recall-kit --help`, which must not pay for numpy.

#: Memory fields that `fields` may name; `searchable_text` is content, category, tags, keywords.
TEXT_FIELDS = ("searchable_text", "content", "category", "tags", "expanded_keywords")
_DEVICE = re.compile(r"^(cpu|auto|mps|cuda(:\d+)?)$")


def memory_text(memory: Memory, fields: Sequence[str]) -> str:
    """The text embedded for a memory: the named fields joined by newlines, empty ones left out.

    An empty result is embedded as the empty string (it still gets a vector, and a rank).
    """
    parts = []
    for name in fields:
        if name == "searchable_text":
            value = memory.searchable_text
        elif name == "tags":
            value = " ".join(memory.tags)
        else:
            value = getattr(memory, name)
        if value:
            parts.append(value)
    return "\n".join(parts)


def _encodable(text: str) -> str:
    """`text` with each lone surrogate (not text; the tokenizer raises TypeError) as U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _stacked(parts: Sequence[np.ndarray]) -> np.ndarray:
    import numpy as np

    return np.vstack(parts) if len(parts) > 1 else parts[0]


def _in_corpus_order(order: list[int] | None, matrix: np.ndarray) -> np.ndarray:
    """The rows of `matrix`, embedded in `order` (`_document_chunks`), put back in corpus order."""
    if order is None:
        return matrix
    import numpy as np

    unsorted = np.empty_like(matrix)
    unsorted[order] = matrix
    return unsorted


def _made_by(loaded: LoadedModel) -> dict[str, str]:
    """The software versions an embedding cache key names: sentence-transformers' (read from its
    package metadata, not imported), and on ONNX Runtime the export's and onnxruntime's."""
    from importlib import metadata

    if loaded.backend != "onnx":
        return {"sentence_transformers": metadata.version("sentence-transformers")}
    settings = loaded.model.settings  # the export's manifest
    return {"sentence_transformers": str(settings["sentence_transformers"]),
            "onnxruntime": metadata.version("onnxruntime"),
            "onnx_export": str(settings["files"]["model.onnx"]["sha256"])[:16]}


#: Why a cache entry that was there is not used, by its lookup status (a miss says nothing).
_DAMAGE = {
    "corrupt": "failed its check (unreadable, a checksum, NaN or all-zero vectors)",
    "mismatch": "does not match what was asked for (its sidecar's key or format, or the array's shape)",
}


#: Cache folders a write already failed in (said once a process, for the corpus and the queries alike).
_UNWRITABLE_CACHES: set[str] = set()


def _say_damaged(status: str, what: str, folder: object) -> None:
    """One line on stderr when a cache entry was found but cannot be used: a damaged cache is
    never reused, nor rebuilt silently. No text: the entry is named by what it holds."""
    if status in _DAMAGE:
        print(f"recall-kit-dense: the embedding cache for {what} under {folder} {_DAMAGE[status]}; "
              "re-embedding.", file=sys.stderr)


class _Description:
    """The retriever's one line for `recall-kit list retrievers`, with the packaged models this
    machine has (read from installed packages' metadata: nothing is assembled or loaded)."""

    def __get__(self, instance: object, owner: type | None = None) -> str:
        from recall_kit_dense.packaged import installed_models

        states = installed_models()
        packaged = "; ".join(f"{name} ({state})" for name, state in states.items())
        return ("Dense embeddings (sentence-transformers models, on ONNX Runtime or torch), cosine "
                "similarity; offline by default. "
                f"Models: all-MiniLM-L6-v2 (default, bundled); packaged: {packaged or 'none'}.")


class DenseRetriever(Retriever):
    """Embeds memories and queries with a sentence-transformers model; cosine similarity."""

    description = _Description()  # type: ignore[assignment]
    index_settings = frozenset({"dimension", "max_seq_length"})

    @dataclass(frozen=True)
    class Options:
        #: A sentence-transformers model name (the bundled MiniLM, a packaged model such as
        #: all-mpnet-base-v2 once its packages are installed, or one in the local hub cache) or a folder.
        model: str = DEFAULT_MODEL
        #: Memory fields embedded, joined by newlines.
        fields: tuple[str, ...] = ("searchable_text",)
        #: Put before each query / memory; None: detected from the model name; "": none.
        query_prefix: str | None = None
        doc_prefix: str | None = None
        batch_size: int = 64
        #: cpu, cuda, cuda:N, mps, or auto (cuda, then mps, then cpu).
        device: str = "cpu"
        #: Tokens kept per text (longer text is truncated); None: the model's own limit.
        max_seq_length: int | None = None
        index: Literal["exact", "hnsw", "faiss"] = "exact"
        ann_m: int = 16
        ann_ef_construction: int = 200
        ann_ef_search: int = 128
        #: Also run exact search for every query and report the ANN's recall@k in index stats.
        ann_recall_check: bool = False
        #: Keep corpus embeddings in the user's cache folder (RECALL_KIT_CACHE overrides).
        cache: bool = True
        #: Also keep each batch's (`search_many`) query embeddings there, keyed by a digest of
        #: the query texts: a repeated eval or sweep over the same questions does not re-embed them.
        query_cache: bool = True
        #: Let a model name missing from the local cache be downloaded (the only network use).
        allow_download: bool = False
        #: Run code that ships with a model (some models, e.g. nomic-embed, need it).
        trust_remote_code: bool = False
        #: What embeds memories and queries: onnx (ONNX Runtime on the model's fp32 export, made
        #: once; no torch after that), torch (sentence-transformers), or auto: onnx on the CPU
        #: when onnxruntime is installed, else torch. A model that cannot be exported uses torch.
        backend: Literal["auto", "torch", "onnx"] = "auto"
        #: With backend=onnx: int8 dynamic quantisation of the query model (memories stay fp32).
        quantize: bool = False
        #: Intra-op threads for embedding a single query (ONNX Runtime's, or torch's).
        threads: int = 1

        def __post_init__(self) -> None:
            unknown = [name for name in self.fields if name not in TEXT_FIELDS]
            if unknown or not self.fields:
                raise ValueError(
                    f"fields must name some of {', '.join(TEXT_FIELDS)} (got {', '.join(unknown) or 'none'})"
                )
            if self.batch_size < 1:
                raise ValueError("batch_size must be at least 1")
            if not _DEVICE.match(self.device):
                raise ValueError(f"device must be cpu, cuda, cuda:N, mps or auto (got {self.device!r})")
            if self.max_seq_length is not None and self.max_seq_length < 1:
                raise ValueError("max_seq_length must be at least 1")
            if min(self.ann_m, self.ann_ef_construction, self.ann_ef_search) < 1:
                raise ValueError("ann_m, ann_ef_construction and ann_ef_search must be at least 1")
            if self.threads < 1:
                raise ValueError("threads must be at least 1")
            if self.quantize and self.backend != "onnx":
                raise ValueError("quantize needs backend=onnx")
            if self.backend == "onnx" and self.device not in ("cpu", "auto"):
                raise ValueError(f"backend=onnx runs on the CPU; use device=cpu or backend=torch (got {self.device!r})")

    options: Options

    @classmethod
    def packaged_models(cls) -> list[str]:
        """The packaged models whose packages are all installed here (`-o dense.model=NAME` loads
        them offline; recall_kit_dense/packaged.py): read from package metadata, nothing loaded."""
        from recall_kit_dense.packaged import installed_models

        return [name for name, state in installed_models().items() if state == "installed"]

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._loaded: LoadedModel | None = None
        self._prefixes: Prefixes | None = None
        self._ids: list[str] = []
        self._id_rank: np.ndarray | None = None  # recall_kit.id_ranks(self._ids): the tie order
        self._matrix: np.ndarray | None = None
        self._ann: AnnIndex | None = None
        self._ann_bytes = 0
        self._stats: dict[str, Any] = {}
        self._ann_recall: dict[tuple[str, int], tuple[int, int]] = {}
        #: Queries of the batch path whose embeddings were read from the query cache.
        self._cached_queries = 0
        #: Where the model loads when not where the options say (a driver that only plans batches).
        self._device: str | None = None

    # -- the model ---------------------------------------------------------------------------

    def _model(self) -> LoadedModel:
        if self._loaded is None:
            from recall_kit.plugin import stage

            options = self.options
            stage(f"dense: loading the model {options.model}")
            source = resolve_model(options.model, options.allow_download)
            loaded = None
            if self._backend() == "onnx":
                from recall_kit_dense.onnx_backend import load_onnx_model

                loaded = load_onnx_model(source, options.max_seq_length, self._memory_threads(),
                                         options.allow_download, options.trust_remote_code)
            self._loaded = loaded or load_model(
                source, self._device or options.device, options.max_seq_length, options.trust_remote_code,
                options.allow_download,
            )
            self._prefixes = resolve_prefixes(
                source.name, options.query_prefix, options.doc_prefix, self._loaded.prompts
            )
        return self._loaded

    def _backend(self) -> str:
        """The backend the options ask for, `auto` decided: onnx on the CPU where onnxruntime and
        tokenizers are installed and the model runs no code of its own, else torch."""
        options = self.options
        if options.backend != "auto":
            return options.backend
        from recall_kit_dense.onnx_backend import runtime_available

        on_cpu = (self._device or options.device) == "cpu"
        return "onnx" if on_cpu and not options.trust_remote_code and runtime_available() else "torch"

    @staticmethod
    def _memory_threads() -> int:
        """ONNX Runtime's intra-op threads for memories and query batches: the CPUs this process may use."""
        return usable_cpus()

    def _encode(self, texts: list[str], prefix: str, threads: int | None = None,
                quantize: bool = False) -> np.ndarray:
        """`texts` embedded with `prefix` before each; on ONNX Runtime, on `threads` intra-op
        threads (default: `_memory_threads`) and with the int8 query model when `quantize`."""
        import numpy as np

        loaded = self._model()
        if not texts:
            return np.zeros((0, loaded.dimension), dtype=np.float32)
        texts = [_encodable(text) for text in texts]
        if loaded.backend == "onnx":
            with loaded.lock:
                return loaded.model.encode(texts, prefix, self.options.batch_size, threads=threads,
                                           quantize=quantize, watch=loaded.watch)
        with loaded.lock:
            vectors = loaded.model.encode(
                texts, prompt=prefix or None, batch_size=self.options.batch_size,
                normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed memory texts (the doc prefix applied); a subclass may observe or replace it.

        The run's progress display counts the texts embedded: one encode call per `batch_size * 4`
        texts (`_document_chunks`), so the count moves on a slow machine too.
        """
        assert self._prefixes is not None
        prefix = self._prefixes.document
        from recall_kit.plugin import progress_bar

        order, chunks = self._document_chunks(texts)
        parts = []
        with progress_bar(len(texts), f"dense: embedding {len(texts):,} memories") as advance:
            for part in chunks:
                parts.append(self._encode(part, prefix))
                advance(len(part))
        return _in_corpus_order(order, _stacked(parts))

    def _document_chunks(self, texts: list[str]) -> tuple[list[int] | None, list[list[str]]]:
        """The encode calls that embed `texts`: (None, [texts]) when they fit in one (`_chunk`);
        else (the order, chunks of the texts in that order). The order is longest first by
        characters (stable), the one sentence-transformers sorts each call's texts in, so each
        call's batches hold texts of like length as one call over all of them would: chunks taken
        in corpus order padded every batch to its longest text (6% slower on a CPU, and with the
        token count 21% slower than a plain encode on an H100; docs/performance.md)."""
        chunk = self._chunk
        if len(texts) <= chunk:
            return None, [texts]
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        ordered = [texts[i] for i in order]
        return order, [ordered[start:start + chunk] for start in range(0, len(ordered), chunk)]

    @property
    def _chunk(self) -> int:
        """How many memory texts one encode call embeds (`_embed_documents`, `embed_batch`)."""
        return self.options.batch_size * 4

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        """Embed query texts (the query prefix applied), on the backend the options name.

        A single query runs on `threads` intra-op threads: more threads only wait on each
        other for one short text, and on a busy machine they make it many times slower.
        """
        assert self._prefixes is not None
        if self._model().backend == "onnx":
            threads = self.options.threads if len(texts) == 1 else None
            return self._encode(texts, self._prefixes.query, threads, self.options.quantize)
        if len(texts) == 1 and self._model().device == "cpu":
            import torch

            saved = torch.get_num_threads()
            torch.set_num_threads(self.options.threads)
            try:
                return self._encode(texts, self._prefixes.query)
            finally:
                torch.set_num_threads(saved)
        return self._encode(texts, self._prefixes.query)

    def query_cache_key(self, texts: Sequence[str]) -> dict[str, Any]:
        """Everything a batch of query embeddings depends on; the texts only as a digest."""
        loaded = self._model()
        assert self._prefixes is not None
        from recall_kit_dense.cache import CACHE_FORMAT

        return {
            "format": CACHE_FORMAT,
            "kind": "queries",
            "model": loaded.source.identity,
            "weights": loaded.signature,
            "query_prefix": self._prefixes.query,
            "backend": loaded.backend,
            "quantize": self.options.quantize,
            "normalize": True,
            "max_seq_length": loaded.max_seq_length,
            "dtype": "float32",
            "queries": hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest(),
            **_made_by(loaded),
        }

    def _cached_query_vectors(self, texts: list[str]) -> np.ndarray:
        """`_embed_queries(texts)`, through the embedding cache when `cache` and `query_cache` are on."""
        if not (self.options.cache and self.options.query_cache):
            return self._embed_queries(texts)
        from recall_kit_dense.cache import EmbeddingCache

        cache = EmbeddingCache()
        key = self.query_cache_key(texts)
        lookup = cache.load(key)
        if lookup.hit and lookup.array is not None and lookup.array.shape[0] == len(texts):
            self._cached_queries += len(texts)
            return lookup.array
        _say_damaged("mismatch" if lookup.hit else lookup.status, "these queries", cache.folder)
        vectors = self._embed_queries(texts)
        self._write_cache(cache, key, vectors, False)
        return vectors

    # -- the index ---------------------------------------------------------------------------

    def cache_key(self, corpus: Corpus) -> dict[str, Any]:
        """Everything the corpus embeddings depend on (see the README's "Embedding cache")."""
        loaded = self._model()
        assert self._prefixes is not None
        from recall_kit_dense.cache import CACHE_FORMAT

        return {
            "format": CACHE_FORMAT,
            "model": loaded.source.identity,
            "weights": loaded.signature,
            "doc_prefix": self._prefixes.document,
            "fields": list(self.options.fields),
            "normalize": True,
            "max_seq_length": loaded.max_seq_length,
            "dtype": "float32",
            "corpus": corpus.fingerprint,
            # The fingerprint ignores order; the rows of the matrix follow it.
            "order": hashlib.sha256("\x00".join(corpus.ids).encode("utf-8", "surrogatepass")).hexdigest(),
            **_made_by(loaded),
            **({"backend": "onnx"} if loaded.backend == "onnx" else {}),
        }

    def build_index(self, corpus: Corpus) -> None:
        from recall_kit_dense.ann import build_ann
        from recall_kit_dense.cache import EmbeddingCache

        loaded = self._model()
        assert self._prefixes is not None
        self._ids = list(corpus.ids)
        self._id_rank = id_ranks(self._ids)
        texts = [memory_text(memory, self.options.fields) for memory in corpus]
        cache = EmbeddingCache() if self.options.cache else None
        key = self.cache_key(corpus) if cache is not None else {}
        status = "disabled"
        matrix: np.ndarray | None = None
        truncated: int | None = None
        if cache is not None:
            lookup = cache.load(key)
            status = lookup.status
            if lookup.hit and lookup.array is not None and lookup.array.shape == (len(texts), loaded.dimension):
                matrix = lookup.array
                truncated = (lookup.extra or {}).get("truncated_memories")
            elif lookup.hit:
                status = "mismatch"
            _say_damaged(status, "this corpus", cache.folder)
        embedded = 0
        embed_seconds = 0.0
        if matrix is None:
            from recall_kit_dense.truncation import watching

            started = time.perf_counter()
            with watching(loaded) as watch:
                matrix = self._embed_documents(texts)
            embed_seconds = time.perf_counter() - started
            embedded = len(texts)
            truncated = watch.truncated(loaded, len(texts))
            if truncated is None:  # the watch did not see every text: count them all
                truncated = self._count_truncated(loaded, texts)
            if cache is not None and not self._write_cache(cache, key, matrix, truncated):
                status += " (not written)"
        self._matrix = matrix
        self._ann = None
        self._ann_bytes = 0
        self._ann_recall = {}
        self._cached_queries = 0
        if self.options.index != "exact" and len(self._ids) > 0:
            self._ann = build_ann(
                self.options.index, matrix, self.options.ann_m,
                self.options.ann_ef_construction, self.options.ann_ef_search,
            )
            self._ann_bytes = self._ann.size_bytes()
        self._stats = {
            "model": loaded.source.identity if loaded.source.origin != "folder" else loaded.source.name,
            "model_source": loaded.source.origin,
            "device": loaded.device,
            "backend": loaded.backend,
            "dimension": loaded.dimension,
            "max_seq_length": loaded.max_seq_length,
            "prefixes": self._prefixes.source,
            "memories": len(self._ids),
            "embedded_memories": embedded,
            # Embedding the memories alone (0.0 on a cache hit): build_seconds also holds the model load.
            "embed_seconds": round(embed_seconds, 4),
            "truncated_memories": truncated,
            "cache_hit": status == "hit",
            "cache": status,
            "index": self.options.index,
        }

    # -- embedding in batches (a distributed run; recall_kit.plugin.EmbedsInBatches) -----------

    def embedding_work(self, corpus: Corpus) -> list[tuple[int, list[str]]]:
        """The memory texts `build_index(corpus)` would embed, in the chunks it embeds them in
        (`batch_size * 4` texts an encode call), when the cache does not hold them; none with
        `cache=False`. This instance only plans and stores: its model loads on the CPU (the cache
        key needs the weights, not the device the batches run on).

        Each batch carries this process's torch thread count: a CPU task embeds on as many
        threads (a task's own default is 1), since the float sums of a matrix product depend on
        how they are split over threads, and the vectors must be a local run's bit for bit."""
        if not self.options.cache or len(corpus) == 0:
            return []
        from recall_kit_dense.cache import EmbeddingCache

        if self._loaded is None:
            self._device = "cpu"
        loaded = self._model()
        lookup = EmbeddingCache().load(self.cache_key(corpus))
        if lookup.hit and lookup.array is not None and lookup.array.shape == (len(corpus), loaded.dimension):
            return []
        if loaded.backend == "onnx":
            threads = self._memory_threads()
        else:
            import torch

            threads = torch.get_num_threads()
        texts = [memory_text(memory, self.options.fields) for memory in corpus]
        return [(threads, part) for part in self._document_chunks(texts)[1]]

    def embed_batch(self, batch: tuple[int, list[str]]) -> np.ndarray:
        """One chunk's embeddings: the encode call `_embed_documents` makes for it, on the CPU on
        the planning process's number of threads."""
        threads, texts = batch
        loaded = self._model()
        assert self._prefixes is not None
        if loaded.backend == "onnx":
            return self._encode(list(texts), self._prefixes.document, threads)
        if loaded.device != "cpu":
            return self._encode(list(texts), self._prefixes.document)
        import torch

        saved = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return self._encode(list(texts), self._prefixes.document)
        finally:
            torch.set_num_threads(saved)

    def store_embeddings(self, corpus: Corpus, embedded: list[np.ndarray]) -> None:
        """The cache entry `build_index(corpus)` would write, from the chunks' embeddings."""
        from recall_kit_dense.cache import EmbeddingCache

        loaded = self._model()
        matrix = _stacked(embedded)
        texts = [memory_text(memory, self.options.fields) for memory in corpus]
        if matrix.shape != (len(texts), loaded.dimension):
            raise ValueError(f"the batches hold {matrix.shape[0]} embeddings for {len(texts)} memories")
        matrix = _in_corpus_order(self._document_chunks(texts)[0], matrix)
        self._write_cache(EmbeddingCache(), self.cache_key(corpus), matrix,
                          self._count_truncated(loaded, texts))

    def _write_cache(self, cache: EmbeddingCache, key: dict[str, Any], matrix: np.ndarray,
                     truncated: int | None | Literal[False]) -> bool:
        """Store the corpus matrix, or the queries' (`truncated` False): a failure (a read-only
        or full cache is an OutputError, a folder in the way an OSError) is said once a process
        and cache folder on stderr, and the run goes on without it."""
        from recall_kit.plugin import RecallKitError

        try:
            cache.store(key, matrix, {} if truncated is False else {"truncated_memories": truncated})
        except (OSError, RecallKitError) as error:
            if str(cache.folder) not in _UNWRITABLE_CACHES:
                _UNWRITABLE_CACHES.add(str(cache.folder))
                print(
                    f"recall-kit-dense: could not write the embedding cache under "
                    f"{cache.folder} ({type(error).__name__}); continuing without it.",
                    file=sys.stderr,
                )
            return False
        return True

    def _count_truncated(self, loaded: LoadedModel, texts: list[str]) -> int | None:
        """How many memory texts (with the doc prefix) are longer than the model's window."""
        if loaded.max_seq_length is None or not texts:
            return 0 if not texts else None
        assert self._prefixes is not None
        prefix = self._prefixes.document
        lengths = token_lengths(loaded, [prefix + text for text in texts])
        if lengths is None:
            return None
        return sum(1 for length in lengths if length > loaded.max_seq_length)

    # -- search ------------------------------------------------------------------------------

    def search(self, query: str, k: int) -> list[Hit]:
        # Always embedded: this is the path whose latency a user waits for (no query cache).
        return self._search([query], k, cached=False)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """One encode call and one matrix product for the whole batch.

        An empty (or whitespace-only) query has nothing to match and gets no hits. The batch's
        query embeddings go through the embedding cache (`query_cache`).
        """
        return self._search(queries, k, cached=True)

    def _search(self, queries: Sequence[str], k: int, cached: bool) -> list[list[Hit]]:
        from recall_kit_dense.ann import ann_hits, portable_top_k

        results: list[list[Hit]] = [[] for _ in queries]
        if self._matrix is None:
            raise RuntimeError("build_index must be called before search")
        wanted = [i for i, text in enumerate(queries) if text.strip()]
        if k <= 0 or not wanted or not self._ids:
            return results
        texts = [queries[i] for i in wanted]
        vectors = self._cached_query_vectors(texts) if cached else self._embed_queries(texts)
        if self._ann is not None:
            rows, scores = self._ann.query(vectors, k)
            answers = ann_hits(rows, scores, self._ids, k)
            if self.options.ann_recall_check:
                exact = portable_top_k(self._matrix, vectors, self._similarities(vectors), self._ids, k, self._id_rank)
                for i, approximate, truth in zip(wanted, answers, exact, strict=True):
                    self._record_recall(queries[i], k, approximate, truth)
        else:
            answers = portable_top_k(self._matrix, vectors, self._similarities(vectors), self._ids, k, self._id_rank)
        for i, answer in zip(wanted, answers, strict=True):
            results[i] = answer
        return results

    def _similarities(self, vectors: np.ndarray) -> np.ndarray:
        """(queries x memories) inner products. One query is a matrix-vector product computed by
        numpy's own einsum loop, not BLAS: between two query embeddings OpenBLAS's threads wake
        up and compete with the model for the cores; at 6,000 x 384 BLAS took ~5.5 ms per query
        that way (and slowed the ONNX embedding from ~6 to ~10 ms), einsum 0.6 ms, on 2 cores
        (docs/performance.md). BLAS held to one thread (threadpoolctl) is no faster there: after
        the model's pass the 9 MB matrix comes from memory either way (0.63 against 0.68 ms).
        A batch stays one BLAS matrix product."""
        import numpy as np

        assert self._matrix is not None
        if len(vectors) == 1:
            return np.einsum("ij,j->i", self._matrix, vectors[0])[None, :]
        return vectors @ self._matrix.T

    def _record_recall(self, query: str, k: int, approximate: list[Hit], truth: list[Hit]) -> None:
        # Keyed by a digest, so a query timed again is counted once and no text is kept.
        digest = hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        expected = {hit.id for hit in truth}
        found = {hit.id for hit in approximate}
        self._ann_recall[(digest, k)] = (len(expected & found), len(expected))

    # -- reporting ---------------------------------------------------------------------------

    @property
    def embeddings(self) -> np.ndarray | None:
        """The corpus matrix (one L2-normalised row per memory, in corpus order), read-only."""
        if self._matrix is None:
            return None
        view = self._matrix.view()
        view.flags.writeable = False
        return view

    def index_size_bytes(self) -> int | None:
        if self._matrix is None:
            return None
        return int(self._matrix.nbytes) + int(self._ann_bytes)

    def index_stats(self) -> dict[str, Any]:
        stats = dict(self._stats)
        if self.options.cache and self.options.query_cache:
            # How many of the batch's query embeddings were cache reads (the eval's throughput says so).
            stats["cached_query_embeddings"] = self._cached_queries
        if self._ann is not None:
            stats["ann_bytes"] = self._ann_bytes
        if self.options.ann_recall_check and self._ann_recall:
            from recall_kit_dense.ann import ann_recall_stats

            stats.update(ann_recall_stats(self._ann_recall))
        return stats

    def close(self) -> None:
        self._matrix = None
        self._ann = None
