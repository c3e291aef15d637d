"""The `fts5` retriever: SQLite FTS5 ranking (`mode=bm25`) or a memory store's search (`production`)."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from recall_kit.plugin import Corpus, Hit, Retriever, sort_hits
from recall_kit_fts5.database import (
    COLUMNS,
    TOKENIZE,
    fill,
    fts5_unavailable,
    index_key,
    open_on_disk,
)
from recall_kit_fts5.query import query_words, quote_phrase

if TYPE_CHECKING:
    from recall_kit_fts5.ranking import Fts5Statistics

# The LIKE fallback scans every row once per word; it looks at the first this many distinct words.
LIKE_MAX_WORDS = 32
# Words whose tokenization has been checked, kept until this many, then forgotten.
_PROBE_CACHE_SIZE = 100_000
# CTE materialization hints exist from SQLite 3.35.
_MATERIALIZED = "MATERIALIZED" if sqlite3.sqlite_version_info >= (3, 35, 0) else ""


class FTS5Retriever(Retriever):
    """SQLite FTS5 over content, category, tags and expanded keywords.

    `mode=bm25` ORs the query's words and ranks by FTS5's bm25() alone (per-column weights).
    `mode=production` does what a typical memory store does: AND of the words first, OR only if
    AND finds nothing, ranked by `bm25_weight * (min-max scaled -bm25()) + importance_weight *
    importance`, with a LIKE scan when FTS5 raises. Scores are higher-is-better.
    """

    description = "SQLite FTS5: bm25() ranking, or a memory store's AND-then-OR + importance search"
    index_settings = frozenset({"columns"})

    @dataclass(frozen=True)
    class Options:
        #: bm25 (OR of words, bm25() only) or production (AND then OR, bm25 + importance blend).
        mode: Literal["bm25", "production"] = "bm25"
        #: FTS5 tokenizer: unicode61, porter (porter over unicode61) or trigram (substrings).
        tokenizer: Literal["unicode61", "porter", "trigram"] = "unicode61"
        #: Indexed columns, among content, category, tags, keywords (expanded_keywords).
        columns: tuple[str, ...] = COLUMNS
        #: bm25() column weights (FTS5's default is 1 each).
        content_weight: float = 1.0
        category_weight: float = 1.0
        tags_weight: float = 1.0
        keywords_weight: float = 1.0
        #: production: weight of -bm25() min-max scaled to [0, 1] over the candidates.
        bm25_weight: float = 0.7
        #: production: weight of the memory's importance (used as stored, expected in [0, 1]).
        importance_weight: float = 0.3
        #: production: importance of a memory that has none.
        default_importance: float = 0.5
        #: production: re-rank only the this-many best bm25() matches (None: every match).
        candidates: int | None = None
        #: Keep the index in this SQLite file and reuse it while corpus, tokenizer and columns match.
        path: str | None = None
        #: mode=bm25: where the bm25() ranking is computed: numpy (FTS5's own statistics read once
        #: when the index is built or opened; the same ids, order and scores as SQLite's) or sqlite.
        ranking: Literal["numpy", "sqlite"] = "numpy"

        def __post_init__(self) -> None:
            if not self.columns:
                raise ValueError("columns must name at least one of " + ", ".join(COLUMNS))
            unknown = [column for column in self.columns if column not in COLUMNS]
            if unknown:
                raise ValueError(
                    f"unknown column {unknown[0]!r}; columns are among {', '.join(COLUMNS)}"
                )
            if len(set(self.columns)) != len(self.columns):
                raise ValueError("a column is named twice in columns")
            for name in ("content_weight", "category_weight", "tags_weight", "keywords_weight",
                         "bm25_weight", "importance_weight", "default_importance"):
                value = getattr(self, name)
                if not math.isfinite(value) or value < 0:
                    raise ValueError(f"{name} must be a finite number >= 0")
            if self.candidates is not None and self.candidates < 1:
                raise ValueError("candidates must be at least 1 (or none for every match)")

    options: FTS5Retriever.Options

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._connection: sqlite3.Connection | None = None
        self._probe: sqlite3.Connection | None = None
        self._probe_cache: dict[str, tuple[str, ...]] = {}
        self._statistics: Fts5Statistics | None = None
        self._rows = 0
        self._reused: bool | None = None

    # -- building ------------------------------------------------------------------------------

    def build_index(self, corpus: Corpus) -> None:
        self.close()
        options = self.options
        self._probe = self._open_probe()
        key = index_key(corpus.fingerprint, options.tokenizer, options.columns)
        if options.path:
            self._connection, self._reused = open_on_disk(
                Path(options.path).expanduser(), corpus, options.tokenizer, options.columns, key
            )
        else:
            self._connection = sqlite3.connect(":memory:")
            fill(self._connection, corpus, options.tokenizer, options.columns, key)
        self._rows = int(self._connection.execute("SELECT count(*) FROM memories").fetchone()[0])
        # Trigram turns every word of three or more characters into a phrase of several tokens,
        # which only SQLite ranks; the statistics would never be used.
        if options.mode == "bm25" and options.ranking == "numpy" and options.tokenizer != "trigram":
            from recall_kit_fts5.ranking import Fts5Statistics

            self._statistics = Fts5Statistics.load(self._connection, "memories_fts", "memories",
                                                   options.columns, self._weights())

    def _open_probe(self) -> sqlite3.Connection:
        """A scratch FTS5 table with the same tokenizer, to see which words yield tokens.

        It doubles as the check that this Python's SQLite has FTS5 and the tokenizer.
        """
        probe = sqlite3.connect(":memory:")
        try:
            probe.execute(
                f"CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='{TOKENIZE[self.options.tokenizer]}')"
            )
            probe.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, 'instance')")
        except sqlite3.OperationalError as error:
            probe.close()
            raise fts5_unavailable(error, self.options.tokenizer) from None
        return probe

    # -- queries -------------------------------------------------------------------------------

    def phrases(self, query: str) -> list[str]:
        """The query as quoted FTS5 strings, one per word, dropping words the tokenizer empties.

        A word such as "ab" under the trigram tokenizer, or a letter SQLite's Unicode tables do
        not know, yields no token; as an FTS5 string it would match nothing and, ANDed, would
        empty the result, so it is left out.
        """
        return [quote_phrase(word) for word, _ in self._phrase_tokens(query)]

    def _phrase_tokens(self, query: str) -> list[tuple[str, tuple[str, ...]]]:
        """The query's words that yield tokens, each with its tokens, in query order."""
        words = query_words(query)
        if not words:
            return []
        tokens = self._tokenizes(words)
        return [(word, tokens[word]) for word in words if tokens[word]]

    def _tokenizes(self, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Each word's tokens under the tokenizer, in order (empty: it yields none)."""
        cache = self._probe_cache
        unknown = sorted({word for word in words if word not in cache})
        if unknown:
            probe = self._require(self._probe)
            if len(cache) + len(unknown) > _PROBE_CACHE_SIZE:
                cache.clear()
            with probe:
                probe.executemany("INSERT INTO probe (rowid, x) VALUES (?, ?)",
                                  list(enumerate(unknown, start=1)))
                found: dict[int, list[tuple[int, str]]] = {}
                for rowid, offset, term in probe.execute("SELECT doc, offset, term FROM probe_terms"):
                    found.setdefault(rowid, []).append((offset, term))
                probe.execute("DELETE FROM probe")
            for rowid, word in enumerate(unknown, start=1):
                cache[word] = tuple(term for _, term in sorted(found.get(rowid, ())))
        return {word: cache[word] for word in words}

    def _weights(self) -> list[float]:
        options = self.options
        by_column = {"content": options.content_weight, "category": options.category_weight,
                     "tags": options.tags_weight, "keywords": options.keywords_weight}
        return [by_column[column] for column in options.columns]

    def search(self, query: str, k: int) -> list[Hit]:
        connection = self._require(self._connection)
        if k <= 0:
            return []
        words = self._phrase_tokens(query)
        if not words:
            return []
        statistics = self._statistics
        if statistics is not None and all(len(tokens) == 1 for _, tokens in words):
            return sort_hits([Hit(doc_id, score) for doc_id, score
                              in statistics.top([tokens[0] for _, tokens in words], k)])
        phrases = [quote_phrase(word) for word, _ in words]
        if self.options.mode == "bm25":
            return self._search_bm25(connection, phrases, k)
        return self._search_production(connection, query, phrases, k)

    def _search_bm25(self, connection: sqlite3.Connection, phrases: list[str], k: int) -> list[Hit]:
        weights = self._weights()
        marks = ", ".join("?" for _ in weights)
        rows = connection.execute(
            f"SELECT m.doc_id, -bm25(memories_fts, {marks}) AS score"
            " FROM memories_fts JOIN memories AS m ON m.rowid = memories_fts.rowid"
            " WHERE memories_fts MATCH ? ORDER BY score DESC, m.doc_id DESC LIMIT ?",
            (*weights, " OR ".join(phrases), k),
        ).fetchall()
        return sort_hits([Hit(doc_id, float(score)) for doc_id, score in rows])

    def _search_production(self, connection: sqlite3.Connection, query: str,
                           phrases: list[str], k: int) -> list[Hit]:
        try:
            hits = self._blend(connection, " AND ".join(phrases), k)
            if not hits and len(set(phrases)) > 1:
                hits = self._blend(connection, " OR ".join(phrases), k)
            return hits
        except sqlite3.DatabaseError:
            # What a memory store does when its FTS query fails: a plain substring scan.
            return self._like(connection, query_words(query), k)

    def _blend(self, connection: sqlite3.Connection, expression: str, k: int) -> list[Hit]:
        """Matches of `expression`, scored bm25_weight * scaled(-bm25) + importance_weight * imp.

        scaled(s) = (s - min) / (max - min) over the candidates (the matches, or the best
        `candidates` of them by bm25()), so the best match scores 1 and the worst 0; when every
        candidate has the same -bm25() (one match, say) each scales to 1.
        """
        options = self.options
        weights = self._weights()
        marks = ", ".join("?" for _ in weights)
        limit = options.candidates if options.candidates is not None else -1
        rows = connection.execute(
            f"""
            WITH candidates AS {_MATERIALIZED} (
                SELECT m.doc_id AS doc_id, -bm25(memories_fts, {marks}) AS relevance,
                       COALESCE(m.importance, ?) AS importance
                FROM memories_fts JOIN memories AS m ON m.rowid = memories_fts.rowid
                WHERE memories_fts MATCH ?
                ORDER BY relevance DESC, doc_id DESC LIMIT ?
            ),
            bounds AS (SELECT min(relevance) AS low, max(relevance) AS high FROM candidates)
            SELECT doc_id,
                   ? * (CASE WHEN high > low THEN (relevance - low) / (high - low) ELSE 1.0 END)
                   + ? * importance AS score
            FROM candidates, bounds
            ORDER BY score DESC, doc_id DESC LIMIT ?
            """,
            (*weights, options.default_importance, expression, limit,
             options.bm25_weight, options.importance_weight, k),
        ).fetchall()
        return sort_hits([Hit(doc_id, float(score)) for doc_id, score in rows])

    def _like(self, connection: sqlite3.Connection, words: list[str], k: int) -> list[Hit]:
        """The LIKE fallback: rows containing any of the words (substring, ASCII case-insensitive).

        score = bm25_weight * (words found / words searched) + importance_weight * importance,
        over the first LIKE_MAX_WORDS distinct words of the query, in the indexed columns.
        """
        options = self.options
        distinct = list(dict.fromkeys(word.lower() for word in words))[:LIKE_MAX_WORDS]
        if not distinct:
            return []
        parameters: dict[str, Any] = {
            "bm25_weight": options.bm25_weight, "importance_weight": options.importance_weight,
            "default_importance": options.default_importance, "words": len(distinct), "k": k,
        }
        found = []
        for index, word in enumerate(distinct):
            escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            parameters[f"w{index}"] = f"%{escaped}%"
            inside = " OR ".join(f"{column} LIKE :w{index} ESCAPE '\\'" for column in options.columns)
            found.append(f"(CASE WHEN {inside} THEN 1 ELSE 0 END)")
        matched = " + ".join(found)
        rows = connection.execute(
            f"""
            SELECT doc_id, :bm25_weight * ({matched}) / CAST(:words AS REAL)
                   + :importance_weight * COALESCE(importance, :default_importance) AS score
            FROM memories WHERE ({matched}) > 0
            ORDER BY score DESC, doc_id DESC LIMIT :k
            """,
            parameters,
        ).fetchall()
        return sort_hits([Hit(doc_id, float(score)) for doc_id, score in rows])

    # -- reporting -----------------------------------------------------------------------------

    def index_size_bytes(self) -> int | None:
        if self._connection is None:
            return None
        page_count = self._connection.execute("PRAGMA page_count").fetchone()[0]
        page_size = self._connection.execute("PRAGMA page_size").fetchone()[0]
        return int(page_count) * int(page_size)

    def index_stats(self) -> dict[str, Any]:
        if self._connection is None:
            return {}
        stats: dict[str, Any] = {
            "tokenizer": self.options.tokenizer,
            "mode": self.options.mode,
            "rows": self._rows,
            "columns": len(self.options.columns),
        }
        if self._statistics is not None:
            stats["ranking_bytes"] = self._statistics.nbytes()
        if self._reused is not None:
            stats["reused_from_disk"] = self._reused
        return stats

    def close(self) -> None:
        for connection in (self._connection, self._probe):
            if connection is not None:
                connection.close()
        self._connection = None
        self._probe = None
        self._probe_cache = {}
        self._statistics = None
        self._reused = None

    @staticmethod
    def _require(connection: sqlite3.Connection | None) -> sqlite3.Connection:
        if connection is None:
            raise RuntimeError("build_index() must be called before search()")
        return connection
