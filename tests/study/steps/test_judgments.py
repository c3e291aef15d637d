"""The judgments step (recall_kit.study.steps.judgments): people's grades fill only what the user's
qrels leave, a grade of a sensitive memory dropped and counted, one of a memory the corpus lacks
refused naming the person's file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from study.steps.test_corpus import _jsonl, evaluation_set  # tests/ is on sys.path (conftest.py)

from recall_kit.errors import DatasetError
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.pipeline.graph import StudyGraph
from recall_kit.study.steps.common import read_output
from recall_kit.study.steps.judgments import JudgmentsOutput, JudgmentsReads, make_judgments


def _person(path: Path, assessor: str, grades: dict[str, dict[str, int]]) -> str:
    _jsonl(path, [{"query_id": query, "relevance": judged, "assessor": assessor, "judged_at": {}}
                  for query, judged in grades.items()])
    return str(path)


def judge(graph: StudyGraph, people: list[str]) -> Path:
    folder = graph.path("judgments")
    folder.mkdir()
    reads = JudgmentsReads("study.toml", "qrels", dict.fromkeys(people))
    make_judgments(reads, Artefacts(lambda: graph, "judgments", ["evaluation-set", "pool"]), folder)
    return folder


def test_peoples_grades_fill_only_what_the_users_qrels_leave_and_a_sensitive_ones_are_counted(
        tmp_path: Path) -> None:
    graph = evaluation_set(tmp_path)
    alice = _person(tmp_path / "alice.jsonl", "alice", {"q1": {"a": 0, "b": 2}, "q3": {"c": 3}})
    folder = judge(graph, [alice])
    qrels = {row["query_id"]: row for row in map(json.loads, (folder / "dataset" / "qrels.jsonl").read_text().splitlines())}
    assert set(qrels) == {"q1", "q3"}
    labels = qrels["q1"].get("relevance") or dict.fromkeys(qrels["q1"]["relevant_ids"], 1)
    assert labels["a"] >= 1 and labels["b"] == 2  # the user's label of a stands; alice's b is added
    assert qrels["q3"]["relevance"] == {"b": 2}  # her grade of the sensitive memory c is dropped
    info = read_output(JudgmentsOutput, folder / "judgments.json")
    assert (info.source, info.pooled_labels) == ("qrels", 1)
    assert info.people is not None and info.people.assessors == ["alice"] and info.people.added == 1
    assert info.people.sensitive_dropped == {"alice.jsonl": 1}
    for name in ("corpus.jsonl", "queries.jsonl"):  # the rest of the judged set is the evaluation set's
        assert (folder / "dataset" / name).read_bytes() == (graph.path("evaluation-set") / name).read_bytes()


def test_a_persons_grade_of_a_memory_the_corpus_lacks_is_refused_naming_their_file(tmp_path: Path) -> None:
    graph = evaluation_set(tmp_path)
    bob = _person(tmp_path / "bob.jsonl", "bob", {"q1": {"zz": 1}})
    with pytest.raises(DatasetError, match=r"bob\.jsonl"):
        judge(graph, [bob])
