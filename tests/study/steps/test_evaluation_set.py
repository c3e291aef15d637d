"""The evaluation-set step (recall_kit.study.steps.evaluation_set): the user's labels of memories the
corpus step dropped as sensitive are dropped (and a query left with none) and counted; a step opens
only the folders its rule names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from study.steps.test_corpus import _steps, _study  # tests/ is on sys.path (conftest.py)

from recall_kit.study.config import load_study
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.corpus import corpus_reads, make_corpus
from recall_kit.study.steps.evaluation_set import evaluation_set_reads, make_evaluation_set


def test_the_evaluation_set_drops_labels_of_sensitive_memories_and_queries_left_without_any(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = load_study(_study(tmp_path))
    graph, corpus = _steps(tmp_path)
    make_corpus(corpus_reads(config), Artefacts(lambda: graph, "corpus", []), corpus)
    folder = graph.path("evaluation-set")
    folder.mkdir()
    make_evaluation_set(evaluation_set_reads(config), Artefacts(lambda: graph, "evaluation-set", ["corpus"]), folder)
    qrels = [json.loads(line) for line in (folder / "qrels.jsonl").read_text().splitlines()]
    assert qrels == [{"query_id": "q1", "relevant_ids": ["a"]}, {"query_id": "q3", "relevance": {"b": 2}}]
    assert [json.loads(line)["query_id"] for line in (folder / "queries.jsonl").read_text().splitlines()] == ["q1", "q3"]
    assert json.loads((folder / "sensitive.json").read_text()) == {"labels_dropped": 2, "queries_dropped": 1,
                                                                    "file": "qrels.jsonl"}
    assert (folder / "sensitive_ids.txt").read_text() == "c\n"
    assert "2 judgment(s) dropped because their memory is sensitive; 1 query(ies)" in capsys.readouterr().err
    assert json.loads((folder / "strata.json").read_text()) == {
        "all": {"built": "supplied with the store's queries and qrels", "generated": False}}


def test_a_step_opens_only_the_folders_its_rule_names(tmp_path: Path) -> None:
    config = load_study(_study(tmp_path))
    graph, _ = _steps(tmp_path)
    folder = graph.path("evaluation-set")
    folder.mkdir()
    with pytest.raises(Exception, match="reads 'corpus', which its rule does not declare"):
        make_evaluation_set(evaluation_set_reads(config), Artefacts(lambda: graph, "evaluation-set", []), folder)
