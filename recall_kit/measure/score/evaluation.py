"""Scoring: rankings joined with qrels, per-query values, their means; TREC files scored.

Metric names (parsing, aliases, trec_eval's sets) live in `recall_kit.measure.score.metric_names`;
the public ones are re-exported here for callers that import them from this module.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit.errors import OptionError
from recall_kit.measure.score.metric_names import (
    MAX_CUTOFF,
    TREC_EVAL_SETS,
    MetricSpec,
    canonical_metric_name,
    metric_aliases,
    resolve_metrics,
    trec_eval_names_missing,
)
from recall_kit.measure.score.parallel import in_threads
from recall_kit.measure.score.trec import TrecTable
from recall_kit.types import TIE_PRECISIONS, Hit, JudgedRankings, Qrels, sort_hits


def _first_repeat(ranking: Sequence[str]) -> str:
    seen: set[str] = set()
    for doc in ranking:
        if doc in seen:
            return doc
        seen.add(doc)
    raise ValueError("no repeated document")


def judge_rankings(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str]],
    qrels: Qrels,
    depth: int | None = None,
    complete: bool = False,
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> JudgedRankings:
    """Join rankings with relevance judgments into the dense arrays the metrics read.

    `rankings[i]` is query `query_ids[i]`'s ranking as document ids (strings), already in final
    rank order (trec_eval's order for a run: see `recall_kit.types.sort_hits`); it is cut at
    `depth` when one is given. A query missing from `qrels` is left out, as trec_eval and
    pytrec_eval leave it out (nothing says what it should have found): the returned `query_ids`
    say which queries were kept. With `complete=True` it is kept with no judgments, so every
    metric scores it 0 (a query with judgments but no relevant document is always kept). A
    document id twice in one ranking raises `ValueError`, as trec_eval refuses duplicates.

    `relevance_level` (trec_eval ``-l``): grades >= it count as relevant for the binary measures
    (recall, precision, map, ...); graded measures (ndcg, err) use the grades themselves.
    `judged_only` (trec_eval ``-J``): documents without a judgment (absent from the qrels, or with
    a negative grade: pooled but not judged) are removed from each ranking, after the `depth` cut,
    before anything is scored.
    """
    if len(query_ids) != len(rankings):
        raise ValueError(f"{len(query_ids)} query ids but {len(rankings)} rankings")
    check_relevance_level(relevance_level, error=ValueError)
    if depth is not None:
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        rankings = [ranking[:depth] for ranking in rankings]
    _refuse_repeated_documents(query_ids, rankings)
    if not complete and any(query_id not in qrels for query_id in query_ids):
        kept = [i for i, query_id in enumerate(query_ids) if query_id in qrels]
        query_ids = [query_ids[i] for i in kept]
        rankings = [rankings[i] for i in kept]

    empty: dict[str, int] = {}
    judgments = [qrels.get(query_id, empty) for query_id in query_ids]
    num_queries = len(query_ids)
    lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=num_queries)
    cells = _ranked_grades(judgments, rankings, int(lengths.sum()))
    if judged_only:
        cells, lengths = _judged_cells_only(cells, lengths)
    grades, judged, pooled = _dense_layout(cells, lengths)

    sizes = np.fromiter(map(len, judgments), dtype=np.int64, count=num_queries)
    all_grades = np.fromiter(
        chain.from_iterable(judged.values() for judged in judgments),
        dtype=np.int64,
        count=int(sizes.sum()),
    )
    owner = np.repeat(np.arange(num_queries), sizes)
    return _judged_rankings(query_ids, grades, judged, pooled, lengths, all_grades, owner, relevance_level)


def _refuse_repeated_documents(query_ids: Sequence[str], rankings: Sequence[Sequence[str]]) -> None:
    """`ValueError` naming the first ranking that holds a document twice (trec_eval refuses them)."""
    num_queries = len(query_ids)
    lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=num_queries)
    # One set per ranking, built in C: cheaper than it looks.
    distinct = np.fromiter(map(len, map(set, rankings)), dtype=np.int64, count=num_queries)
    if int(lengths.sum()) and (distinct != lengths).any():
        row = int(np.flatnonzero(distinct != lengths)[0])
        repeated = _first_repeat(rankings[row])
        raise ValueError(f"ranking of query {query_ids[row]!r} holds document {repeated!r} twice")


def _ranked_grades(judgments: Sequence[Mapping[str, int]], rankings: Sequence[Sequence[str]], total: int) -> np.ndarray:
    """Every ranked cell's grade, rankings concatenated, NaN where the document is not in the qrels.

    dict.get runs in C through map(), so the only per-query Python work is building one iterator.
    """
    nan = float("nan")
    return np.fromiter(
        chain.from_iterable(
            map(judged.get, ranking, repeat(nan)) for judged, ranking in zip(judgments, rankings)
        ),
        dtype=np.float64,
        count=total,
    )


def _judged_cells_only(cells: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """trec_eval -J: every document without a judgment dropped (NaN >= 0 is False), order kept.

    Returns the remaining cells and each ranking's new length.
    """
    keep = cells >= 0
    if keep.all():
        return cells, lengths
    num_queries = len(lengths)
    owner = np.repeat(np.arange(num_queries), lengths)
    return cells[keep], np.bincount(owner[keep], minlength=num_queries).astype(np.int64)


def _dense_layout(cells: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenated cell grades (NaN: not in the qrels, negative: pooled, not judged) laid out as
    (grades, judged, pooled) arrays of one row per ranking, zero/False-padded to the longest."""
    num_queries = len(lengths)
    total = int(lengths.sum())
    width = int(lengths.max()) if num_queries else 0
    pooled_cells = ~np.isnan(cells)
    judged_cells = cells >= 0
    grade_cells = np.where(judged_cells, cells, 0.0).astype(np.int32)
    grades = np.zeros((num_queries, width), dtype=np.int32)
    judged = np.zeros((num_queries, width), dtype=bool)
    pooled = np.zeros((num_queries, width), dtype=bool)
    if total == num_queries * width:
        grades[...] = grade_cells.reshape(num_queries, width)
        judged[...] = judged_cells.reshape(num_queries, width)
        pooled[...] = pooled_cells.reshape(num_queries, width)
    else:
        filled = np.arange(width) < lengths[:, None]
        grades[filled] = grade_cells
        judged[filled] = judged_cells
        pooled[filled] = pooled_cells
    return grades, judged, pooled


def _judged_rankings(
    query_ids: Sequence[str],
    grades: np.ndarray,
    judged: np.ndarray,
    pooled: np.ndarray,
    lengths: np.ndarray,
    all_grades: np.ndarray,
    owner: np.ndarray,
    relevance_level: int,
) -> JudgedRankings:
    """The `JudgedRankings` of laid-out rankings (one row per query of `query_ids`) and the qrels'
    grades (`all_grades[i]` a judgment of query row `owner[i]`): the one place both joins assemble it."""
    num_relevant, num_judged_nonrelevant, ideal_grades = _from_qrels(
        all_grades, owner, len(query_ids), relevance_level
    )
    return JudgedRankings(
        query_ids=list(query_ids),
        grades=grades,
        judged=judged,
        lengths=lengths,
        num_relevant=num_relevant,
        ideal_grades=ideal_grades,
        pooled=pooled,
        num_judged_nonrelevant=num_judged_nonrelevant,
        relevance_level=int(relevance_level),
    )


def check_relevance_level(level: int, error: type[Exception] = OptionError) -> int:
    """The relevance level (trec_eval ``-l``), checked: a whole number >= 1."""
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 1:
        raise error(f"relevance level must be a whole number >= 1 (trec_eval -l), got {level!r}")
    return int(level)


def _from_qrels(
    all_grades: np.ndarray, owner: np.ndarray, num_queries: int, relevance_level: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From every judgment's grade (query `owner[i]` for grade i): each query's number of relevant
    documents (grade >= `relevance_level`) and of judged non-relevant ones (0 <= grade < level),
    and its ideal ranking's gains: every grade >= 1, whatever the level (as trec_eval's ndcg),
    sorted descending, zero-padded."""
    num_relevant = np.bincount(owner[all_grades >= relevance_level], minlength=num_queries).astype(np.int64)
    nonrelevant = (all_grades >= 0) & (all_grades < relevance_level)
    num_judged_nonrelevant = np.bincount(owner[nonrelevant], minlength=num_queries).astype(np.int64)
    positive = all_grades >= 1
    pos_grades, pos_owner = all_grades[positive], owner[positive]
    num_positive = np.bincount(pos_owner, minlength=num_queries).astype(np.int64)
    order = np.lexsort((-pos_grades, pos_owner))
    pos_grades, pos_owner = pos_grades[order], pos_owner[order]
    starts = np.cumsum(num_positive) - num_positive
    ideal_grades = np.zeros((num_queries, int(num_positive.max()) if num_queries else 0), np.int32)
    ideal_grades[pos_owner, np.arange(len(pos_owner)) - starts[pos_owner]] = pos_grades
    return num_relevant, num_judged_nonrelevant, ideal_grades


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, each value's index among them) for a numpy bytes array.

    Byte order is strcmp's order, trec_eval's. Consecutive repeats (a query's lines) are folded
    first; short strings are packed into big-endian integers, which sort in the same order faster.
    """
    if len(values) == 0:
        return values, np.zeros(0, dtype=np.int64)
    change = np.empty(len(values), dtype=bool)
    change[0] = True
    np.not_equal(values[1:], values[:-1], out=change[1:])
    heads = int(np.count_nonzero(change))
    if heads * 4 < len(values):
        labels, inverse = np.unique(values[change], return_inverse=True)
        return labels, inverse.ravel()[np.cumsum(change) - 1]
    width = values.dtype.itemsize
    if width <= 8:
        packed = np.zeros((len(values), 8), dtype=np.uint8)
        packed[:, :width] = values.view(np.uint8).reshape(len(values), width)
        keys, inverse = np.unique(packed.view(">u8").ravel(), return_inverse=True)
        return keys.astype(">u8").view("S8"), inverse.ravel()
    labels, inverse = np.unique(values, return_inverse=True)
    return labels, inverse.ravel()


def _first_pair_repeat(pairs: np.ndarray) -> int | None:
    """Index into `pairs` of a value that occurs twice, or None."""
    ordered = np.sort(pairs)
    if not (ordered[1:] == ordered[:-1]).any():
        return None
    order = np.argsort(pairs, kind="stable")
    repeats = np.flatnonzero(pairs[order][1:] == pairs[order][:-1])
    return None if len(repeats) == 0 else int(order[repeats[0] + 1])


def _float32_order(scores: np.ndarray, query: np.ndarray, doc: np.ndarray, num_docs: int) -> np.ndarray:
    """Row order by query, then float32 score descending, then document code descending."""
    with np.errstate(over="ignore"):
        scores32 = scores.astype(np.float32) + np.float32(0.0)  # -0.0 ties with 0.0
    bits = scores32.view(np.uint32)
    ascending = np.where(bits >> 31 != 0, ~bits, bits | np.uint32(0x80000000))
    primary = (query.astype(np.uint64) << np.uint64(32)) | (~ascending).astype(np.uint64)
    # A run file is usually written in this order already: a stable sort then costs one pass.
    order = np.argsort(primary, kind="stable")
    tied = primary[order][1:] == primary[order][:-1]
    if tied.any():  # equal float32 scores: order each tied group by document id, descending
        group = np.zeros(len(scores), dtype=np.int64)
        np.cumsum(~tied, out=group[1:])
        order = order[np.argsort((group << 31) | (num_docs - 1 - doc[order]))]
    return order


def judge_tables(
    run: TrecTable,
    qrels: TrecTable,
    complete: bool = False,
    ties: str = "float32",
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
    depth: int | None = None,
) -> tuple[list[str], JudgedRankings]:
    """Join a run and qrels read as arrays (`recall_kit.measure.score.trec.read_run_table`) as trec_eval does.

    The vectorised twin of `judge_rankings` for whole TREC files: each query's lines are put in
    trec_eval's order (score descending, compared as float32, or as doubles with
    ``ties="float64"``; ties by document id descending), joined with
    the judgments, and laid out as `JudgedRankings`. Queries are those in both files (with
    `complete`, every qrels query), sorted by id. A document twice for one query, in the run or in
    the qrels, raises `ValueError` naming both ids. `relevance_level` and `judged_only` are
    trec_eval's ``-l`` and ``-J``, as in `judge_rankings`; `depth` is its ``-M``: only each
    query's first `depth` documents, in that order, are scored (cut before ``-J``, as trec_eval).
    """
    check_relevance_level(relevance_level, error=ValueError)
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1):
        raise ValueError(f"depth must be a whole number >= 1 (trec_eval -M), got {depth!r}")
    num_run = len(run.doc_ids)
    query_labels, query_codes = _factorize(np.concatenate([run.query_ids, qrels.query_ids]))
    num_queries = len(query_labels)
    run_query, judged_query = query_codes[:num_run], query_codes[num_run:]
    in_blocks = _order_in_blocks(run, qrels, run_query, judged_query, ties)
    if in_blocks is not None:
        order, found, cell_grades = in_blocks
        run_query = run_query[order]
        if depth is not None:  # trec_eval -M: each query's top `depth`, before -J
            keep = _top_of_each_query(run_query, depth)
            run_query, found, cell_grades = run_query[keep], found[keep], cell_grades[keep]
    else:
        run_query, found, cell_grades = _order_generally(run, qrels, run_query, judged_query, ties, depth)

    counts = np.bincount(run_query, minlength=num_queries)
    in_qrels = np.bincount(judged_query, minlength=num_queries) > 0
    selected = in_qrels if complete else in_qrels & (counts > 0)
    cell_judged = found & (cell_grades >= 0)  # a negative grade: pooled, not judged
    if judged_only:  # trec_eval -J: the unjudged leave the ranking; the query stays
        run_query, found, cell_grades = run_query[cell_judged], found[cell_judged], cell_grades[cell_judged]
        cell_judged = cell_judged[cell_judged]
        counts = np.bincount(run_query, minlength=num_queries)
    new_row = np.cumsum(selected) - 1
    lengths = counts[selected].astype(np.int64)
    grades, judged, pooled = _lay_out(run_query, selected, counts, lengths, found, cell_judged, cell_grades)

    judged_keep = selected[judged_query]
    kept_ids = [label.decode("utf-8") for label in query_labels[selected].tolist()]
    return kept_ids, _judged_rankings(
        kept_ids, grades, judged, pooled, lengths,
        qrels.values[judged_keep].astype(np.int64), new_row[judged_query[judged_keep]], relevance_level,
    )


