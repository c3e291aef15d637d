"""FTS5's `bm25()` ranking computed in numpy from FTS5's own statistics (`ranking=numpy`).

SQLite's `ORDER BY -bm25(...) DESC LIMIT k` calls `bm25()` once for every row that matches any
query word and sorts them all: a word such as "the" matches nearly every memory, so one query
costs milliseconds at a few thousand memories and a second at a million. This module reads,
once, what `bm25()` reads for every row, from the FTS5 index itself, and ranks with the same
float operations in the same order, so the ids, their order and the scores are FTS5's, bit for
bit (`tests/test_fts5_ranking.py` checks it against SQLite over many queries and weights):

* the row count N and the total token count (FTS5's "averages" record, `memories_fts_data`
  id 1), hence `avgdl = total / N`;
* every row's size D in tokens over all indexed columns (`memories_fts_docsize`);
* for every term, the rows that hold it and, per row, the instances per column (the
  `fts5vocab` `instance` view of the index).

fts5_aux.c's bm25, for a query of phrases p (one per query word; a word repeated is two):

    idf(p)   = log((N - n(p) + 0.5) / (n(p) + 0.5)), 1e-6 where that is <= 0   (n(p): rows matching p)
    f(p, r)  = sum of the column weights over p's instances in row r, in column order
    score(r) = sum over p, in query order, of idf(p) * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))

with k1 = 1.2 and b = 0.75; `bm25()` returns -score and the retriever's score is -bm25().
Only phrases of one token are ranked here; a query with a word that tokenizes into several tokens
(trigram, or a word the tokenizer splits) is left to SQLite (`Fts5Statistics.covers`).
"""

from __future__ import annotations

import math
import sqlite3
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

#: fts5_aux.c's bm25 constants.
K1 = 1.2
B = 0.75
#: fts5_aux.c's floor for a non-positive idf.
IDF_FLOOR = 1e-6


def read_varint(blob: bytes, start: int) -> tuple[int, int]:
    """SQLite's varint at `blob[start:]` (big-endian 7-bit groups, a 9th byte of 8 bits): (value, next)."""
    value = 0
    for index in range(start, min(start + 8, len(blob))):
        byte = blob[index]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, index + 1
    if start + 8 >= len(blob):
        raise ValueError("truncated varint")
    return (value << 8) | blob[start + 8], start + 9


def read_varints(blob: bytes) -> list[int]:
    """Every varint in `blob`, in order."""
    values: list[int] = []
    position = 0
    while position < len(blob):
        value, position = read_varint(blob, position)
        values.append(value)
    return values


