"""`recall-kit judge --calibrate`: a balanced sample (each query's labelled positive and the
best-ranked labelled negative), graded by a registered judge, compared with the labels: kappa
with its interval, the confusion matrix, the share of positives, and the verdict's rule."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recall_kit
from recall_kit import RelevanceJudge
from recall_kit.cli import app
from recall_kit.curate.agreement import cohen_kappa
from recall_kit.curate.calibrate import STAND_IN_KAPPA, calibration_sample, pooled_sample
from recall_kit.dataset import load_dataset
from recall_kit.measure.result import SCHEMA

runner = CliRunner()


class ListJudge(RelevanceJudge):
    """Calls relevant exactly the memory ids in its `relevant` option (joined by +)."""

    description = "grades from a list of ids (a test judge)"
    asked: list[tuple[str, str]] = []

    @dataclass(frozen=True)
    class Options:
        model: str = ""
        allow_remote: bool = False
        relevant: str = ""

    def grade(self, query, memory):
        type(self).asked.append((query.query_id, memory.id))
        return 2 if memory.id in self.options.relevant.split("+") else 0

    def provenance(self):
        return {"judge_model": self.options.model}


class Plugin:
    @recall_kit.hookimpl
    def register_judges(self, register):
        register("list", ListJudge)


def _dataset(folder: Path, queries: int) -> Path:
    """`queries` queries q0.., each with one relevant memory (p<i>) and one not listed (n<i>)."""
    folder.mkdir()
    corpus = [{"id": f"{kind}{i}", "content": f"memory {kind} {i}"} for i in range(queries) for kind in "pn"]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in corpus))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i}", "text": f"question {i}", "stratum": "s"}) + "\n" for i in range(queries)))
    (folder / "qrels.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i}", "relevant_ids": [f"p{i}"]}) + "\n" for i in range(queries)))
    return folder


def _result(path: Path, dataset_dir: Path, rankings: dict[str, list[str]]) -> Path:
    dataset = load_dataset(dataset_dir)
    path.write_text(json.dumps({
        "schema": SCHEMA, "system": {"spec": "sys", "label": "sys"}, "k": 10,
        "dataset": {"name": "data", "fingerprint": dataset.fingerprint, "path": str(dataset_dir)},
        "metrics": {"names": [], "overall": {"n": len(rankings)}, "strata": {}},
        "queries": [{"query_id": q, "stratum": "s", "ranking": r, "scores": [float(len(r) - i) for i in range(len(r))],
                     "metrics": {}, "found_by": {}} for q, r in rankings.items()],
    }))
    return path


def test_sample_takes_the_best_ranked_positive_and_hard_negative(tmp_path):
    data = _dataset(tmp_path / "d", 2)
    (data / "qrels.jsonl").write_text(json.dumps({"query_id": "q0", "relevant_ids": ["p0", "p1"]}) + "\n"
                                      + json.dumps({"query_id": "q1", "relevant_ids": ["p1"]}) + "\n")
    dataset = load_dataset(data)
    # q0: p1 ranked above p0, so p1 is its positive; n1 is the best-ranked id not in the qrels.
    # q1: its positive never ranked (taken from the qrels); n0 and n1 are each ranked first once,
    # n1 by both systems: it wins the tie (p0 is no positive of q1, but ranks lower).
    rankings = [{"q0": ["n1", "p1", "p0", "n0"], "q1": ["n1", "p0"]}, {"q1": ["n0", "n1"]}]
    pairs = [(p.query_id, p.doc_id, p.label, p.rank) for p in calibration_sample(dataset, rankings)]
    assert pairs == [("q0", "p1", 1, 2), ("q0", "n1", 0, 1), ("q1", "p1", 1, None), ("q1", "n1", 0, 1)]
    # A person's labels: only ids they judged are used; q1's negatives were never judged, so q1 is out.
    person = {"q0": {"p0": 2, "n0": 0}, "q1": {"p1": 3}}
    pairs = [(p.query_id, p.doc_id, p.label) for p in calibration_sample(dataset, rankings, labels=person)]
    assert pairs == [("q0", "p0", 1), ("q0", "n0", 0)]


def test_calibrate_reports_kappa_confusion_and_verdict(tmp_path, recall_kit_plugin):
    recall_kit_plugin(Plugin(), name="list-judge")
    ListJudge.asked = []
    queries = 20
    data = _dataset(tmp_path / "d", queries)
    result = _result(tmp_path / "r.json", data, {f"q{i}": [f"n{i}", f"p{i}"] for i in range(queries)})
    # The judge gets 17 positives right and calls 3 negatives relevant: TP 17, FN 3, FP 3, TN 17.
    relevant = [f"p{i}" for i in range(17)] + [f"n{i}" for i in range(3)]
    out = tmp_path / "model.jsonl"
    args = ["judge", "--calibrate", str(result), "-d", str(data), "--out", str(out), "--model", "m",
            "-o", f"list.relevant={'+'.join(relevant)}", "--json", str(tmp_path / "c.json")]
    run = runner.invoke(app, args)
    assert run.exit_code == 0, run.output
    found = json.loads((tmp_path / "c.json").read_text())
    expected = cohen_kappa([[17, 3], [3, 17]])  # rows: labels (0, 1); columns: the judge
    assert expected == pytest.approx(1 - 6 / 20)  # 6 disagreements where chance makes 20
    assert found["agreement"]["kappa"] == pytest.approx(expected, abs=1e-6)
    assert found["agreement"]["confusion"] == [[17, 3], [3, 17]]
    low, high = found["agreement"]["kappa_ci"]
    assert low < expected < high
    assert found["share_positive"] == 0.5 and found["judge_share_positive"] == 0.5
    assert found["pairs"] == 2 * queries and found["graded"] == 2 * queries
    # kappa 0.7 >= 0.6, but 40 pairs leave an interval reaching below 0.6: no verdict yet.
    assert expected >= STAND_IN_KAPPA > low and found["verdict"].startswith("not shown: kappa 0.700")
    assert "verdict:" in run.output and "rule: a judge stands in for a person" in run.output
    assert len(ListJudge.asked) == 2 * queries
    # The sample sits beside --out (ids and labels, no text); a rerun grades nothing again.
    sample = [json.loads(line) for line in Path(str(out) + ".sample.jsonl").read_text().splitlines()]
    assert sample[0] == {"query_id": "q0", "doc_ids": ["p0", "n0"], "labels": {"p0": 1, "n0": 0}}
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and len(ListJudge.asked) == 2 * queries


def test_a_perfect_judge_may_stand_in(tmp_path, recall_kit_plugin):
    recall_kit_plugin(Plugin(), name="list-judge")
    queries = 60
    data = _dataset(tmp_path / "d", queries)
    result = _result(tmp_path / "r.json", data, {f"q{i}": [f"n{i}", f"p{i}"] for i in range(queries)})
    relevant = "+".join(f"p{i}" for i in range(queries))
    run = runner.invoke(app, ["judge", "--calibrate", str(result), "-d", str(data), "--out", str(tmp_path / "m.jsonl"),
                              "--model", "m", "-o", f"list.relevant={relevant}", "--pairs", "100"])
    assert run.exit_code == 0, run.output
    assert "calibration sample (balanced): 100 pairs over 50 queries" in run.output
    assert "verdict: yes: the judge may stand in for a person" in run.output


def test_calibrate_refusals_are_one_line(tmp_path, recall_kit_plugin):
    recall_kit_plugin(Plugin(), name="list-judge")
    data = _dataset(tmp_path / "d", 2)
    result = _result(tmp_path / "r.json", data, {"q0": ["p0"], "q1": ["p1"]})
    out = tmp_path / "m.jsonl"
    base = ["judge", "--calibrate", str(result), "-d", str(data), "--out", str(out)]
    no_model = runner.invoke(app, base)
    assert no_model.exit_code == 2 and "pass --judge NAME" in no_model.output
    # No system ranked a non-relevant memory: nothing to calibrate on, and no file left behind.
    nothing = runner.invoke(app, [*base, "--model", "m"])
    assert nothing.exit_code == 2 and "nothing to calibrate on" in nothing.output
    assert len(nothing.output.strip().splitlines()) == 1
    assert not out.exists()
    odd = runner.invoke(app, [*base, "--model", "m", "--pairs", "3"])
    assert odd.exit_code == 2 and "--pairs must be an even number" in odd.output
    stray = runner.invoke(app, ["judge", str(result), "-d", str(data), "--out", str(out), "--pairs", "4"])
    assert stray.exit_code == 2 and "go with --calibrate" in stray.output
    both = runner.invoke(app, [*base, "--model", "m", "--pairs", "2", "--depth", "2"])
    assert both.exit_code == 2 and "give one" in both.output and len(both.output.strip().splitlines()) == 1
    shallow = runner.invoke(app, [*base, "--judge", "answer", "--depth", "0"])
    assert shallow.exit_code == 2 and "--depth must be at least 1" in shallow.output


def test_pooled_sample_takes_every_top_pair_and_the_relevant_ones(tmp_path):
    data = _dataset(tmp_path / "d", 2)
    dataset = load_dataset(data)
    rankings = [{"q0": ["n1", "p1", "p0", "n0"], "q1": ["n1"]}, {"q1": ["n0", "n1"]}]
    pairs = [(p.query_id, p.doc_id, p.label, p.rank) for p in pooled_sample(dataset, rankings, None, depth=2)]
    # q0: its top 2 (n1, p1: not in q0's qrels, so not relevant) and its relevant p0, never in a top 2.
    # q1: n1 (best rank 1 in both), n0, then its relevant p1.
    assert pairs == [("q0", "n1", 0, 1), ("q0", "p1", 0, 2), ("q0", "p0", 1, None),
                     ("q1", "n1", 0, 1), ("q1", "n0", 0, 1), ("q1", "p1", 1, None)]
    # A person's labels: only the pairs they labelled.
    person = {"q0": {"p0": 2, "n1": 0}, "q1": {"n0": 0}}
    pairs = [(p.query_id, p.doc_id, p.label) for p in pooled_sample(dataset, rankings, person, depth=2)]
    assert pairs == [("q0", "n1", 0), ("q0", "p0", 1), ("q1", "n0", 0)]  # q1: its one labelled pair


def _answered(folder: Path) -> Path:
    """Four queries in two strata, each with an answer; p<i> holds it, n<i> does not."""
    folder.mkdir()
    corpus = [{"id": f"p{i}", "content": f"the colour was teal number {i}"} for i in range(4)]
    corpus += [{"id": f"n{i}", "content": f"nothing here {i}"} for i in range(4)]
    corpus[3] = {"id": "p3", "content": "something else entirely"}  # p3 lacks its answer
    corpus[4] = {"id": "n0", "content": "teal, as it happens"}  # n0 holds q0's answer
    (folder / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(
        {"query_id": f"q{i}", "text": f"which colour {i}", "stratum": "ab"[i % 2], "answer": "teal"}) + "\n"
        for i in range(4)))
    (folder / "qrels.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i}", "relevant_ids": [f"p{i}"]}) + "\n" for i in range(4)))
    return folder


def test_a_judge_without_a_model_calibrates_with_sensitivity_and_specificity_per_stratum(tmp_path):
    data = _answered(tmp_path / "d")
    result = _result(tmp_path / "r.json", data, {f"q{i}": [f"n{i}", f"p{i}"] for i in range(4)})
    run = runner.invoke(app, ["judge", "--calibrate", str(result), "-d", str(data), "--judge", "answer",
                              "--depth", "1", "--out", str(tmp_path / "a.jsonl"), "--json", str(tmp_path / "a.json")])
    assert run.exit_code == 0, run.output
    found = json.loads((tmp_path / "a.json").read_text())
    assert found["sample"] == "pool@1" and found["pairs"] == 8
    strata = found["agreement"]["binary_against_a"]
    # Relevant pairs p0..p3: the judge finds p0, p1, p2 (sensitivity 3/4); not relevant n0..n3: it
    # calls n0 relevant (specificity 3/4). Stratum a (q0, q2): p0, p2 found, n0 wrong: 2/2 and 1/2.
    assert strata["all"]["sensitivity"] == pytest.approx(0.75) and strata["all"]["specificity"] == pytest.approx(0.75)
    assert strata["all"]["kappa"] == pytest.approx(cohen_kappa([[3, 1], [1, 3]]))
    assert strata["a"]["sensitivity"] == 1.0 and strata["a"]["specificity"] == 0.5
    assert strata["b"]["sensitivity"] == 0.5 and strata["b"]["specificity"] == 1.0
    assert found["seconds_per_1000_pairs"] is not None
    assert "b: n 4 (2 relevant), kappa 0.500" in run.output


class LearnsJudge(RelevanceJudge):
    """Calls relevant what its context's labels call relevant, for queries it was fitted on."""

    description = "repeats the labels it was fitted on (a test judge)"
    learns = True
    seen = None

    def fit(self, context):
        type(self).seen = context

    def grade(self, query, memory):
        return 2 if self.seen.labels.get(query.query_id, {}).get(memory.id, 0) >= 1 else 0


