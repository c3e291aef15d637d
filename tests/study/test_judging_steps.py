"""The study's judging steps (recall_kit.study.steps.pool, recall_kit.study.steps.judgments,
recall_kit.study.steps.agreement): the pool of every system's unjudged top
ids, the judgments (the user's qrels first, then people's grades, a grade of a sensitive memory
dropped and counted, an unknown id refused naming the person's file) and the agreement step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from study.test_dataset_steps import _jsonl, _steps, _study  # tests/ is on sys.path (conftest.py)

from recall_kit.dataset import load_dataset
from recall_kit.errors import DatasetError
from recall_kit.measure.run.runner import run_benchmark
from recall_kit.measure.systems.system import SystemSpec
from recall_kit.study.config import load_study
from recall_kit.study.outputs import JudgmentsOutput, PoolOutput, read_output
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.pipeline.graph import StudyGraph
from recall_kit.study.steps.agreement import AgreementReads, agreement_command, measure_agreement
from recall_kit.study.steps.corpus import corpus_reads, make_corpus
from recall_kit.study.steps.evaluation_set import evaluation_set_reads, make_evaluation_set
from recall_kit.study.steps.judgments import JudgmentsReads, make_judgments
from recall_kit.study.steps.pool import PoolReads, make_pool, pool_command


def _evaluation_set(tmp_path: Path) -> StudyGraph:
    """The dataset steps run on tests/study/test_dataset_steps.py's store (c is sensitive):
    q1 judged a, q3 judged b."""
    config = load_study(_study(tmp_path))
    graph, corpus = _steps(tmp_path)
    make_corpus(corpus_reads(config), Artefacts(lambda: graph, "corpus", []), corpus)
    graph.path("evaluation-set").mkdir()
    make_evaluation_set(evaluation_set_reads(config), Artefacts(lambda: graph, "evaluation-set", ["corpus"]),
                        graph.path("evaluation-set"))
    return graph


def _person(path: Path, assessor: str, grades: dict[str, dict[str, int]]) -> str:
    _jsonl(path, [{"query_id": query, "relevance": judged, "assessor": assessor, "judged_at": {}}
                  for query, judged in grades.items()])
    return str(path)


def _judge(graph: StudyGraph, people: list[str]) -> Path:
    folder = graph.path("judgments")
    folder.mkdir()
    reads = JudgmentsReads("study.toml", "qrels", dict.fromkeys(people))
    make_judgments(reads, Artefacts(lambda: graph, "judgments", ["evaluation-set", "pool"]), folder)
    return folder


def test_peoples_grades_fill_only_what_the_users_qrels_leave_and_a_sensitive_ones_are_counted(
        tmp_path: Path) -> None:
    graph = _evaluation_set(tmp_path)
    alice = _person(tmp_path / "alice.jsonl", "alice", {"q1": {"a": 0, "b": 2}, "q3": {"c": 3}})
    folder = _judge(graph, [alice])
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
    graph = _evaluation_set(tmp_path)
    bob = _person(tmp_path / "bob.jsonl", "bob", {"q1": {"zz": 1}})
    with pytest.raises(DatasetError, match=r"bob\.jsonl"):
        _judge(graph, [bob])


def test_the_pool_holds_each_systems_unjudged_top_ids(tmp_path: Path, overlap_plugin: object) -> None:
    graph = _evaluation_set(tmp_path)
    dataset = load_dataset(graph.path("evaluation-set"))
    run = graph.path("run/overlap")
    run.mkdir(parents=True)
    result = run_benchmark(SystemSpec("overlap"), dataset, k=5, metrics=["recall@5"], latency_sample=0, seed=0,
                           show_progress=False)
    result.save(run / "result.json")
    folder = graph.path("pool")
    folder.mkdir()
    reads = PoolReads(["overlap"], depth=5, hook_k=2)
    make_pool(reads, Artefacts(lambda: graph, "pool", ["evaluation-set", "run/overlap"]), folder)
    rows = [json.loads(line) for line in (folder / "pool.jsonl").read_text().splitlines()]
    judged = {query: set(grades) for query, grades in dataset.qrels.items()}
    pooled = {(row["query_id"], doc) for row in rows for doc in row["doc_ids"]}
    returned = {(query, doc) for query, ranking in result.rankings().items() for doc in ranking[:5]}
    assert pooled == {(query, doc) for query, doc in returned if doc not in judged.get(query, set())}
    summary = read_output(PoolOutput, folder / "pool.json")
    assert (summary.depth, summary.ids, summary.queries) == (5, len(pooled), len(rows))
    at_hook = [(query, doc) for query, ranking in result.rankings().items() for doc in ranking[:2]]
    unjudged = sum(1 for query, doc in at_hook if doc not in judged.get(query, set()))
    assert summary.unjudged_share_at_hook_k == {"overlap": round(unjudged / len(at_hook), 4)}
    assert pool_command(reads, tmp_path) == ("recall-kit pool steps/run/overlap/result.json --depth 5 "
                                             "--dataset steps/evaluation-set --out pool.jsonl")


def test_agreement_says_why_it_was_not_measured_and_measures_a_second_judge_against_the_qrels(
        tmp_path: Path) -> None:
    graph = _evaluation_set(tmp_path)
    _judge(graph, [])
    artefacts = Artefacts(lambda: graph, "agreement", ["evaluation-set", "judgments"])
    alone = measure_agreement(AgreementReads("qrels", None, None, seed=0), artefacts)
    assert not alone.measured and "[judging] agreement names no second one" in (alone.why or "")
    assert agreement_command(AgreementReads("qrels", None, None, seed=0), tmp_path) is None
    second = _jsonl(tmp_path / "second.jsonl", [{"query_id": "q1", "relevance": {"a": 1, "b": 0, "d": 0}},
                                                {"query_id": "q3", "relevance": {"b": 1, "a": 0, "d": 1}}])
    reads = AgreementReads("qrels", str(second), None, seed=0)
    measured = measure_agreement(reads, artefacts)
    assert measured.measured and measured.against == "the user's qrels" and measured.n is not None
    assert agreement_command(reads, tmp_path / "out") == (
        "recall-kit agreement ../second.jsonl steps/judgments/dataset/qrels.jsonl --seed 0")