class Fts5Statistics:
    """What FTS5's `bm25()` reads, for every row and term of one FTS5 table, and the ranking.

    Rows are numbered 0..N-1 in rowid order. Postings are kept as one CSR: term i's rows are
    `rows[starts[i]:starts[i + 1]]`, with their weighted frequencies in `frequencies`.
    """

    def __init__(self, doc_ids: list[str], lengths: np.ndarray, total_tokens: int,
                 terms: dict[str, int], starts: np.ndarray, rows: np.ndarray,
                 frequencies: np.ndarray) -> None:
        self.doc_ids = doc_ids
        self.row_count = len(doc_ids)
        self.avgdl = float(total_tokens) / float(self.row_count) if self.row_count else 0.0
        # k1 * (1 - b + b * D / avgdl), with fts5_aux.c's operations in its order, once per row.
        # (avgdl is 0 only when no row has a token: then no row matches and it is never read.)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.length_factor = K1 * ((1 - B) + (B * lengths.astype(np.float64)) / self.avgdl)
        self.terms = terms
        self.starts = starts
        self.rows = rows
        self.frequencies = frequencies
        # Every term's idf, as bm25() computes it for a phrase of that one term.
        self.idf = [_idf(self.row_count, int(hits)) for hits in np.diff(starts)]
        # doc_id DESC breaks ties as SQLite's BINARY collation does: by the UTF-8 bytes.
        order = sorted(range(len(doc_ids)), key=lambda row: doc_ids[row].encode("utf-8", "surrogatepass"))
        self.id_rank = np.empty(len(doc_ids), dtype=np.int64)
        self.id_rank[order] = np.arange(len(doc_ids))

    @classmethod
    def load(cls, connection: sqlite3.Connection, table: str, content: str, columns: Sequence[str],
             weights: Sequence[float]) -> Fts5Statistics | None:
        """Read the statistics of FTS5 table `table` (external content in `content`, whose rows
        give `doc_id`). None when the index's records disagree with each other (then SQLite
        ranks: it is the source of truth, and `verify` judges a persisted index)."""
        rowids: list[int] = []
        sizes: list[int] = []
        for rowid, blob in connection.execute(f"SELECT id, sz FROM {table}_docsize ORDER BY id"):
            rowids.append(int(rowid))
            sizes.append(sum(read_varints(bytes(blob))))
        averages = connection.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
        if averages is None:
            if rowids:
                return None
            totals = [0]
        else:
            totals = read_varints(bytes(averages[0]))
        row_count, total_tokens = totals[0], sum(totals[1:])
        if row_count != len(rowids) or total_tokens != sum(sizes):
            return None
        ids = dict(connection.execute(f"SELECT rowid, doc_id FROM {content}"))
        if any(rowid not in ids for rowid in rowids):
            return None
        doc_ids = [str(ids[rowid]) for rowid in rowids]
        position = {rowid: row for row, rowid in enumerate(rowids)}
        column_index = {name: index for index, name in enumerate(columns)}
        terms, starts, posting_rows, frequencies = _postings(
            connection, table, position, column_index, [float(weight) for weight in weights])
        return cls(doc_ids, np.asarray(sizes, dtype=np.int64), total_tokens, terms, starts,
                   posting_rows, frequencies)

    def nbytes(self) -> int:
        """The arrays' size in bytes (the term dictionary and ids not counted)."""
        return int(sum(part.nbytes for part in (self.length_factor, self.starts, self.rows,
                                                  self.frequencies, self.id_rank)))

    def top(self, tokens: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The best `k` rows for the phrases `tokens` (one token each, in query order) as
        (doc_id, -bm25()) pairs, ordered as `ORDER BY -bm25() DESC, doc_id DESC LIMIT k`."""
        scores = np.zeros(self.row_count)
        matched = np.zeros(self.row_count, dtype=bool)
        factor = self.length_factor
        k1_plus_1 = K1 + 1.0
        for token in tokens:
            term = self.terms.get(token)
            if term is None:  # matches no row: every row's frequency is 0, so its part is 0
                continue
            start, end = int(self.starts[term]), int(self.starts[term + 1])
            rows = self.rows[start:end]
            frequency = self.frequencies[start:end]
            scores[rows] += self.idf[term] * ((frequency * k1_plus_1) / (frequency + factor[rows]))
            matched[rows] = True
        candidates = np.flatnonzero(matched)
        if k <= 0 or not len(candidates):
            return []
        values = scores[candidates]
        if len(candidates) > k:
            kth = np.partition(values, len(values) - k)[len(values) - k]
            keep = values >= kth  # every row tied with the k-th, then ids decide
            candidates, values = candidates[keep], values[keep]
        order = np.lexsort((-self.id_rank[candidates], -values))[:k]
        return [(self.doc_ids[candidates[i]], float(values[i])) for i in order]


def _idf(rows: int, hits: int) -> float:
    """fts5_aux.c's idf of a phrase that `hits` of `rows` rows match (int64 arithmetic first)."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else IDF_FLOOR


def _postings(connection: sqlite3.Connection, table: str, position: dict[int, int],
              column_index: dict[str, int], weights: list[float]) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]:
    """Every term's rows and weighted frequencies, from the `fts5vocab` instance view.

    fts5vocab lists instances by term, then row, then column, then offset; a row's frequency is
    the weights of its instances added one at a time in that order, as bm25() adds them."""
    vocabulary = f"temp.{table}_ranking_instances"
    connection.execute(f"DROP TABLE IF EXISTS {vocabulary}")
    connection.execute(f"CREATE VIRTUAL TABLE {vocabulary} USING fts5vocab(main, {table}, 'instance')")
    unit = all(weight == 1.0 for weight in weights)
    terms: dict[str, int] = {}
    # Typed arrays, not lists: 4 or 8 bytes an entry (a list of int objects is ~5x that).
    starts = array("q")
    rows = array("i")
    frequencies = array("d")
    try:
        last_term: Any = None
        last_row = -1
        frequency = 0.0
        cursor = connection.execute(f"SELECT term, doc, col FROM {vocabulary}")
        while True:
            batch = cursor.fetchmany(65536)
            if not batch:
                break
            for term, rowid, column in batch:
                row = position[rowid]
                if term != last_term:
                    if last_row >= 0:
                        frequencies.append(frequency)
                    if term in terms:  # the view is in term order; anything else is not FTS5's
                        raise ValueError("fts5vocab rows out of term order")
                    terms[term] = len(terms)
                    starts.append(len(rows))
                    rows.append(row)
                    frequency = 0.0
                    last_term, last_row = term, row
                elif row != last_row:
                    frequencies.append(frequency)
                    rows.append(row)
                    frequency = 0.0
                    last_row = row
                frequency += 1.0 if unit else weights[column_index[column]]
        if last_row >= 0:
            frequencies.append(frequency)
    finally:
        connection.execute(f"DROP TABLE IF EXISTS {vocabulary}")
    starts.append(len(rows))
    return (terms, np.frombuffer(starts, dtype=np.int64), np.frombuffer(rows, dtype=np.int32),
            np.frombuffer(frequencies, dtype=np.float64))
