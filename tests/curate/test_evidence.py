"""What the systems said about each pair (ranks, scores, leg ranks), the qrels taken as complete
over them, and a learning judge measured on the labels it learnt from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recall_kit.curate.agreement import cohen_kappa
from recall_kit.curate.evidence import complete_labels, judging_context, measured_on_labels, pair_evidence
from recall_kit.dataset import load_dataset
from recall_kit.measure.result import SCHEMA, BenchmarkResult
from recall_kit.types import RelevanceJudge


def _dataset(folder: Path) -> Path:
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "content": f"memory {d}"}) + "\n"
                                                 for d in ("a", "b", "c", "d")))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"query_id": q, "text": f"question {q}", "stratum": "s"})
                                                  + "\n" for q in ("q1", "q2")))
    (folder / "qrels.jsonl").write_text(json.dumps({"query_id": "q1", "relevant_ids": ["a"]}) + "\n"
                                        + json.dumps({"query_id": "q2", "relevant_ids": ["d"]}) + "\n")
    return folder


def _result(folder: Path, label: str, rankings: dict[str, list[str]], found_by: dict[str, dict[str, dict[str, int]]]) -> BenchmarkResult:
    dataset = load_dataset(folder)
    path = folder.parent / f"{label}.json"
    path.write_text(json.dumps({
        "schema": SCHEMA, "system": {"spec": label, "label": label}, "k": 10,
        "dataset": {"name": "data", "fingerprint": dataset.fingerprint, "path": str(folder)},
        "metrics": {"names": [], "overall": {"n": len(rankings)}, "strata": {}},
        "queries": [{"query_id": q, "stratum": "s", "ranking": r, "scores": [10.0 - i for i in range(len(r))],
                     "metrics": {}, "found_by": found_by.get(q, {})} for q, r in rankings.items()],
    }))
    return BenchmarkResult.load(path)


def test_evidence_holds_each_systems_rank_and_score_and_each_legs_best_rank(tmp_path):
    data = _dataset(tmp_path / "d")
    one = _result(data, "one", {"q1": ["b", "a"]}, {"q1": {"b": {"bm25": 1, "dense": 4}, "a": {"dense": 1}}})
    two = _result(data, "two", {"q1": ["a"], "q2": ["c"]}, {"q1": {"a": {"dense": 3, "bm25": 2}}})
    evidence = pair_evidence([("one", one), ("two", two)])
    assert evidence[("q1", "a")].ranks == {"one": 2, "two": 1}
    assert evidence[("q1", "a")].scores == {"one": 9.0, "two": 10.0}
    assert evidence[("q1", "a")].leg_ranks == {"dense": 1, "bm25": 2}  # the best of both systems' legs
    assert evidence[("q1", "b")].leg_ranks == {"bm25": 1, "dense": 4}
    assert sorted(evidence) == [("q1", "a"), ("q1", "b"), ("q2", "c")]
    # The qrels taken as complete: ranked ids they do not list are not relevant; a listed id stays.
    labels = complete_labels({"q1": {"a": 1}, "q2": {"d": 1}}, evidence)
    assert labels == {"q1": {"a": 1, "b": 0}, "q2": {"d": 1, "c": 0}}
    context = judging_context(load_dataset(data), [("one", one), ("two", two)], labels, seed=4)
    assert context.systems == ("one", "two") and context.legs == ("bm25", "dense") and context.seed == 4


class FirstLetter(RelevanceJudge):
    """Relevant when the memory's id is "a" or "c": right on a, wrong on c."""

    def grade(self, query, memory):
        return 2 if memory.id in ("a", "c") else 0


def test_a_judge_is_measured_on_the_labelled_pairs(tmp_path):
    data = _dataset(tmp_path / "d")
    result = _result(data, "one", {"q1": ["b", "a"], "q2": ["c", "d"]}, {})
    named = [("one", result)]
    labels = complete_labels(load_dataset(data).qrels, pair_evidence(named))
    measured = measured_on_labels(FirstLetter(), judging_context(load_dataset(data), named, labels), samples=50)
    # Labels: a 1, b 0, d 1, c 0; the judge: a 1, b 0, d 0, c 1 -> confusion [[1, 1], [1, 1]].
    assert measured.n == 4 and measured.kappa == pytest.approx(cohen_kappa([[1, 1], [1, 1]]))
    assert measured.sensitivity == 0.5 and measured.specificity == 0.5