class LearnsPlugin:
    @recall_kit.hookimpl
    def register_judges(self, register):
        register("learns", LearnsJudge)


def test_a_judge_that_learns_is_fitted_on_the_sample_and_refused_without_labels(tmp_path, recall_kit_plugin):
    recall_kit_plugin(LearnsPlugin(), name="learns-judge")
    data = _dataset(tmp_path / "d", 3)
    result = _result(tmp_path / "r.json", data, {f"q{i}": [f"n{i}", f"p{i}"] for i in range(3)})
    run = runner.invoke(app, ["judge", "--calibrate", str(result), "-d", str(data), "--judge", "learns",
                              "--out", str(tmp_path / "l.jsonl")])
    assert run.exit_code == 0, run.output
    context = LearnsJudge.seen
    assert context.labels == {f"q{i}": {f"p{i}": 1, f"n{i}": 0} for i in range(3)}
    assert context.systems == ("sys",)
    assert context.evidence[("q0", "n0")].ranks == {context.systems[0]: 1}
    assert context.evidence[("q0", "p0")].scores == {context.systems[0]: 1.0}
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"query_id": "q0", "doc_ids": ["n0"]}) + "\n")
    plain = runner.invoke(app, ["judge", str(pool), "-d", str(data), "--judge", "learns", "--out", str(tmp_path / "x.jsonl")])
    assert plain.exit_code == 2 and "learns from labelled pairs" in plain.output
    assert not (tmp_path / "x.jsonl").exists()
