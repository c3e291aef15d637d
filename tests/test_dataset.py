"""Loading and validating dataset folders: every problem named by file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recall_kit.curate.stats import dataset_stats
from recall_kit.dataset import load_dataset, read_dataset, summarise
from recall_kit.errors import DatasetError


def write(folder: Path, corpus: list, queries: list, qrels: list) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus", corpus), ("queries", queries), ("qrels", qrels)):
        lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


CORPUS = [
    {"id": 1, "content": "Kestrel uses ClickHouse", "tags": "kestrel,db", "importance": 0.5},
    {"id": "two", "content": "Priya leads Kestrel", "category": "person", "_source": "x"},
    {"id": 3, "content": "secret diary entry", "is_sensitive": True},
]
QUERIES = [
    {"query_id": "q1", "text": "which database", "stratum": "exact", "_note": "ignored"},
    {"query_id": 2, "text": "who leads", "stratum": "paraphrase"},
]
QRELS = [
    {"query_id": "q1", "relevant_ids": [1]},
    {"query_id": "2", "relevance": {"two": 2, "1": 0}},
]


def test_loads_binary_and_graded_qrels_with_mixed_ids(tmp_path):
    dataset = load_dataset(write(tmp_path / "d", CORPUS, QUERIES, QRELS))
    assert dataset.corpus.ids == ["1", "two"]
    assert dataset.dropped_sensitive == 1
    assert dataset.qrels == {"q1": {"1": 1}, "2": {"two": 2, "1": 0}}
    assert [q.query_id for q in dataset.queries] == ["q1", "2"]
    assert dataset.corpus.get("1").tags == ("kestrel", "db")
    assert "_source" not in dataset.corpus.get("two").extra
    assert dataset.strata == ["exact", "paraphrase"]


def test_fingerprint_is_stable_and_content_sensitive(tmp_path):
    first = load_dataset(write(tmp_path / "a", CORPUS, QUERIES, QRELS)).fingerprint
    again = load_dataset(write(tmp_path / "b", CORPUS, QUERIES, QRELS)).fingerprint
    changed = [dict(CORPUS[0], content="Kestrel uses Postgres"), *CORPUS[1:]]
    other = load_dataset(write(tmp_path / "c", changed, QUERIES, QRELS)).fingerprint
    assert first == again and first != other and len(first) == 64


@pytest.mark.parametrize(
    ("corpus", "queries", "qrels", "expected"),
    [
        (["{not json"], QUERIES, QRELS, "corpus.jsonl:1: not valid JSON"),
        ([{"content": "x"}], QUERIES, QRELS, 'corpus.jsonl:1: missing or bad "id"'),
        ([{"id": 1, "content": 5}], QUERIES, QRELS, 'corpus.jsonl:1: "content" must be text'),
        ([CORPUS[0], CORPUS[0]], QUERIES, [QRELS[0]], "corpus.jsonl:2: duplicate id 1 (first on line 1)"),
        (CORPUS, [{"query_id": "q1"}], QRELS, 'queries.jsonl:1: "text" missing'),
        (CORPUS, QUERIES, [QRELS[0], {"query_id": "2", "relevant_ids": [99]}], "qrels.jsonl:2: id 99 (query 2) is not in corpus.jsonl"),
        (CORPUS, QUERIES, [QRELS[0], {"query_id": "2", "relevant_ids": [3]}], "qrels.jsonl:2: id 3 (query 2) is a sensitive memory"),
        (CORPUS, QUERIES, [QRELS[0]], "queries.jsonl:2: query 2 has no qrels"),
        (CORPUS, QUERIES, [*QRELS, {"query_id": "q9", "relevant_ids": [1]}], "qrels.jsonl:3: query q9 is not in queries.jsonl"),
        (CORPUS, QUERIES, [QRELS[0], {"query_id": "2", "relevance": {"two": "high"}}], "qrels.jsonl:2: grade for id two must be an integer"),
        (CORPUS, QUERIES, [QRELS[0], {"query_id": "2"}], 'qrels.jsonl:2: missing "relevant_ids" or "relevance"'),
        (CORPUS, QUERIES, [*QRELS, QRELS[0]], "qrels.jsonl:3: duplicate qrels for q1 (first on line 1)"),
    ],
)
def test_problems_name_file_and_line(tmp_path, corpus, queries, qrels, expected):
    folder = write(tmp_path / "d", corpus, queries, qrels)
    _, problems = read_dataset(folder)
    assert any(str(problem).startswith(expected) for problem in problems), problems
    with pytest.raises(DatasetError) as error:
        load_dataset(folder)
    assert "\n" not in str(error.value)


def test_missing_file_and_missing_folder(tmp_path):
    folder = write(tmp_path / "d", CORPUS, QUERIES, QRELS)
    (folder / "qrels.jsonl").unlink()
    with pytest.raises(DatasetError, match=r"qrels.jsonl: missing"):
        load_dataset(folder)
    with pytest.raises(DatasetError, match="not a dataset folder"):
        load_dataset(tmp_path / "nowhere")


def test_scope_mismatch_is_reported(tmp_path):
    corpus = [{"id": 1, "content": "a", "scope": "alice"}, {"id": 2, "content": "b", "scope": "bob"}]
    queries = [{"query_id": "q", "text": "a", "scope": "alice"}]
    _, problems = read_dataset(write(tmp_path / "d", corpus, queries, [{"query_id": "q", "relevant_ids": [2]}]))
    assert [str(p) for p in problems] == [
        "qrels.jsonl:1: id 2 is in scope 'bob' but query q searches scope 'alice'"
    ]


def test_parent_ids_are_valid_qrels_targets(tmp_path):
    corpus = [{"id": "d1#0", "content": "a", "parent_id": "d1"}, {"id": "d1#1", "content": "b", "parent_id": "d1"}]
    dataset = load_dataset(write(tmp_path / "d", corpus, [{"query_id": "q", "text": "a"}], [{"query_id": "q", "relevant_ids": ["d1"]}]))
    assert dataset.has_parents and dataset.queries[0].stratum == "all"


def test_stats_hold_no_text(tmp_path):
    dataset = load_dataset(write(tmp_path / "d", CORPUS, QUERIES, QRELS))
    stats = dataset_stats(dataset)
    text = json.dumps(stats)
    for row in CORPUS + QUERIES:
        for value in (row.get("content"), row.get("text")):
            if value:
                assert value not in text
    assert stats["memories"] == 2 and stats["queries"] == 2 and stats["dropped_sensitive"] == 1
    assert stats["graded_qrels"] is True
    assert stats["strata_detail"]["exact"]["queries"] == 1


@pytest.mark.parametrize("grade", ["1_0", "\u0661", "\uff12", "2", "-1", True, False])
def test_string_and_bool_grades_are_refused(tmp_path, grade):
    # int() reads "1_0" as 10 and "١" as 1: the qrels would change with no warning. Issue 37: "2"
    # and true were read as 2 and 1; a grade is a JSON number.
    qrels = [QRELS[0], {"query_id": "2", "relevance": {"two": grade}}]
    with pytest.raises(DatasetError, match="qrels.jsonl:2: grade for id two must be an integer"):
        load_dataset(write(tmp_path / "d", CORPUS, QUERIES, qrels))
    ok = [QRELS[0], {"query_id": "2", "relevance": {"two": 2, "1": -1.0}}]
    assert load_dataset(write(tmp_path / "e", CORPUS, QUERIES, ok)).qrels["2"] == {"two": 2, "1": -1}


@settings(max_examples=300)
@given(values=st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False) | st.integers(0, 10_000).map(float),
                       min_size=1, max_size=60),
       q=st.sampled_from([0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 100.0]) | st.floats(0, 100))
def test_percentile_is_numpys_to_the_bit(values: list[float], q: float) -> None:
    """`summarise`'s percentiles (a latency's p50, p95, p99) are numpy.percentile's, bit for bit,
    without its first call's import of numpy.ma."""
    import numpy as np

    from recall_kit.dataset import percentile

    expected = float(np.percentile(np.asarray(values), q))
    assert percentile(sorted(values), q) == expected
    assert summarise(values, ("p50", "p95", "p99")) == {
        key: round(float(np.percentile(np.asarray(values), float(key[1:]))), 4) for key in ("p50", "p95", "p99")}


