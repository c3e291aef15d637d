"""The `pg-fts` retriever: PostgreSQL full-text search as production runs it (weighted tsvector,
GIN index, websearch_to_tsquery or plainto_tsquery, ts_rank_cd), plus an OR mode that shows how
much of a gap to FTS5/BM25 is the query mode rather than the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from recall_kit.plugin import Corpus, Hit
from recall_kit_postgres.base import PostgresLeg, ServerOptions
from recall_kit_postgres.connection import PostgresError, safe_dsn

__all__ = ["FIELD_WEIGHTS", "PostgresError", "PostgresFTS", "safe_dsn", "tsquery_sql"]

#: Weights of the four indexed fields, as production memory stores set them.
FIELD_WEIGHTS = (("content", "A"), ("category", "B"), ("tags", "C"), ("keywords", "D"))

Parser = Literal["websearch", "plain", "or"]


def tsquery_sql(parser: Parser) -> Any:
    """SQL for the tsquery of `%(config)s` and `%(query)s` under a parser mode.

    `websearch` and `plain` AND every word (as production does); `or` ORs the query's lexemes
    (the words `to_tsvector` keeps: stemmed, stop words dropped), as FTS5/BM25 rank any match.
    """
    from psycopg import sql

    if parser == "websearch":
        return sql.SQL("websearch_to_tsquery(%(config)s::regconfig, %(query)s)")
    if parser == "plain":
        return sql.SQL("plainto_tsquery(%(config)s::regconfig, %(query)s)")
    return sql.SQL(
        "(SELECT coalesce(string_agg(quote_literal(lexeme), ' | '), '')::tsquery "
        "FROM unnest(to_tsvector(%(config)s::regconfig, %(query)s)))"
    )


def fts_vector_sql(config: str, columns: list[str | None], cast: bool) -> Any:
    """The weighted tsvector (A-D) of up to four text columns; None columns are left out."""
    from psycopg import sql

    template = "setweight(to_tsvector({}::regconfig, coalesce({}" + ("::text" if cast else "") + ", '')), {})"
    return sql.SQL(" || ").join(
        sql.SQL(template).format(sql.Literal(config), sql.Identifier(column), sql.Literal(weight))
        for column, (_, weight) in zip(columns, FIELD_WEIGHTS, strict=True) if column
    )


@dataclass(frozen=True)
class FtsOptions:
    """The full-text options of pg-fts (and of pg-hybrid's full-text list)."""

    text_col: str = "content"
    category_col: str | None = "category"
    tags_col: str | None = "tags"
    keywords_col: str | None = "expanded_keywords"
    importance_col: str | None = "importance"
    #: A precomputed tsvector column of an existing table (else computed from the columns).
    tsvector_col: str | None = None
    config: Literal["english", "simple"] = "english"
    #: websearch / plain: every word must match (production); or: any word may.
    parser: Parser = "websearch"
    #: ts_rank_cd's normalisation bitmask (0: none; 32: rank / (rank + 1), in [0, 1)).
    normalization: int = 0
    #: score = (1 - w) * ts_rank_cd + w * importance; 0 ranks by ts_rank_cd alone.
    importance_weight: float = 0.0


class PostgresFTS(PostgresLeg):
    """PostgreSQL full-text search: weighted tsvector (A-D), GIN index, ts_rank_cd."""

    description = "PostgreSQL full-text search: weighted tsvector, GIN index, ts_rank_cd"
    leg_name = "pg-fts"

    @dataclass(frozen=True)
    class Options(ServerOptions, FtsOptions):
        pass

    options: Options

    # --- index ----------------------------------------------------------------------------

    def build_index(self, corpus: Corpus) -> None:
        if self._open_table(corpus):
            options = self.options
            self._require_columns([options.id_col, options.text_col] + [
                column for column in (options.category_col, options.tags_col, options.keywords_col,
                                      options.importance_col, options.tsvector_col) if column
            ])
            return
        self._load_fts(corpus)

    def _load_fts(self, corpus: Corpus) -> None:
        from psycopg import sql

        vector = fts_vector_sql(self.options.config, [column for column, _ in FIELD_WEIGHTS], cast=False)
        self._load_memories(corpus, sql.SQL("tsv tsvector GENERATED ALWAYS AS ({}) STORED").format(vector))
        self._execute(sql.SQL("CREATE INDEX ON {} USING GIN (tsv)").format(self._identifier()))
        self._execute(sql.SQL("ANALYZE {}").format(self._identifier()))

    # --- search ---------------------------------------------------------------------------

    def columns_sql(self) -> tuple[Any, Any, Any]:
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
            vector = fts_vector_sql(options.config, [options.text_col, options.category_col, options.tags_col,
                                                     options.keywords_col], cast=True)
        importance = (
            sql.SQL("coalesce({}::double precision, 0)").format(sql.Identifier(options.importance_col))
            if options.importance_col else sql.SQL("0")
        )
        return identifier, vector, importance

    def candidates_sql(self) -> Any:
        """SELECT doc, score of the matching rows, best first, LIMIT %(k)s (parameters: config,
        query, norm, ids, k). pg-hybrid runs the very same statement as its full-text list."""
        from psycopg import sql

        identifier, vector, importance = self.columns_sql()
        weight = self._text_importance_weight()
        score = sql.SQL("({} * ts_rank_cd({}, q, %(norm)s) + {} * {})").format(
            sql.Literal(1.0 - weight), vector, sql.Literal(weight), importance
        )
        restrict = sql.SQL(" AND {} = ANY(%(ids)s)").format(identifier) if self.restrict else sql.SQL("")
        return sql.SQL(
            "SELECT {id} AS doc, {score} AS score FROM {table}, (SELECT {parse} AS q) AS parsed "
            "WHERE {vector} @@ q{restrict}{visible} ORDER BY score DESC, ({id}) COLLATE \"C\" DESC LIMIT %(k)s"
        ).format(id=identifier, score=score, table=self._identifier(), parse=tsquery_sql(self.options.parser),
                 vector=vector, restrict=restrict, visible=self._text_filter_sql())

    def _text_importance_weight(self) -> float:
        """The importance blended into the full-text score (pg-hybrid: none, its prior comes later)."""
        return float(self.options.importance_weight)

    def _text_filter_sql(self) -> Any:
        """Extra conditions on the rows full-text search may return (pg-hybrid: the hidden rows)."""
        from psycopg import sql

        return sql.SQL("")

    def query_params(self, text: str, k: int) -> dict[str, Any]:
        return {"norm": int(self.options.normalization), "config": self.options.config, "query": text,
                "k": int(k), "ids": self.corpus_ids}

    def search(self, query: str, k: int) -> list[Hit]:
        if self.connection is None or self.table is None:
            raise PostgresError("pg-fts: search before build_index.")
        text = query.replace("\x00", " ")
        if not text.strip() or k < 1:
            return []
        rows = self._search_rows(self.candidates_sql(), self.query_params(text, k))
        return [Hit(str(doc), float(value)) for doc, value in rows]

    def index_stats(self) -> dict[str, Any]:
        return {"config": self.options.config, "parser": self.options.parser, "embedded": self.embedded,
                "read_only": not self.created, "rows": len(self.corpus_ids)}
