"""Reading and writing TREC run and qrels files, ordered and validated as trec_eval does."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from recall_kit.errors import DatasetError
from recall_kit.fileio import atomic_open
from recall_kit.types import Hit, Qrels, sort_hits

RUN_COLUMNS = 6  # qid Q0 docid rank score tag
QRELS_COLUMNS = 4  # qid iter docid rel


def _lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, whitespace-separated fields) of every non-blank line."""
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                fields = line.split()
                if fields:
                    yield number, fields
    except UnicodeDecodeError:
        raise DatasetError(f"{path.name}: not UTF-8 text") from None
    except OSError as error:
        raise DatasetError(f"{path}: cannot read ({error.strerror or error})") from None


def read_run(path: Path | str) -> dict[str, list[Hit]]:
    """Read a TREC run (``qid Q0 docid rank score tag`` per line) into rankings by query id.

    Each ranking is in trec_eval's order (`sort_hits`): the rank column is ignored, as trec_eval
    ignores it. Queries keep the order of their first line. A malformed line, a score that is
    not a number, or a document twice in one query raises `DatasetError` naming file and line.
    """
    path = Path(path)
    hits: dict[str, list[Hit]] = {}
    seen: dict[str, set[str]] = {}
    for number, fields in _lines(path):
        if len(fields) != RUN_COLUMNS:
            raise DatasetError(
                f"{path.name}:{number}: expected {RUN_COLUMNS} columns "
                f"(qid Q0 docid rank score tag), got {len(fields)}"
            )
        query_id, _, doc_id, _, raw_score, _ = fields
        try:
            score = float(raw_score)
        except ValueError:
            raise DatasetError(
                f"{path.name}:{number}: score {raw_score!r} is not a number"
            ) from None
        if math.isnan(score):
            raise DatasetError(f"{path.name}:{number}: score is NaN")
        docs = seen.setdefault(query_id, set())
        if doc_id in docs:
            raise DatasetError(
                f"{path.name}:{number}: document {doc_id!r} appears twice for query {query_id!r}"
            )
        docs.add(doc_id)
        hits.setdefault(query_id, []).append(Hit(doc_id, score))
    return {query_id: sort_hits(query_hits) for query_id, query_hits in hits.items()}


def read_qrels(path: Path | str) -> Qrels:
    """Read TREC qrels (``qid iter docid rel`` per line) into ``{qid: {docid: grade}}``.

    Grades are integers; 0 (or less) is judged not relevant. A malformed line, a grade that is
    not an integer, or a document judged twice for one query raises `DatasetError`.
    """
    path = Path(path)
    qrels: Qrels = {}
    for number, fields in _lines(path):
        if len(fields) != QRELS_COLUMNS:
            raise DatasetError(
                f"{path.name}:{number}: expected {QRELS_COLUMNS} columns "
                f"(qid iter docid rel), got {len(fields)}"
            )
        query_id, _, doc_id, raw_grade = fields
        try:
            grade = int(raw_grade)
        except ValueError:
            raise DatasetError(
                f"{path.name}:{number}: relevance {raw_grade[:40]!r} is not an integer"
            ) from None
        if not -1000 <= grade <= 1000:  # recall_kit.dataset.MIN_GRADE..MAX_GRADE
            raise DatasetError(f"{path.name}:{number}: relevance {raw_grade[:40]} is outside -1000..1000")
        judged = qrels.setdefault(query_id, {})
        if doc_id in judged:
            raise DatasetError(
                f"{path.name}:{number}: document {doc_id!r} is judged twice for query {query_id!r}"
            )
        judged[doc_id] = grade
    return qrels


def check_token(kind: str, value: str) -> str:
    """`value` as one whitespace-free field of a TREC (or BEIR) line; DatasetError otherwise."""
    value = str(value)
    if not value or any(character.isspace() for character in value):
        raise DatasetError(f"{kind} {value!r} is empty or has whitespace: it cannot be written to a TREC or BEIR file")
    return value


def write_run(path: Path | str, rankings: Mapping[str, Sequence[Hit]], tag: str) -> None:
    """Write rankings as a TREC run, ``qid Q0 docid rank score tag``, atomically.

    Each ranking is written in trec_eval's order (`sort_hits`), ranks from 1, scores with
    ``repr`` so they read back exactly, so the file scores the same everywhere.
    """
    tag = check_token("run tag", tag)

    def lines() -> Iterator[str]:
        for query_id, hits in rankings.items():
            query_id = check_token("query id", query_id)
            for rank, hit in enumerate(sort_hits(hits), start=1):
                doc_id = check_token("document id", hit.id)
                yield f"{query_id} Q0 {doc_id} {rank} {float(hit.score)!r} {tag}\n"

    with atomic_open(path) as stream:
        stream.writelines(lines())


def write_qrels(path: Path | str, qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Write judgments as TREC qrels, ``qid 0 docid grade``, atomically."""

    def lines() -> Iterator[str]:
        for query_id, judged in qrels.items():
            query_id = check_token("query id", query_id)
            for doc_id, grade in judged.items():
                yield f"{query_id} 0 {check_token('document id', doc_id)} {int(grade)}\n"

    with atomic_open(path) as stream:
        stream.writelines(lines())
