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
from recall_kit.curate.calibrate import STAND_IN_KAPPA, calibration_sample
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
    assert "calibration sample: 100 pairs over 50 queries" in run.output
    assert "verdict: yes: the judge may stand in for a person" in run.output


def test_calibrate_refusals_are_one_line(tmp_path, recall_kit_plugin):
    recall_kit_plugin(Plugin(), name="list-judge")
    data = _dataset(tmp_path / "d", 2)
    result = _result(tmp_path / "r.json", data, {"q0": ["p0"], "q1": ["p1"]})
    out = tmp_path / "m.jsonl"
    base = ["judge", "--calibrate", str(result), "-d", str(data), "--out", str(out)]
    no_model = runner.invoke(app, base)
    assert no_model.exit_code == 2 and "pass --model NAME" in no_model.output
    # No system ranked a non-relevant memory: nothing to calibrate on, and no file left behind.
    nothing = runner.invoke(app, [*base, "--model", "m"])
    assert nothing.exit_code == 2 and "nothing to calibrate on" in nothing.output
    assert len(nothing.output.strip().splitlines()) == 1
    assert not out.exists()
    odd = runner.invoke(app, [*base, "--model", "m", "--pairs", "3"])
    assert odd.exit_code == 2 and "--pairs must be an even number" in odd.output
    stray = runner.invoke(app, ["judge", str(result), "-d", str(data), "--out", str(out), "--pairs", "4"])
    assert stray.exit_code == 2 and "go with --calibrate" in stray.output