def _lay_out(
    run_query: np.ndarray, selected: np.ndarray, counts: np.ndarray, lengths: np.ndarray,
    found: np.ndarray, cell_judged: np.ndarray, cell_grades: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ranked lines (grouped by query code, ascending, each query's in rank order) laid out one
    selected query per row: (grades, judged, pooled), each (queries x deepest ranking)."""
    num_run, num_selected = len(run_query), len(lengths)
    width = int(lengths.max()) if num_selected else 0
    keep = selected[run_query]
    if num_run == num_selected * width and keep.all():
        # Every query is scored and as deep as the deepest: the lines are the rectangle's cells, in order.
        shape = (num_selected, width)
        return (np.where(cell_judged, cell_grades, 0).astype(np.int32).reshape(shape),
                cell_judged.reshape(shape).copy(), found.reshape(shape).copy())
    new_row = np.cumsum(selected) - 1
    rank = np.arange(num_run) - (np.cumsum(counts) - counts)[run_query]
    cells = new_row[run_query[keep]] * width + rank[keep]
    grades = np.zeros((num_selected, width), dtype=np.int32)
    judged = np.zeros((num_selected, width), dtype=bool)
    pooled = np.zeros((num_selected, width), dtype=bool)
    grades.ravel()[cells] = np.where(cell_judged[keep], cell_grades[keep], 0)
    judged.ravel()[cells] = cell_judged[keep]
    pooled.ravel()[cells] = found[keep]
    return grades, judged, pooled


def _order_generally(
    run: TrecTable, qrels: TrecTable, run_query: np.ndarray, judged_query: np.ndarray, ties: str,
    depth: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`judge_tables`' general path (any line order, any id length): every run line in trec_eval's
    order, cut to each query's top `depth`, with whether each is judged and its grade. Returns the
    ordered lines' query codes, found flags and grades; a document twice raises ValueError."""
    num_run = len(run.doc_ids)
    doc_labels, doc_codes = _factorize(np.concatenate([run.doc_ids, qrels.doc_ids]))
    num_docs = max(len(doc_labels), 1)
    run_doc, judged_doc = doc_codes[:num_run], doc_codes[num_run:]
    run_pairs = run_query * num_docs + run_doc
    judged_pairs = judged_query * num_docs + judged_doc
    _refuse_repeated_pairs(run, qrels, run_pairs, judged_pairs)
    if ties == "float64":
        order = np.lexsort((num_docs - 1 - run_doc, -(run.values + 0.0), run_query))
    else:
        order = _float32_order(run.values, run_query, run_doc, num_docs)
    run_query, run_pairs = run_query[order], run_pairs[order]
    if depth is not None and num_run:  # trec_eval -M: each query's top `depth`, before -J
        keep = _top_of_each_query(run_query, depth)
        order, run_query, run_pairs = order[keep], run_query[keep], run_pairs[keep]
    found, cell_grades = _look_up_grades(run_pairs, run_doc[order], judged_pairs, judged_doc, qrels.values, num_docs)
    return run_query, found, cell_grades


def _packed(ids: np.ndarray) -> np.ndarray | None:
    """Byte strings of at most 8 bytes as native uint64 in the same (strcmp) order; None if longer."""
    width = ids.dtype.itemsize
    if width > 8:
        return None
    if width == 8:
        return ids.view(">u8").astype(np.uint64)
    packed = np.zeros((len(ids), 8), dtype=np.uint8)
    packed[:, :width] = ids.view(np.uint8).reshape(len(ids), width)
    return packed.view(">u8").ravel().astype(np.uint64)


def _order_in_blocks(
    run: TrecTable, qrels: TrecTable, run_query: np.ndarray, judged_query: np.ndarray, ties: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """trec_eval's order and each ranked row's judgment, sorting each query apart: a run whose
    queries each take one block of lines (as run files are written) and whose document ids fit
    in 8 bytes is laid out one query per row, and each row is sorted by document id descending,
    then (stably) by score descending: small sorts, where one sort of every line costs several
    times more. Returns (row order, found in the qrels, grade) or None (then `judge_tables`'s
    general path, which also names a repeated document, takes over).
    """
    num_run = len(run_query)
    run_keys, judged_keys = _packed(run.doc_ids), _packed(qrels.doc_ids)
    if num_run == 0 or run_keys is None or judged_keys is None:
        return None
    head = np.empty(num_run, dtype=bool)
    head[0] = True
    np.not_equal(run_query[1:], run_query[:-1], out=head[1:])
    starts = np.flatnonzero(head)
    block_query = run_query[starts]
    by_query = np.argsort(block_query)
    if len(starts) > 1 and not (block_query[by_query][1:] > block_query[by_query][:-1]).all():
        return None  # a query in two blocks
    lengths = np.diff(np.append(starts, num_run))
    width = int(lengths.max())
    if len(starts) * width > 2 * num_run + 4096:  # ragged: the rectangle would be mostly padding
        return None
    starts, lengths = starts[by_query], lengths[by_query]
    if ties == "float64":
        bits = (run.values + 0.0).view(np.uint64)  # -0.0 ties with 0.0
        descending = ~np.where(bits >> np.uint64(63) != 0, ~bits, bits | np.uint64(1 << 63))
    else:
        with np.errstate(over="ignore"):
            bits32 = (run.values.astype(np.float32) + np.float32(0.0)).view(np.uint32)
        descending = ~np.where(bits32 >> 31 != 0, ~bits32, bits32 | np.uint32(0x80000000))
    step = max(1, _CELLS_PER_STEP // width)  # queries at a time: the temporaries stay cache-sized
    pieces = in_threads(
        lambda first: _order_rows(run_keys, descending, starts[first:first + step], lengths[first:first + step], width),
        range(0, len(starts), step),
    )
    if any(piece is None for piece in pieces):
        return None  # a document twice for one query
    order: np.ndarray = np.concatenate(pieces)  # type: ignore[arg-type]
    return (order, *_grades_by_key(run_keys[order], run_query[order], judged_keys, judged_query, qrels.values))


#: Cells (query x rank) laid out at a time by `_order_in_blocks`.
_CELLS_PER_STEP = 1 << 18


def _order_rows(
    keys: np.ndarray, descending: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int
) -> np.ndarray | None:
    """The file rows of the query blocks at `starts` (`lengths` long) in trec_eval's order:
    one query per row of a rectangle, sorted by document key descending, then by score
    (`descending`: keys ascending as scores descend) stably; None if a query repeats a document."""
    total = int(lengths.sum())
    offsets = np.cumsum(lengths) - lengths
    column = np.arange(total) - np.repeat(offsets, lengths)
    source = np.repeat(starts, lengths) + column  # file row of each (query, column) cell
    cell = np.repeat(np.arange(len(starts)) * width, lengths) + column
    docs = np.zeros((len(starts), width), dtype=np.uint64)  # 0: padding, after every id
    docs.ravel()[cell] = keys[source]
    by_doc = np.argsort(~docs, axis=1)  # document id descending; ids are distinct within a query
    docs_sorted = np.take_along_axis(docs, by_doc, axis=1)
    if ((docs_sorted[:, 1:] == docs_sorted[:, :-1]) & (docs_sorted[:, 1:] != 0)).any():
        return None
    scores = np.full((len(starts), width), np.iinfo(descending.dtype).max, dtype=descending.dtype)
    scores.ravel()[cell] = descending[source]  # padding last
    if scores.dtype == np.uint32:  # one key: score descending, then the id's place descending
        doc_rank = np.empty(docs.shape, dtype=np.uint64)
        np.put_along_axis(doc_rank, by_doc, np.arange(width, dtype=np.uint64)[None, :], axis=1)
        columns = np.argsort((scores.astype(np.uint64) << np.uint64(32)) | doc_rank, axis=1)
    else:
        by_score = np.argsort(np.take_along_axis(scores, by_doc, axis=1), axis=1, kind="stable")
        columns = np.take_along_axis(by_doc, by_score, axis=1)
    filled = np.arange(width) < lengths[:, None]
    return (starts[:, None] + columns)[filled]


def _grades_by_key(
    keys: np.ndarray, query: np.ndarray, judged_keys: np.ndarray, judged_query: np.ndarray, grades: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each (document key, query) row: whether the qrels judge it, and its grade (else 0)."""
    judged_docs = np.sort(judged_keys)
    if len(judged_docs) > 1:
        judged_docs = judged_docs[np.append(True, judged_docs[1:] != judged_docs[:-1])]
    num_docs = max(len(judged_docs), 1)
    judged_pairs = judged_query * num_docs + np.searchsorted(judged_docs, judged_keys)
    if _first_pair_repeat(judged_pairs) is not None:
        raise ValueError("a document is judged twice for one query in the qrels")
    # Only rows whose hashed key is some judged document's are looked up: a filter of 2**23 slots.
    judged_hash = np.zeros(1 << 23, dtype=bool)
    judged_hash[_hashed(judged_docs)] = True
    by_pair = np.argsort(judged_pairs)
    sorted_pairs = judged_pairs[by_pair]

    def look_up(first: int) -> tuple[np.ndarray, np.ndarray]:  # (rows found, index into by_pair)
        part = keys[first:first + step]
        maybe = np.flatnonzero(judged_hash[_hashed(part)])
        needles = part[maybe]
        by_key = np.argsort(needles)  # sorted needles: the search walks the judged ids in order
        position = np.empty(len(maybe), dtype=np.int64)
        position[by_key] = np.searchsorted(judged_docs, needles[by_key])
        match = judged_docs[np.minimum(position, num_docs - 1)] == needles if len(judged_docs) else np.zeros(len(maybe), dtype=bool)
        rows = maybe[match] + first
        pairs = query[rows] * num_docs + position[match]
        at = np.searchsorted(sorted_pairs, pairs)
        hit = sorted_pairs[np.minimum(at, max(len(sorted_pairs) - 1, 0))] == pairs
        return rows[hit], at[hit]

    step = _CELLS_PER_STEP * 2
    parts = in_threads(look_up, range(0, len(keys), step))
    rows = np.concatenate([part[0] for part in parts] or [np.zeros(0, dtype=np.int64)])
    at = np.concatenate([part[1] for part in parts] or [np.zeros(0, dtype=np.int64)])
    found = np.zeros(len(keys), dtype=bool)
    found[rows] = True
    cell_grades = np.zeros(len(keys), dtype=np.int64)
    cell_grades[rows] = grades[by_pair[at]]
    return found, cell_grades


def _hashed(values: np.ndarray) -> np.ndarray:
    """Fibonacci hashing of uint64 keys into 2**23 slots: the product's top 23 bits."""
    return (values * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - 23)


def _refuse_repeated_pairs(run: TrecTable, qrels: TrecTable, run_pairs: np.ndarray, judged_pairs: np.ndarray) -> None:
    """`ValueError` naming a document twice for one query, in the qrels (checked first) or the run."""
    for pairs, which, query_ids, doc_ids in (
        (judged_pairs, "qrels", qrels.query_ids, qrels.doc_ids),
        (run_pairs, "run", run.query_ids, run.doc_ids),
    ):
        repeat = _first_pair_repeat(pairs)
        if repeat is not None:
            raise ValueError(
                f"document {doc_ids[repeat].decode()!r} appears twice for query "
                f"{query_ids[repeat].decode()!r} in the {which}"
            )


def _top_of_each_query(run_query: np.ndarray, depth: int) -> np.ndarray:
    """Mask of the rows (grouped by query, in rank order) among their query's first `depth`."""
    num_run = len(run_query)
    first = np.empty(num_run, dtype=bool)
    first[0] = True
    np.not_equal(run_query[1:], run_query[:-1], out=first[1:])
    positions = np.arange(num_run)
    return positions - np.maximum.accumulate(np.where(first, positions, 0)) < depth


def _look_up_grades(
    run_pairs: np.ndarray,
    run_doc: np.ndarray,
    judged_pairs: np.ndarray,
    judged_doc: np.ndarray,
    judged_grades: np.ndarray,
    num_docs: int,
) -> tuple[np.ndarray, np.ndarray]:
    """For each run row (its (query, document) pair code and document code): whether the qrels
    hold the pair, and its grade (0 where not found)."""
    num_run = len(run_pairs)
    judged_order = np.argsort(judged_pairs, kind="stable")
    sorted_pairs = judged_pairs[judged_order]
    sorted_grades = judged_grades[judged_order].astype(np.int64)
    # Look up only the cells whose document is judged for some query: usually a small share.
    judged_somewhere = np.zeros(num_docs, dtype=bool)
    judged_somewhere[judged_doc] = True
    candidates = np.flatnonzero(judged_somewhere[run_doc])
    position = np.searchsorted(sorted_pairs, run_pairs[candidates])
    hit = sorted_pairs[np.minimum(position, max(len(sorted_pairs) - 1, 0))] == run_pairs[candidates]
    found = np.zeros(num_run, dtype=bool)
    found[candidates[hit]] = True
    cell_grades = np.zeros(num_run, dtype=np.int64)
    cell_grades[candidates[hit]] = sorted_grades[position[hit]]
    return found, cell_grades


def metric_values(data: JudgedRankings, specs: Sequence[MetricSpec]) -> dict[str, np.ndarray]:
    """Per-query values (float64, one per query of `data`) by metric name, in `specs` order."""
    return {spec.name: spec.compute(data) for spec in specs}


def aggregate(
    values: dict[str, np.ndarray], strata: Sequence[str], totals: Collection[str] | Mapping[str, str] = ()
) -> dict[str, Any]:
    """Macro averages: over all queries, and per stratum (strata in order of first appearance).

    Returns ``{"overall": {name: mean, ..., "n": Q}, "strata": {stratum: {name: mean, ..., "n":
    count}}}`` with plain Python numbers. With no queries every mean is 0.0 and ``n`` is 0.
    `totals` names the metrics whose summary is not the arithmetic mean (see `summed_names`): a
    collection of names is summed (counts such as ``num_ret``, as trec_eval sums them); a mapping
    gives each name its `Metric.summary`, "sum" or "geometric" (``gm_map``: its per-query values
    are logs, as trec_eval's; the summary is exp of their mean, the geometric mean).
    """
    num_queries = len(strata)
    for name, array in values.items():
        if len(array) != num_queries:
            raise ValueError(f"{name!r} has {len(array)} values for {num_queries} queries")
    kinds = dict(totals) if isinstance(totals, Mapping) else dict.fromkeys(totals, "sum")
    labels, first_seen, inverse, counts = np.unique(
        np.array([str(stratum) for stratum in strata], dtype=str),
        return_index=True,
        return_inverse=True,
        return_counts=True,
    )
    by_appearance = np.argsort(first_seen, kind="stable")

    overall: dict[str, Any] = {}
    per_stratum: dict[str, dict[str, Any]] = {str(labels[i]): {} for i in by_appearance}
    for name, array in values.items():
        array = np.asarray(array, dtype=np.float64)
        kind = kinds.get(name, "mean")  # "geometric": the values are logs; exp of their mean
        summed = kind == "sum"
        if summed:
            overall[name] = float(array.sum())
        else:
            overall[name] = float(array.mean()) if num_queries else 0.0
        sums = np.bincount(inverse, weights=array, minlength=len(labels))
        for i in by_appearance:
            per_stratum[str(labels[i])][name] = float(sums[i] if summed else sums[i] / counts[i])
        if kind == "geometric":
            overall[name] = math.exp(overall[name]) if num_queries else 0.0
            for i in by_appearance:
                per_stratum[str(labels[i])][name] = math.exp(per_stratum[str(labels[i])][name])
    overall["n"] = num_queries
    for i in by_appearance:
        per_stratum[str(labels[i])]["n"] = int(counts[i])
    return {"overall": overall, "strata": per_stratum}


def summed_names(specs: Sequence[MetricSpec]) -> dict[str, str]:
    """The names among `specs` whose summary is not a mean, with it (`Metric.summary`: "sum" for
    counts, "geometric" for gm_map), for `aggregate`."""
    return {spec.name: spec.metric.summary for spec in specs if spec.metric.summary != "mean"}


def depth_warnings(specs: Sequence[MetricSpec], deepest: int, where: str) -> list[str]:
    """One sentence when a metric's cutoff lies past the deepest ranking of `where`.

    Such a metric counts only the documents that are there, so it equals the same metric at
    `deepest`: say so rather than let the two read as two measurements.
    """
    beyond = [spec.name for spec in specs if spec.rank_cutoff is not None and spec.rank_cutoff > deepest]
    if not beyond:
        return []
    return [
        f"{', '.join(beyond)}: cutoff past {where} ({deepest} documents); "
        f"{'it counts' if len(beyond) == 1 else 'they count'} only the documents there, "
        f"as at @{deepest}."
    ]


@dataclass
class RunScores:
    """One run's scores: the queries scored (sorted by id), per-query values, their means."""

    query_ids: list[str]
    values: dict[str, np.ndarray]
    overall: dict[str, Any]
    warnings: list[str]


def score_rankings(
    qrels: Qrels,
    rankings: Mapping[str, Sequence[str]],
    specs: Sequence[MetricSpec],
    complete: bool = False,
    where: str = "the run's deepest ranking",
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> RunScores:
    """Score ranked ids (best first, by query id) against `qrels`, as trec_eval does.

    By default only queries in both are scored (trec_eval's default); `complete=True` scores
    every qrels query, a query missing from `rankings` scoring as an empty ranking (trec_eval
    ``-c``). A query with no qrels is never scored (trec_eval skips it too). `relevance_level`
    and `judged_only` are trec_eval's ``-l`` and ``-J`` (see `judge_rankings`); counts such as
    num_ret are summed over queries, as trec_eval's "all" line does.
    """
    relevance_level = check_relevance_level(relevance_level)
    query_ids = sorted(qrels) if complete else sorted(set(qrels) & set(rankings))
    ranked = [list(rankings.get(query_id, ())) for query_id in query_ids]
    data = judge_rankings(query_ids, ranked, qrels, complete=True,
                          relevance_level=relevance_level, judged_only=judged_only)
    values = metric_values(data, specs)
    overall = aggregate(values, ["all"] * len(query_ids), summed_names(specs))["overall"]
    if judged_only:
        where += " once -J left only judged documents"
    deepest = int(data.lengths.max()) if len(query_ids) else 0
    warnings = depth_warnings(specs, deepest, where) if ranked else []
    return RunScores(query_ids, values, overall, warnings)


def score_run_files(
    qrels_path: Path,
    run_paths: Sequence[Path],
    metric_names: Sequence[str] | None,
    complete: bool = False,
    ties: str = "float32",
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
    depth: int | None = None,
) -> list[RunScores]:
    """Score TREC run files against one TREC qrels file, as trec_eval does (see `score_rankings`).

    Each ranking is in trec_eval's order: score descending, ties by document id descending, scores
    compared at float32 precision as trec_eval <= 9 and pytrec_eval do; ``ties="float64"``
    compares them as doubles, as trec_eval 10 does. `relevance_level` and `judged_only` are
    trec_eval's ``-l`` and ``-J`` (see `judge_rankings`), `depth` its ``-M`` (each query's first
    `depth` documents only); counts such as num_ret are summed over queries, as in trec_eval's
    "all" line. A run sharing no query with the qrels (or an empty file) raises `DatasetError`,
    as trec_eval exits 7; names of trec_eval measure sets (``all_trec``) that hold measures
    recall-kit does not compute add a warning naming them.
    """
    from recall_kit.errors import DatasetError
    from recall_kit.measure.score.trec import read_qrels, read_qrels_table, read_run, read_run_table

    if ties not in TIE_PRECISIONS:
        raise OptionError(f"--ties must be one of {', '.join(TIE_PRECISIONS)}, got {ties!r}.")
    relevance_level = check_relevance_level(relevance_level)
    specs = resolve_metrics(metric_names)
    missing = trec_eval_names_missing(metric_names)
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise OptionError(f"-M (the depth scored) must be a whole number >= 1, got {depth!r}.")
    qrels = read_qrels_table(Path(qrels_path))
    scores = []
    for run_path in run_paths:
        run = read_run_table(Path(run_path))
        try:
            query_ids, data = judge_tables(run, qrels, complete=complete, ties=ties,
                                           relevance_level=relevance_level, judged_only=judged_only,
                                           depth=depth)
        except ValueError as error:
            # The fast readers do not track line numbers: the exact readers find the line at fault.
            read_qrels(Path(qrels_path))
            read_run(Path(run_path))
            raise DatasetError(str(error)) from None
        _check_something_to_score(Path(qrels_path), qrels, Path(run_path), run, query_ids, complete)
        values = metric_values(data, specs)
        overall = aggregate(values, ["all"] * len(query_ids), summed_names(specs))["overall"]
        # -J and -M cut the rankings before scoring: the depth left is theirs, not the file's.
        where = f"the deepest ranking in {Path(run_path).name}" + (
            f" cut at -M {depth}" if depth is not None else "") + (
            " once -J left only judged documents" if judged_only else "")
        deepest = int(data.lengths.max()) if len(query_ids) else 0
        warnings = depth_warnings(specs, deepest, where) if query_ids else []
        if missing:
            warnings.append(f"not computed (no recall-kit measure; see docs/trec-eval.md): {', '.join(missing)}")
        scores.append(RunScores(query_ids, values, overall, warnings))
    return scores


def _check_something_to_score(
    qrels_path: Path, qrels: TrecTable, run_path: Path, run: TrecTable, scored: Sequence[str], complete: bool
) -> None:
    """Refuse, in one line, a run and qrels that share no query: trec_eval exits 7 ("No queries
    with both results and relevance info") rather than print all-zero means over n = 0."""
    from recall_kit.errors import DatasetError

    if len(qrels.query_ids) == 0:
        raise DatasetError(f"{qrels_path.name}: holds no judgment: nothing to score against.")
    if len(run.query_ids) == 0:
        raise DatasetError(f"{run_path.name}: holds no result line: nothing to score.")
    if scored and not complete:
        return
    if not complete or not np.isin(run.query_ids, qrels.query_ids).any():
        raise DatasetError(
            f"{run_path.name}: none of its {len(np.unique(run.query_ids))} queries is in "
            f"{qrels_path.name} ({len(np.unique(qrels.query_ids))} queries): nothing to score "
            "(trec_eval: 'No queries with both results and relevance info')."
        )


def score_trec_files(
    qrels_path: Path,
    run_path: Path,
    metric_names: Sequence[str] | None,
    complete: bool = False,
    ties: str = "float32",
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> RunScores:
    """Score one TREC run file against a TREC qrels file (see `score_run_files`).

    Queries come sorted by id, as trec_eval lists them. The result holds `query_ids`, `values`
    (per query, by metric name), `overall` (means, with "n") and `warnings` (cutoffs past the
    run's deepest ranking).
    """
    return score_run_files(qrels_path, [run_path], metric_names, complete=complete, ties=ties,
                           relevance_level=relevance_level, judged_only=judged_only)[0]


def _as_qrels(qrels: Mapping[Any, Any]) -> Qrels:
    out: Qrels = {}
    for query_id, judged in qrels.items():
        if isinstance(judged, Mapping):
            grades = {}
            for doc, grade in judged.items():
                # A string must be ASCII digits: float() reads "1_0" as 10 and "١" as 1.
                if isinstance(grade, str) and not re.fullmatch(r"[+-]?[0-9]+(?:\.0*)?", grade.strip()):
                    raise ValueError(f"qrels of query {query_id!r}: grade {grade!r} of {doc!r} is not an integer")
                if isinstance(grade, bool) or not float(grade).is_integer():
                    raise ValueError(f"qrels of query {query_id!r}: grade {grade!r} of {doc!r} is not an integer")
                grades[str(doc)] = int(grade)
            out[str(query_id)] = grades
        elif isinstance(judged, (str, bytes)) or not isinstance(judged, Iterable):
            raise ValueError(
                f"qrels of query {query_id!r}: expected {{doc_id: grade}} or a list of relevant ids"
            )
        else:
            out[str(query_id)] = {str(doc): 1 for doc in judged}
    return out


def _score_value(query_id: Any, doc: Any, score: Any) -> float:
    """A run score given in Python; a string is read as trec_eval reads a run file's (see
    `recall_kit.measure.score.trec.parse_score`), so "1_0" is refused rather than read as 10."""
    if isinstance(score, str):
        from recall_kit.measure.score.trec import parse_score

        parsed = parse_score(score.strip())
        if parsed is None:
            raise ValueError(f"run of query {query_id!r}: score {score!r} of {doc!r} is not a number")
        return parsed
    return float(score)


def _as_rankings(run: Mapping[Any, Any], ties: str) -> dict[str, list[str]]:
    rankings: dict[str, list[str]] = {}
    for query_id, answer in run.items():
        if isinstance(answer, Mapping):
            hits = [Hit(str(doc), _score_value(query_id, doc, score)) for doc, score in answer.items()]
            if any(math.isnan(hit.score) for hit in hits):
                raise ValueError(f"run of query {query_id!r}: a score is NaN")
            rankings[str(query_id)] = [hit.id for hit in sort_hits(hits, ties)]
        elif isinstance(answer, (str, bytes)) or not isinstance(answer, Iterable):
            raise ValueError(
                f"run of query {query_id!r}: expected {{doc_id: score}} or a list of ids, best first"
            )
        else:
            rankings[str(query_id)] = [str(doc) for doc in answer]
    return rankings


def evaluate_run(
    qrels: Mapping[Any, Any],
    run: Mapping[Any, Any],
    metrics: Sequence[str] | str | None = None,
    *,
    per_query: bool = False,
    complete: bool = False,
    ties: str = "float32",
    relevance_level: int = 1,
    judged_only: bool = False,
) -> dict[str, Any]:
    """Score an in-memory run against in-memory qrels: ``recall_kit.evaluate``.

    `qrels` is ``{query_id: {doc_id: grade}}`` (pytrec_eval's shape; grade >= 1 is relevant, 0
    judged not relevant) or ``{query_id: [relevant ids]}``. `run` is ``{query_id: {doc_id:
    score}}`` (ranked as trec_eval ranks: score descending, ties by id descending, scores compared
    at float32 precision unless ``ties="float64"``, trec_eval 10's way) or ``{query_id: [doc_id,
    ...]}`` already best first. Ids are compared as strings. `metrics` are recall-kit metric
    names (``"recall@10"``, ``["ndcg@10", "mrr"]``; default: the default set).

    As trec_eval: only queries in both are scored; `complete=True` scores every qrels query, a
    query the run lacks scoring 0 (``-c``); a query with no qrels is never scored. Returns the
    means ``{metric: value}``, or with `per_query=True` ``{query_id: {metric: value}}`` as
    pytrec_eval's ``RelevanceEvaluator.evaluate`` does. A cutoff past the run's deepest ranking
    raises no error but a `RecallKitWarning` saying it equals the metric at that depth.
    `relevance_level` and `judged_only` are trec_eval's ``-l`` and ``-J`` (pytrec_eval's
    ``relevance_level`` and ``judged_docs_only_flag``); metric names may be trec_eval's or
    ir_measures' (``"ndcg_cut_10"``, ``"nDCG@10"``), the result keeps recall-kit's.
    """
    import warnings as warnings_module

    from recall_kit.errors import RecallKitWarning

    if ties not in TIE_PRECISIONS:
        raise ValueError(f"ties must be one of {', '.join(TIE_PRECISIONS)}, got {ties!r}")
    specs = resolve_metrics([metrics] if isinstance(metrics, str) else metrics)
    rankings = _as_rankings(run, ties)
    scores = score_rankings(_as_qrels(qrels), rankings, specs, complete=complete,
                            relevance_level=check_relevance_level(relevance_level, error=ValueError),
                            judged_only=judged_only)
    if not set(scores.query_ids) & {query_id for query_id, ranking in rankings.items() if ranking}:
        warnings_module.warn(
            "no query has both results and judgments: every value is 0 over n = 0 queries "
            "(trec_eval exits with an error here)", RecallKitWarning, stacklevel=2)
    missing = trec_eval_names_missing([metrics] if isinstance(metrics, str) else metrics)
    if missing:
        warnings_module.warn(f"not computed (no recall-kit measure): {', '.join(missing)}", RecallKitWarning,
                             stacklevel=2)
    for warning in scores.warnings:
        warnings_module.warn(warning, RecallKitWarning, stacklevel=2)
    if per_query:
        return {
            query_id: {name: float(array[row]) for name, array in scores.values.items()}
            for row, query_id in enumerate(scores.query_ids)
        }
    return {name: float(scores.overall[name]) for name in scores.values}


__all__ = [  # the metric-name API re-exported, and this module's own
    "MAX_CUTOFF", "TREC_EVAL_SETS", "MetricSpec", "RunScores", "aggregate", "canonical_metric_name",
    "check_relevance_level", "depth_warnings", "evaluate_run", "judge_rankings", "judge_tables", "metric_values",
    "metric_aliases", "resolve_metrics", "score_rankings", "score_run_files", "score_trec_files",
    "summed_names", "trec_eval_names_missing",
]
