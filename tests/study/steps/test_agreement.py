"""The agreement step (recall_kit.study.steps.agreement): it says why it was not measured, and measures
a second judge's grades against the user's qrels; one command reproduces it."""

from __future__ import annotations

from pathlib import Path

from study.steps.test_corpus import _jsonl, evaluation_set  # tests/ is on sys.path (conftest.py)
from study.steps.test_judgments import judge

from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.agreement import AgreementReads, agreement_command, measure_agreement


def test_agreement_says_why_it_was_not_measured_and_measures_a_second_judge_against_the_qrels(
        tmp_path: Path) -> None:
    graph = evaluation_set(tmp_path)
    judge(graph, [])
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