def test_percentiles_import_no_numpy_ma() -> None:
    """numpy.percentile's first call imports numpy.ma (15 ms); `summarise` does not."""
    import subprocess
    import sys

    code = ("import sys\nfrom recall_kit.dataset import summarise\n"
            "assert summarise([3.0, 1.0, 2.0], ('p50', 'p95'))['p50'] == 2.0\nprint('numpy.ma' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False"


def test_a_dangling_link_is_said_to_be_one_not_a_missing_file(tmp_path: Path) -> None:
    """Issue 72: a dangling link in a study's labels/ stopped every assessor's page with "bar.jsonl:
    missing (expected ...)"; the file is there, a link to something that is not."""
    from recall_kit.dataset import read_jsonl
    from recall_kit.errors import DatasetError

    (tmp_path / "bar.jsonl").symlink_to(tmp_path / "gone.jsonl")
    with pytest.raises(DatasetError) as refused:
        list(read_jsonl(tmp_path / "bar.jsonl"))
    assert str(refused.value) == (f"bar.jsonl: a link to {tmp_path / 'gone.jsonl'}, which does not exist (a dangling "
                                  "link: remove it, or restore what it points at)")
    with pytest.raises(DatasetError, match=r"^missing\.jsonl: missing \(expected "):
        list(read_jsonl(tmp_path / "missing.jsonl"))
