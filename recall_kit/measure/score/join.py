"""The join of rankings with relevance judgments, vectorised: rankings (or a whole TREC run read
as arrays) and qrels laid out as the dense `JudgedRankings` arrays the measures read, in trec_eval's
order and with its -l, -J, -M and -c. Scoring what it lays out: evaluation.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, repeat

import numpy as np

from recall_kit.errors import OptionError
from recall_kit.measure.score.parallel import in_threads
from recall_kit.measure.score.trec import TrecTable
from recall_kit.types import JudgedRankings, Qrels


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
        run_query, found, cell_grades = in_blocks
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
    times more. Returns (the rows' query codes in that order, found in the qrels, grade) or None
    (then `judge_tables`'s general path, which also names a repeated document, takes over).
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
        lambda first, keys=run_keys, scores=descending: _order_rows(  # type: ignore[misc]
            keys, scores, starts[first:first + step], lengths[first:first + step], width),
        range(0, len(starts), step),
    )
    if any(piece is None for piece in pieces):
        return None  # a document twice for one query
    order: np.ndarray = np.concatenate(pieces)  # type: ignore[arg-type]
    # What is no longer needed goes before the lookup, the join's peak in memory.
    del pieces, descending
    ordered_keys, ordered_query = run_keys[order], run_query[order]
    del run_keys, order
    return (ordered_query, *_grades_by_key(ordered_keys, ordered_query, judged_keys, judged_query, qrels.values))


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
