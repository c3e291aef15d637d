"""Sensitive ids supplied with a dataset (flagged corpus rows and sensitive_ids.txt), and the
result's `outside_corpus` section written and read back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from recall_kit import load_dataset
from recall_kit.dataset import example_datasets, read_dataset
from recall_kit.errors import ResultFileError
from recall_kit.measure.result import BenchmarkResult, LegOutsideCorpus


@pytest.fixture
def example(tmp_path: Path) -> Path:
    folder = tmp_path / "memories"
    shutil.copytree(example_datasets()["memories"], folder)
    return folder


def test_flagged_rows_and_the_listed_ids_are_the_sensitive_ids(example: Path) -> None:
    flagged = load_dataset(example).sensitive_ids
    assert flagged and not any(doc in load_dataset(example).corpus for doc in flagged)
    (example / "sensitive_ids.txt").write_text("# memories the service holds and the snapshot must not\n9001\n\nabc-7  # a note\n")
    assert load_dataset(example).sensitive_ids == flagged | {"9001", "abc-7"}


def test_a_line_that_is_not_an_id_names_file_and_line(example: Path) -> None:
    (example / "sensitive_ids.txt").write_text("12\n" + "x" * 5000 + "\n")
    _, problems = read_dataset(example)
    assert [str(problem) for problem in problems] == ["sensitive_ids.txt:2: not an id"]


def test_outside_corpus_round_trips_and_is_checked() -> None:
    found = LegOutsideCorpus(hits=3, queries={"q1": 2, "q2": 1}, sensitive={"q1": ["237"]})
    assert found.sensitive_hits == 1
    document = found.to_dict()
    assert document == {"hits": 3, "queries": {"q1": 2, "q2": 1}, "sensitive_hits": 1, "sensitive": {"q1": ["237"]}}
    from recall_kit.document_reader import DocumentReader
    from recall_kit.measure.result_sections import SCHEMA

    read = DocumentReader("r.json", SCHEMA)
    assert LegOutsideCorpus.parse(read, document, "outside_corpus.http") == found
    with pytest.raises(ResultFileError, match="outside_corpus.http.hits"):
        LegOutsideCorpus.parse(read, {**document, "hits": -1}, "outside_corpus.http")


def test_a_result_without_live_legs_writes_no_section(tmp_path: Path) -> None:
    import recall_kit_fts5

    from recall_kit import SystemSpec, run_benchmark
    from recall_kit.testing import registered_plugin

    with registered_plugin(recall_kit_fts5):
        result = run_benchmark(SystemSpec(retriever="fts5"), load_dataset(example_datasets()["memories"]), k=5,
                               latency_sample=0, show_progress=False)
    assert "outside_corpus" not in result.to_dict() and result.sensitive_hits == 0
    assert BenchmarkResult.from_dict(result.to_dict()).outside_corpus == {}
