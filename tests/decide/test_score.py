"""`score_files` returns a typed `ScoredRuns`; `recall_kit.compare` scores and compares runs held
in memory with the same kernel, its values equal to `score_files` on the same runs as TREC files."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import recall_kit
from recall_kit import Hit
from recall_kit.decide.score import ScoredRuns, ScoreOptions, compare, score_files
from recall_kit.measure.score.trec import write_qrels

QRELS = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 1}}
#: mrr of A: 1, 1/2, 1, 0; of B: 1, 1, 1/2, 1 (the runs of tests/cli/test_cli.py's _two_runs).
RUN_A = {"q1": {"a": 2}, "q2": {"x": 2, "b": 1}, "q3": {"c": 2}, "q4": {"y": 2}}
RUN_B = {"q1": {"a": 2}, "q2": {"b": 2}, "q3": {"x": 2, "c": 1}, "q4": {"d": 2}}


def _write_run(path, run, tag):
    """A run as a TREC file, each query's lines in an order of their own (trec_eval re-sorts)."""
    lines = [f"{qid} Q0 {doc} {rank} {score!r} {tag}"
             for qid, docs in run.items() for rank, (doc, score) in enumerate(reversed(list(docs.items())), 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_compare_by_hand_and_exported_as_ranx_exports_it():
    assert recall_kit.compare is compare and recall_kit.ScoredRuns is ScoredRuns
    scored = recall_kit.compare(QRELS, {"A": RUN_A, "B": RUN_B}, ["mrr", "recall@1"], n_resamples=2000)
    assert isinstance(scored, ScoredRuns)
    assert [run.mean("mrr") for run in scored.runs] == [0.625, 0.875]
    assert scored.run("B").per_query("mrr") == {"q1": 1.0, "q2": 1.0, "q3": 0.5, "q4": 1.0}
    assert scored.run("A").n_queries == 4 and "n" not in scored.runs[0].overall
    row = scored.comparison.row("B", "mrr")
    # Differences 0, +1/2, -1/2, +1: delta 1/4; the exact randomisation test over the three
    # non-zero differences: |sum| >= 1 for 6 of their 8 sign patterns, p = 3/4.
    assert row.delta == 0.25 and row.p_value == 0.75 and row.family == "primary"
    assert (row.wins, row.ties, row.losses) == (2, 1, 1)
    assert scored.comparison.row("B", "recall@1").family == "exploratory"


def test_run_forms_agree_hits_pairs_ids_and_mappings():
    as_pairs = {qid: [(doc, score) for doc, score in docs.items()] for qid, docs in RUN_A.items()}
    as_hits = {qid: [Hit(doc, score) for doc, score in docs.items()] for qid, docs in RUN_A.items()}
    as_ids = {"q1": ["a"], "q2": ["x", "b"], "q3": ["c"], "q4": ["y"]}
    means = [compare(QRELS, {"A": run}, ["mrr", "ndcg@3"]).runs[0].overall for run in (RUN_A, as_pairs, as_hits, as_ids)]
    assert all(mean == means[0] for mean in means)
    # Ties go to the higher id, as trec_eval orders them: b before a at one score.
    tied = compare({"q": {"a": 1}}, {"t": {"q": [("a", 1.0), ("b", 1.0)]}}, ["mrr"])
    assert tied.runs[0].mean("mrr") == 0.5


def test_compare_refuses_bad_input_in_one_line():
    with pytest.raises(recall_kit.RecallKitError, match="grade 'x'"):
        compare({"q": {"a": "x"}}, {"A": {"q": {"a": 1}}})
    with pytest.raises(recall_kit.RecallKitError, match=r"expected \(doc_id, score\) pairs"):
        compare(QRELS, {"A": {"q1": [("a", 1.0, 2)]}})
    with pytest.raises(recall_kit.RecallKitError, match="holds document 'a' twice"):
        compare(QRELS, {"A": {"q1": [("a", 2.0), Hit("a", 1.0)]}})
    with pytest.raises(recall_kit.RecallKitError, match="a score is NaN"):
        compare(QRELS, {"A": {"q1": [("a", float("nan"))]}})
    with pytest.raises(recall_kit.RecallKitError, match="shares no query"):
        compare(QRELS, {"A": {"q9": {"a": 1}}})
    with pytest.raises(recall_kit.RecallKitError, match="at least one run"):
        compare(QRELS, {})


def _random_case(seed: int):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(30)]
    qrels = {f"q{q:02d}": {doc: rng.choice([0, 1, 1, 2]) for doc in rng.sample(docs, rng.randint(1, 8))}
             for q in range(25)}
    runs = {}
    for name in ("base", "one", "two"):
        runs[name] = {qid: {doc: float(rng.choice([1, 2, 3, 3, 4, 5.5])) for doc in rng.sample(docs, rng.randint(1, 15))}
                      for qid in rng.sample(sorted(qrels), 22)}  # ties, and some queries missing
    return qrels, runs


@pytest.mark.parametrize("settings", [
    {},
    {"complete": True, "depth": 5, "relevance_level": 2},
    {"judged_only": True, "ties": "float64", "test": "t-test", "primary": ["ndcg_cut_10", "P_5"]},
])
def test_compare_equals_score_files_on_the_same_runs_as_trec_files(tmp_path, settings):
    qrels, runs = _random_case(7)
    write_qrels(tmp_path / "qrels.trec", qrels)
    paths = [_write_run(tmp_path / f"{name}.trec", run, name) for name, run in runs.items()]
    metrics = ["ndcg@10", "map", "precision@5", "recall@10", "mrr", "num_ret", "bpref"]
    in_memory = compare(qrels, runs, metrics, n_resamples=500, **settings)
    from_files = score_files(tmp_path / "qrels.trec", paths, metrics, n_resamples=500, **settings)
    ours, theirs = in_memory.to_dict(), from_files.to_dict()
    for data in (ours, theirs):
        data.pop("qrels")
        for run in data["runs"]:
            run.pop("run"), run.pop("label")
    theirs["comparison"] = json.loads(json.dumps(theirs["comparison"]).replace(".trec", ""))
    theirs["warnings"] = [w.replace(".trec", "") for w in theirs["warnings"]]
    # Depth warnings name the run's file or the run: the same numbers, in other words.
    ours["warnings"] = theirs["warnings"] = []
    assert ours == theirs
    assert set(in_memory.comparison.pairwise) >= {"ndcg@10", "mrr"}  # three runs: every pair too


def test_per_query_values_match_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, runs = _random_case(11)
    scored = compare(qrels, runs, ["ndcg@10", "map", "precision@5", "recall@10", "mrr", "bpref"], n_resamples=50)
    names = {"ndcg@10": "ndcg_cut_10", "map": "map", "precision@5": "P_5", "recall@10": "recall_10",
             "mrr": "recip_rank", "bpref": "bpref"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "P.5", "recall.10", "recip_rank", "bpref"})
    for run in scored.runs:
        expected = evaluator.evaluate(runs[run.label])
        assert run.query_ids == sorted(expected)
        for ours, theirs in names.items():
            got = run.per_query(ours)
            for qid in run.query_ids:
                assert got[qid] == pytest.approx(expected[qid][theirs], abs=1e-9), (run.label, qid, ours)


