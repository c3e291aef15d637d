"""The `pg-hybrid` retriever: the production query in one SQL round trip. A full-text candidate list
(pg-fts's statement) and a vector candidate list (pgvector's statement) fused in SQL by weighted
RRF or a convex combination of min-max normalised scores, then an importance prior, each step
computed exactly as recall-kit-fusion's `rrf`, `convex` (norm=minmax) and `importance` compute it,
so `pg-hybrid` ranks as `pg-fts+pgvector --fusion rrf --fusion importance` does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from recall_kit.plugin import Corpus, Hit, sort_hits
from recall_kit_postgres.base import ServerOptions
from recall_kit_postgres.retriever import FIELD_WEIGHTS, FtsOptions, PostgresFTS, fts_vector_sql
from recall_kit_postgres.vector import PgVector, VectorOptions

#: recall-kit's tie order in SQL: score at float32 precision descending, then id descending in
#: byte order (see recall_kit.sort_hits).
ORDER = 'score::real DESC, doc COLLATE "C" DESC'


@dataclass(frozen=True)
class HybridOptions:
    """How pg-hybrid fuses its two candidate lists."""

    #: rrf: sum of w / (rrf_k + rank); convex: sum of w * minmax(score) (missing: 0).
    fusion: Literal["rrf", "convex"] = "rrf"
    rrf_k: int = 60
    #: Candidates per list (at least the k asked for), as the fusions' `depth`.
    depth: int = 100
    fts_weight: float = 1.0
    vector_weight: float = 1.0
    #: score' = (1 - w) * minmax(fused score) + w * importance, as the `importance` fusion; 0: none.
    #: (pg-fts's own `importance_weight`, inside its list, is not applied in pg-hybrid.)
    importance_weight: float = 0.0
    #: The importance of a memory that has none.
    default_importance: float = 0.5


class PgHybrid(PgVector, PostgresFTS):
    """Full-text + pgvector candidates fused by RRF or convex in SQL, plus an importance prior."""

    description = "PostgreSQL hybrid in one query: tsvector + pgvector lists fused (RRF or convex) + importance prior"
    leg_name = "pg-hybrid"

    @dataclass(frozen=True)
    class Options(ServerOptions, VectorOptions, FtsOptions, HybridOptions):
        # Old spellings, still accepted (with a warning): fts5 and the `importance` fusion name these alike.
        renamed_options: ClassVar[Mapping[str, str]] = {"importance_prior": "importance_weight",
                                                        "importance_default": "default_importance"}

        def __post_init__(self) -> None:
            VectorOptions.__post_init__(self)
            if self.rrf_k < 0 or self.depth < 1:
                raise ValueError("rrf_k must be at least 0 and depth at least 1")
            if min(self.fts_weight, self.vector_weight) < 0 or max(self.fts_weight, self.vector_weight) <= 0:
                raise ValueError("fts_weight and vector_weight must be >= 0, and one of them > 0")
            if not 0.0 <= self.importance_weight <= 1.0:
                raise ValueError(f"importance_weight must be in [0, 1], got {self.importance_weight}")

    options: Any

    # --- index ----------------------------------------------------------------------------

    def _fts_columns(self) -> Any:
        from psycopg import sql

        vector = fts_vector_sql(self.options.config, [column for column, _ in FIELD_WEIGHTS], cast=False)
        return sql.SQL("tsv tsvector GENERATED ALWAYS AS ({}) STORED").format(vector)

    def _text_importance_weight(self) -> float:
        # pg-hybrid's importance_weight is the prior over the fused list, applied after fusion.
        return 0.0

    def _text_filter_sql(self) -> Any:
        """The full-text list sees the rows the vector list sees (hidden rows, the where condition)."""
        from psycopg import sql

        parts = []
        if self.created and self.options.hidden_fraction > 0:
            parts.append(sql.SQL(" AND NOT hidden"))
        if self.options.where:
            parts.append(sql.SQL(" AND (" + self.options.where + ")"))
        return sql.SQL("").join(parts)

    def build_index(self, corpus: Corpus) -> None:
        PgVector.build_index(self, corpus)
        from psycopg import sql

        options = self.options
        if self.created:
            self._execute(sql.SQL("CREATE INDEX ON {} USING GIN (tsv)").format(self._identifier()))
            self._execute(sql.SQL("ANALYZE {}").format(self._identifier()))
        else:
            self._require_columns([options.text_col] + [
                column for column in (options.category_col, options.tags_col, options.keywords_col,
                                      options.importance_col, options.tsvector_col) if column
            ])

    # --- the query ------------------------------------------------------------------------

    def hybrid_sql(self) -> Any:
        """The one statement: both candidate lists, their ranks, the fusion, the prior, the top k."""
        from psycopg import sql

        options = self.options
        lists = []
        if options.fts_weight > 0:
            lists.append(("fts", self.candidates_sql(), options.fts_weight))
        if options.vector_weight > 0:
            lists.append(("vec", self.vector_candidates_sql(), options.vector_weight))
        ctes = []
        parts = []
        for name, statement, weight in lists:
            ctes.append(sql.SQL("{name} AS ({statement}), {ranked} AS (SELECT doc, score, "
                                "row_number() OVER (ORDER BY " + ORDER + ") AS rank, "
                                "min(score) OVER () AS low, max(score) OVER () AS high FROM {name})").format(
                name=sql.Identifier(name), statement=statement, ranked=sql.Identifier(name + "_ranked")))
            if options.fusion == "rrf":
                part = sql.SQL("{w}::float8 / ({c} + rank)").format(w=sql.Literal(weight), c=sql.Literal(options.rrf_k))
            else:
                part = sql.SQL("{w}::float8 * CASE WHEN high = low THEN 1.0::float8 "
                               "ELSE (score - low) / (high - low) END").format(w=sql.Literal(weight))
            parts.append(sql.SQL("SELECT doc, {part} AS part FROM {ranked}").format(
                part=part, ranked=sql.Identifier(name + "_ranked")))
        fused = sql.SQL(
            "fused AS (SELECT doc, score FROM (SELECT doc, sum(part) AS score FROM ({parts}) AS parts "
            "GROUP BY doc) AS summed ORDER BY " + ORDER + " LIMIT %(k)s)"
        ).format(parts=sql.SQL(" UNION ALL ").join(parts))
        prior = options.importance_weight
        final: Any
        if prior > 0:
            identifier = sql.SQL("id") if self.created else sql.SQL("{}::text").format(sql.Identifier(options.id_col))
            importance = sql.SQL("importance") if self.created else (
                sql.SQL("{}::double precision").format(sql.Identifier(options.importance_col))
                if options.importance_col else sql.SQL("NULL::double precision"))
            final = sql.SQL(
                ", scaled AS (SELECT doc, score, min(score) OVER () AS low, max(score) OVER () AS high FROM fused), "
                "blended AS (SELECT s.doc, (1.0::float8 - {w}::float8) * CASE WHEN s.high = s.low THEN 1.0::float8 "
                "ELSE (s.score - s.low) / (s.high - s.low) END + {w}::float8 * coalesce(m.importance, {default}::float8) "
                "AS score FROM scaled s LEFT JOIN (SELECT {id} AS doc, {importance} AS importance FROM {table}) m "
                "ON m.doc = s.doc) SELECT doc, score FROM blended ORDER BY " + ORDER + " LIMIT %(final_k)s"
            ).format(w=sql.Literal(prior), default=sql.Literal(options.default_importance), id=identifier,
                     importance=importance, table=self._identifier())
        else:
            final = sql.SQL(" SELECT doc, score FROM fused ORDER BY " + ORDER + " LIMIT %(final_k)s")
        return sql.SQL("WITH {ctes}, {fused}{final}").format(ctes=sql.SQL(", ").join(ctes), fused=fused, final=final)

    # --- search ---------------------------------------------------------------------------

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        results: list[list[Hit]] = [[] for _ in queries]
        wanted, vectors = self._embed(queries)
        if k < 1 or not wanted:
            return results
        statement = self.hybrid_sql()
        depth = max(self.options.depth, k)
        for i, vector in zip(wanted, vectors, strict=True):
            text = queries[i].replace("\x00", " ")
            params = {**self.query_params(text, depth), **self._params(vector, depth), "final_k": int(k)}
            rows = self._search_rows(statement, params)
            results[i] = sort_hits([Hit(str(doc), float(score)) for doc, score in rows])
        return results

    def index_stats(self) -> dict[str, Any]:
        stats = PgVector.index_stats(self)
        options = self.options
        stats.update({"fusion": options.fusion, "depth": options.depth, "fts_weight": options.fts_weight,
                      "vector_weight": options.vector_weight, "importance_weight": options.importance_weight,
                      "config": options.config, "parser": options.parser})
        return stats
