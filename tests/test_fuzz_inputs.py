"""Hypothesis properties: random bytes and random JSON shapes given to `dataset validate` and to
every importer end in exit 2 with one clear line (never a traceback, never "unexpected"), or in a
valid dataset. The counts of cases tried are in docs/reliability.md."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from recall_kit.cli import get_app
from recall_kit.dataset import read_dataset

runner = CliRunner()
#: Cases per property; RECALL_KIT_FUZZ_EXAMPLES=500 for the long run recorded in docs/reliability.md.
EXAMPLES = int(os.environ.get("RECALL_KIT_FUZZ_EXAMPLES", "30"))
FAST = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

#: Any JSON value: scalars (odd numbers and text included) nested in lists and objects.
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
JSON = st.recursive(SCALARS, lambda children: st.lists(children, max_size=4)
                    | st.dictionaries(st.text(max_size=8), children, max_size=4), max_leaves=20)
#: Objects that look a little like the rows each format expects, so the checks past parsing run.
KEYS = ["id", "_id", "content", "text", "title", "query_id", "relevant_ids", "relevance", "stratum",
        "scope", "tags", "importance", "parent_id", "is_sensitive", "sample_id", "conversation", "qa",
        "question", "answer", "evidence", "category", "question_id", "haystack_sessions",
        "haystack_session_ids", "answer_session_ids", "speaker_a", "speaker_b", "session_1",
        "session_1_date_time", "dia_id", "speaker", "role", "has_answer", "question_type"]
ROWS = st.dictionaries(st.sampled_from(KEYS), JSON, max_size=6)
LINES = st.lists(ROWS | JSON, max_size=5)
ODD = st.sampled_from(["\ud800", "\n", "x" * 5000, "9" * 5000, "[" * 3000, "\x00", "\ufeff", "é"])


def _check_one_line(result: Any, allowed: tuple[int, ...] = (0, 2)) -> None:
    """Exit 0, or exit 2 with no traceback, no "unexpected", and every line a clear message."""
    assert result.exit_code in allowed, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    assert "unexpected" not in result.output, result.output
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert lines, "exit 2 with nothing said"
        assert all(len(line) < 1000 for line in lines)


def _jsonl(values: list[Any]) -> bytes:
    return "".join(json.dumps(value) + "\n" for value in values).encode("utf-8")


def _in_temp(write: Callable[[Path], list[str]]) -> Any:
    root = Path(tempfile.mkdtemp(prefix="recall-kit-fuzz-"))
    try:
        args = write(root)
        return runner.invoke(get_app(), args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# dataset validate ------------------------------------------------------------------------------

@FAST
@given(corpus=st.binary(max_size=200), queries=st.binary(max_size=200), qrels=st.binary(max_size=200))
def test_validate_random_bytes(corpus: bytes, queries: bytes, qrels: bytes) -> None:
    def write(root: Path) -> list[str]:
        (root / "corpus.jsonl").write_bytes(corpus)
        (root / "queries.jsonl").write_bytes(queries)
        (root / "qrels.jsonl").write_bytes(qrels)
        return ["dataset", "validate", str(root)]

    result = _in_temp(write)
    _check_one_line(result)
    if result.exit_code == 2:
        assert all(line.split(":")[0] in {"corpus.jsonl", "queries.jsonl", "qrels.jsonl"}
                   or "problem(s) in" in line for line in result.stderr.splitlines() if line.strip())


@FAST
@given(corpus=LINES, queries=LINES, qrels=LINES, odd=ODD, where=st.integers(0, 2))
def test_validate_random_json_shapes(corpus: list[Any], queries: list[Any], qrels: list[Any], odd: str,
                                     where: int) -> None:
    files = [corpus, queries, qrels]
    files[where] = [*files[where], {"id": odd, "query_id": odd, "content": odd, "text": odd}]

    def write(root: Path) -> list[str]:
        for name, rows in zip(("corpus.jsonl", "queries.jsonl", "qrels.jsonl"), files, strict=True):
            (root / name).write_bytes(_jsonl(rows))
        return ["dataset", "validate", str(root)]

    _check_one_line(_in_temp(write))


@FAST
@given(odd=ODD)
def test_read_dataset_never_raises_on_odd_text(odd: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="recall-kit-fuzz-"))
    try:
        raw = odd if odd.startswith("[") else json.dumps({"id": odd, "content": odd})
        (root / "corpus.jsonl").write_text(raw + "\n", encoding="utf-8", errors="surrogatepass")
        (root / "queries.jsonl").write_text('{"query_id": "q", "text": "t"}\n')
        (root / "qrels.jsonl").write_text('{"query_id": "q", "relevant_ids": [1]}\n')
        read_dataset(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# importers -------------------------------------------------------------------------------------

def _import(root: Path, fmt: str, source: Path, *options: str) -> list[str]:
    return ["dataset", "import", fmt, str(source), str(root / "out"), *options]


@FAST
@given(data=st.binary(max_size=300), fmt=st.sampled_from(["locomo", "longmemeval"]))
def test_json_importers_random_bytes(data: bytes, fmt: str) -> None:
    def write(root: Path) -> list[str]:
        (root / "in.json").write_bytes(data)
        return _import(root, fmt, root / "in.json")

    _check_one_line(_in_temp(write))


@FAST
@given(data=JSON | st.lists(ROWS, max_size=3) | ROWS, fmt=st.sampled_from(["locomo", "longmemeval"]))
def test_json_importers_random_json_shapes(data: Any, fmt: str) -> None:
    def write(root: Path) -> list[str]:
        (root / "in.json").write_text(json.dumps(data))
        return _import(root, fmt, root / "in.json")

    _check_one_line(_in_temp(write))


@FAST
@given(corpus=st.binary(max_size=200) | LINES.map(_jsonl), queries=st.binary(max_size=200) | LINES.map(_jsonl),
       qrels=st.binary(max_size=200) | st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_beir_importer_random_input(corpus: bytes, queries: bytes, qrels: bytes) -> None:
    def write(root: Path) -> list[str]:
        source = root / "beir"
        (source / "qrels").mkdir(parents=True)
        (source / "corpus.jsonl").write_bytes(corpus)
        (source / "queries.jsonl").write_bytes(queries)
        (source / "qrels" / "test.tsv").write_bytes(qrels)
        return _import(root, "beir", source)

    _check_one_line(_in_temp(write))


@FAST
@given(topics=st.binary(max_size=200) | st.text(max_size=120).map(lambda t: f"<top>\n<num> {t}".encode("utf-8", "surrogatepass")),
       qrels=st.binary(max_size=120), corpus=st.binary(max_size=200) | LINES.map(_jsonl))
def test_trec_importer_random_input(topics: bytes, qrels: bytes, corpus: bytes) -> None:
    def write(root: Path) -> list[str]:
        source = root / "trec"
        source.mkdir()
        (source / "topics.txt").write_bytes(topics)
        (source / "qrels.txt").write_bytes(qrels)
        (source / "corpus.jsonl").write_bytes(corpus)
        return _import(root, "trec", source)

    _check_one_line(_in_temp(write))


@FAST
@given(database=st.binary(max_size=300), queries=LINES, qrels=LINES)
def test_sqlite_importer_random_input(database: bytes, queries: list[Any], qrels: list[Any]) -> None:
    def write(root: Path) -> list[str]:
        (root / "store.db").write_bytes(database)
        (root / "queries.jsonl").write_bytes(_jsonl(queries))
        (root / "qrels.jsonl").write_bytes(_jsonl(qrels))
        return _import(root, "sqlite", root / "store.db", "--queries", str(root / "queries.jsonl"),
                       "--qrels", str(root / "qrels.jsonl"))

    _check_one_line(_in_temp(write))


@FAST
@given(rows=st.lists(st.tuples(JSON, JSON), max_size=4), queries=LINES, qrels=LINES)
def test_sqlite_importer_random_rows(rows: list[tuple[Any, Any]], queries: list[Any], qrels: list[Any]) -> None:
    import sqlite3

    def write(root: Path) -> list[str]:
        connection = sqlite3.connect(root / "store.db")
        connection.execute("CREATE TABLE memories (id, content)")
        connection.executemany("INSERT INTO memories VALUES (?, ?)",
                               [(_sqlite_value(a), _sqlite_value(b)) for a, b in rows])
        connection.commit()
        connection.close()
        (root / "queries.jsonl").write_bytes(_jsonl(queries))
        (root / "qrels.jsonl").write_bytes(_jsonl(qrels))
        return _import(root, "sqlite", root / "store.db", "--queries", str(root / "queries.jsonl"),
                       "--qrels", str(root / "qrels.jsonl"))

    _check_one_line(_in_temp(write))


def _sqlite_value(value: Any) -> Any:
    if value is None or isinstance(value, (str, float)) or (isinstance(value, int) and abs(value) < 2**63):
        return value
    return json.dumps(value)