def test_score_files_json_is_what_score_json_writes(tmp_path):
    from typer.testing import CliRunner

    from recall_kit.cli import app

    write_qrels(tmp_path / "qrels.trec", QRELS)
    a = _write_run(tmp_path / "A.run", RUN_A, "A")
    b = _write_run(tmp_path / "B.run", RUN_B, "B")
    out = tmp_path / "score.json"
    done = CliRunner().invoke(app, ["score", "--qrels", str(tmp_path / "qrels.trec"), "--run", str(a), "--run", str(b),
                                    "-m", "mrr", "--resamples", "300", "--json", str(out)])
    assert done.exit_code == 0, done.output
    scored = score_files(tmp_path / "qrels.trec", [a, b], ["mrr"], n_resamples=300)
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(scored.to_dict()))
    assert list(written) == ["qrels", "complete", "ties", "runs", "comparison", "warnings",
                             "relevance_level", "judged_only", "depth"]
    assert list(written["runs"][0]) == ["run", "label", "overall", "queries"]
    assert written["runs"][1]["queries"]["q3"] == {"mrr": 0.5}
    one = score_files(tmp_path / "qrels.trec", [a], ["mrr"])
    assert list(one.to_dict()) == ["qrels", "complete", "ties", "run", "overall", "queries", "warnings",
                                   "relevance_level", "judged_only", "depth"]
    assert one.comparison is None and one.to_dict()["overall"] == {"mrr": 0.625, "n": 4}
    # The report is rendered from the object: per-query rows only when asked; its data is the JSON.
    assert one.report().data == one.to_dict()
    assert len(one.report().tables[0].rows) == 1 and len(one.report(per_query=True).tables[0].rows) == 5
    assert [t.title for t in scored.report().tables][1:] == ["B.run vs A.run (baseline)"]
    assert np.isclose(scored.comparison.row("B.run", "mrr").delta, 0.25)


def test_both_take_one_options_value_or_its_keywords(tmp_path):
    # ScoreOptions declares the dozen settings once: given whole, as keywords, or both (the keywords
    # override), score_files and compare score alike; a misspelt setting is refused by name.
    options = ScoreOptions(judged_only=True, primary=["recall@1"], n_resamples=300, seed=4)
    whole = compare(QRELS, {"A": RUN_A, "B": RUN_B}, ["mrr", "recall@1"], options)
    loose = compare(QRELS, {"A": RUN_A, "B": RUN_B}, ["mrr", "recall@1"], judged_only=True, primary=["recall@1"],
                    n_resamples=300, seed=4)
    assert whole.to_dict() == loose.to_dict() and whole.judged_only
    over = compare(QRELS, {"A": RUN_A, "B": RUN_B}, ["mrr", "recall@1"], options, judged_only=False)
    assert not over.judged_only and over.comparison is not None and over.comparison.primary == ["recall@1"]
    write_qrels(tmp_path / "qrels.trec", QRELS)
    run = _write_run(tmp_path / "A.trec", RUN_A, "A")
    assert score_files(tmp_path / "qrels.trec", [run], ["mrr"], options).judged_only
    with pytest.raises(TypeError, match="'judged'"):
        score_files(tmp_path / "qrels.trec", [run], ["mrr"], judged=True)
