"""The corpus step (recall_kit.study.steps.corpus): sensitive rows dropped before anything is written,
only their ids kept; a flag it cannot read refuses the store; a missing store named. The store here
(c is sensitive) is the one the later steps' tests build on (`evaluation_set`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from study_support import LEXICAL_PAIR

from recall_kit.errors import DatasetError
from recall_kit.study.config import load_study
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.pipeline.graph import StudyGraph
from recall_kit.study.result import CorpusSummary
from recall_kit.study.steps.common import read_output
from recall_kit.study.steps.corpus import corpus_reads, make_corpus
from recall_kit.study.steps.evaluation_set import evaluation_set_reads, make_evaluation_set

SECRET = "the vault code is 4471"
CORPUS = [
    {"id": "a", "content": "The team moved standup to 10:15 on Mondays.", "importance": 3},
    {"id": "b", "content": "Deploys freeze every Friday after noon."},
    {"id": "c", "content": SECRET, "is_sensitive": True},
    {"id": "d", "content": "The on-call rota changes on the first of the month.", "is_sensitive": False},
]
QUERIES = [{"query_id": "q1", "text": "when is standup"}, {"query_id": "q2", "text": "vault code"},
           {"query_id": "q3", "text": "deploy freeze"}]
QRELS = [{"query_id": "q1", "relevant_ids": ["a", "c"]}, {"query_id": "q2", "relevant_ids": ["c"]},
         {"query_id": "q3", "relevance": {"b": 2}}]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _study(folder: Path, corpus: list[dict[str, object]] = CORPUS) -> Path:
    store = folder / "store"
    store.mkdir(parents=True)
    _jsonl(store / "corpus.jsonl", corpus)
    _jsonl(store / "queries.jsonl", QUERIES)
    _jsonl(store / "qrels.jsonl", QRELS)
    path = folder / "study.toml"
    path.write_text('[store]\ndataset = "store"\n[evaluation_set]\nqueries = "dataset"\n' + LEXICAL_PAIR)
    return path


def _steps(folder: Path) -> tuple[StudyGraph, Path]:
    """An empty graph whose corpus folder exists (the make functions are given their folders)."""
    graph = StudyGraph(folder / "out", [])
    graph.path("corpus").mkdir(parents=True)
    return graph, graph.path("corpus")


def evaluation_set(tmp_path: Path) -> StudyGraph:
    """The corpus and evaluation-set steps run on this file's store (c is sensitive):
    q1 judged a, q3 judged b."""
    config = load_study(_study(tmp_path))
    graph, corpus = _steps(tmp_path)
    make_corpus(corpus_reads(config), Artefacts(lambda: graph, "corpus", []), corpus)
    graph.path("evaluation-set").mkdir()
    make_evaluation_set(evaluation_set_reads(config), Artefacts(lambda: graph, "evaluation-set", ["corpus"]),
                        graph.path("evaluation-set"))
    return graph


def test_the_corpus_step_drops_sensitive_rows_and_keeps_only_their_ids(tmp_path: Path) -> None:
    config = load_study(_study(tmp_path))
    graph, corpus = _steps(tmp_path)
    make_corpus(corpus_reads(config), Artefacts(lambda: graph, "corpus", []), corpus)
    rows = [json.loads(line) for line in (corpus / "corpus.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == ["a", "b", "d"]
    assert (corpus / "sensitive_ids.txt").read_text() == "c\n"
    assert [path.name for path in corpus.iterdir() if SECRET in path.read_text()] == []
    summary = read_output(CorpusSummary, corpus / "corpus.json")
    assert (summary.source, summary.memories, summary.sensitive_dropped, summary.importance_share) == (
        "dataset", 3, 1, round(1 / 3, 4))


def test_a_flag_the_corpus_step_cannot_read_refuses_the_store_naming_its_line(tmp_path: Path) -> None:
    config = load_study(_study(tmp_path, [*CORPUS[:2], {"id": "c", "content": SECRET, "is_sensitive": "maybe"}]))
    graph, corpus = _steps(tmp_path)
    with pytest.raises(DatasetError, match=r"^corpus\.jsonl:3: is_sensitive 'maybe' is not true or false"):
        make_corpus(corpus_reads(config), Artefacts(lambda: graph, "corpus", []), corpus)
    assert list(corpus.iterdir()) == []  # nothing written


def test_a_store_with_no_corpus_file_is_named_with_the_study_file(tmp_path: Path) -> None:
    config = load_study(_study(tmp_path))
    (tmp_path / "store" / "corpus.jsonl").unlink()
    graph, corpus = _steps(tmp_path)
    with pytest.raises(DatasetError, match=r"corpus\.jsonl: not found \(\[store\] dataset in study\.toml\)\.$"):
        make_corpus(corpus_reads(config), Artefacts(lambda: graph, "corpus", []), corpus)
