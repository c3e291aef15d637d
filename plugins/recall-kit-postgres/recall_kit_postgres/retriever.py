"""The `pg-fts` retriever: PostgreSQL full-text search as production runs it (weighted tsvector,
GIN index, websearch_to_tsquery or plainto_tsquery, ts_rank_cd)."""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from typing import Any, Literal

from recall_kit import Corpus, Hit, RecallKitError, Retriever

_instances = itertools.count()
#: Weights of the four indexed fields, as production memory stores set them.
FIELD_WEIGHTS = (("content", "A"), ("category", "B"), ("tags", "C"), ("keywords", "D"))


class PostgresError(RecallKitError):
    """A connection, permission, table or column problem, as one line."""


def safe_dsn(dsn: str) -> str:
    """The DSN with any password removed, fit for an error message."""
    dsn = re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", dsn)
    return re.sub(r"(password\s*=\s*)(\S+)", r"\1***", dsn)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class PostgresFTS(Retriever):
    """PostgreSQL full-text search: weighted tsvector (A-D), GIN index, ts_rank_cd."""

    description = "PostgreSQL full-text search: weighted tsvector, GIN index, ts_rank_cd"

    @dataclass(frozen=True)
    class Options:
        #: libpq connection string or URL; default: $RECALL_KIT_PG_DSN.
        dsn: str | None = None
        #: An existing table to search read-only. None: load the corpus into a table of our own
        #: (needs allow_write), dropped again on close unless keep_table.
        table: str | None = None
        id_col: str = "id"
        text_col: str = "content"
        category_col: str | None = "category"
        tags_col: str | None = "tags"
        keywords_col: str | None = "expanded_keywords"
        importance_col: str | None = "importance"
        #: A precomputed tsvector column of an existing table (else computed from the columns).
        tsvector_col: str | None = None
        config: Literal["english", "simple"] = "english"
        parser: Literal["websearch", "plain"] = "websearch"
        #: ts_rank_cd's normalisation bitmask (0: none; 32: rank / (rank + 1), in [0, 1)).
        normalization: int = 0
        #: score = (1 - w) * ts_rank_cd + w * importance; 0 ranks by ts_rank_cd alone.
        importance_weight: float = 0.0
        allow_write: bool = False
        keep_table: bool = False

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self.connection: Any = None
        self.table: str | None = None
        self.created = False
        self.corpus_ids: list[str] = []
        self.restrict = False

    # --- connection -----------------------------------------------------------------------

    def _connect(self) -> Any:
        import psycopg

        dsn = self.options.dsn or os.environ.get("RECALL_KIT_PG_DSN")
        if not dsn:
            raise PostgresError(
                "pg-fts needs a database: pass -o pg-fts.dsn=postgresql://USER@HOST/DB or set RECALL_KIT_PG_DSN."
            )
        try:
            connection = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        except psycopg.Error as error:
            raise PostgresError(f"Cannot connect to PostgreSQL ({safe_dsn(dsn)}): {_first_line(error)}") from None
        if not self.options.allow_write:
            # Belt and braces: the session itself refuses writes.
            connection.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        return connection

    def _execute(self, query: Any, params: Any = None) -> Any:
        import psycopg

        try:
            return self.connection.execute(query, params)
        except psycopg.Error as error:
            raise PostgresError(f"PostgreSQL refused a statement on table {self.table!r}: {_first_line(error)}") from None

    # --- index ----------------------------------------------------------------------------

    def build_index(self, corpus: Corpus) -> None:
        self.connection = self._connect()
        self.corpus_ids = corpus.ids
        if self.options.table is not None and self._table_exists(self.options.table):
            self.table = self.options.table
            self._check_columns()
            self.restrict = True  # the table may hold rows the dataset does not (other scopes, sensitive rows)
            return
        if not self.options.allow_write:
            target = f"table {self.options.table!r}, which does not exist" if self.options.table else "a table of its own"
            raise PostgresError(
                f"pg-fts would have to create {target} to load the corpus: pass -o pg-fts.allow_write=true "
                "(or -o pg-fts.table=NAME to search an existing table read-only)."
            )
        self.table = self.options.table or f"recall_kit_{corpus.fingerprint[:12]}_{os.getpid()}_{next(_instances)}"
        self._load(corpus)

    def _table_exists(self, table: str) -> bool:
        row = self._execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        return bool(row[0])

    def _identifier(self) -> Any:
        """The searched table as an SQL identifier (schema-qualified names allowed)."""
        from psycopg import sql

        if self.table is None:
            raise PostgresError("pg-fts: search before build_index.")
        return sql.Identifier(*self.table.split("."))

    def _check_columns(self) -> None:
        from psycopg import sql

        wanted = [self.options.id_col, self.options.text_col] + [
            column for column in (self.options.category_col, self.options.tags_col, self.options.keywords_col,
                                  self.options.importance_col, self.options.tsvector_col) if column
        ]
        # A zero-row select names the table's columns without reading anything.
        cursor = self._execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(self._identifier()))
        present = {column.name for column in cursor.description}
        for column in wanted:
            if column not in present:
                raise PostgresError(
                    f"Table {self.table!r} has no column {column!r} (columns: {', '.join(sorted(present))}); "
                    "set it with -o pg-fts.<role>_col=NAME or None."
                )

    def _load(self, corpus: Corpus) -> None:
        from psycopg import sql

        table = self._identifier()
        config = sql.Literal(self.options.config)
        vector = sql.SQL(" || ").join(
            sql.SQL("setweight(to_tsvector({}::regconfig, coalesce({}, '')), {})").format(
                config, sql.Identifier(column), sql.Literal(weight)
            )
            for column, weight in FIELD_WEIGHTS
        )
        self._execute(
            sql.SQL(
                "CREATE TABLE {} (id text PRIMARY KEY, content text, category text, tags text, keywords text, "
                "importance double precision, tsv tsvector GENERATED ALWAYS AS ({}) STORED)"
            ).format(table, vector)
        )
        self.created = True
        with self.connection.cursor() as cursor:
            with cursor.copy(sql.SQL("COPY {} (id, content, category, tags, keywords, importance) FROM STDIN").format(table)) as copy:
                for memory in corpus:
                    copy.write_row((
                        memory.id, memory.content.replace("\x00", ""), memory.category,
                        ",".join(memory.tags), memory.expanded_keywords, memory.importance,
                    ))
        self._execute(sql.SQL("CREATE INDEX ON {} USING GIN (tsv)").format(table))
        self._execute(sql.SQL("ANALYZE {}").format(table))

    # --- search ---------------------------------------------------------------------------

    def _columns(self) -> tuple[Any, Any, Any]:
        """SQL for the id, the tsvector and the importance of a row of the searched table."""
        from psycopg import sql

        if self.created:
            return sql.SQL("id"), sql.SQL("tsv"), sql.SQL("coalesce(importance, 0)")
        options = self.options
        identifier = sql.SQL("{}::text").format(sql.Identifier(options.id_col))
        vector: Any
        if options.tsvector_col:
            vector = sql.Identifier(options.tsvector_col)
        else:
            columns = [options.text_col, options.category_col, options.tags_col, options.keywords_col]
            vector = sql.SQL(" || ").join(
                sql.SQL("setweight(to_tsvector({}::regconfig, coalesce({}::text, '')), {})").format(
                    sql.Literal(options.config), sql.Identifier(column), sql.Literal(weight)
                )
                for column, (_, weight) in zip(columns, FIELD_WEIGHTS, strict=True) if column
            )
        importance = (
            sql.SQL("coalesce({}::double precision, 0)").format(sql.Identifier(options.importance_col))
            if options.importance_col else sql.SQL("0")
        )
        return identifier, vector, importance

    def search(self, query: str, k: int) -> list[Hit]:
        from psycopg import sql

        if self.connection is None or self.table is None:
            raise PostgresError("pg-fts: search before build_index.")
        text = query.replace("\x00", " ")
        if not text.strip() or k < 1:
            return []
        identifier, vector, importance = self._columns()
        parse = "websearch_to_tsquery" if self.options.parser == "websearch" else "plainto_tsquery"
        weight = float(self.options.importance_weight)
        score = sql.SQL("({} * ts_rank_cd({}, q, %(norm)s) + {} * {})").format(
            sql.Literal(1.0 - weight), vector, sql.Literal(weight), importance
        )
        restrict = sql.SQL(" AND {} = ANY(%(ids)s)").format(identifier) if self.restrict else sql.SQL("")
        statement = sql.SQL(
            "SELECT {id} AS doc, {score} AS score FROM {table}, {parse}(%(config)s::regconfig, %(query)s) AS q "
            "WHERE {vector} @@ q{restrict} ORDER BY score DESC, ({id}) COLLATE \"C\" DESC LIMIT %(k)s"
        ).format(
            id=identifier, score=score, table=self._identifier(), parse=sql.SQL(parse),
            vector=vector, restrict=restrict,
        )
        params = {"norm": int(self.options.normalization), "config": self.options.config, "query": text,
                  "k": int(k), "ids": self.corpus_ids}
        rows = self._execute(statement, params).fetchall()
        return [Hit(str(doc), float(value)) for doc, value in rows]

    # --- size and clean-up ----------------------------------------------------------------

    def index_size_bytes(self) -> int | None:
        if self.connection is None or self.table is None:
            return None
        row = self._execute("SELECT pg_total_relation_size(to_regclass(%s))", (self.table,)).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def index_stats(self) -> dict[str, Any]:
        return {"config": self.options.config, "parser": self.options.parser,
                "read_only": not self.created, "rows": len(self.corpus_ids)}

    def close(self) -> None:
        if self.connection is None:
            return
        try:
            if self.created and not self.options.keep_table:
                from psycopg import sql

                self.connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._identifier()))
        finally:
            self.connection.close()
            self.connection = None
