"""Bounds on what unjudged hits can do to a paired comparison, and the order to judge them in
(recall_kit/decide/holes.py): hand-worked cases, then brute force over every labelling."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from recall_kit.decide.holes import (
    BoundsError,
    Contrast,
    Holes,
    holes_of,
    labelling_values,
    metric_spec,
    reads_grades,
    verdict_of,
)
from recall_kit.measure.score.evaluation import judge_rankings


def _holes(rankings, qrels, metric, test="randomisation", family=None):
    queries = tuple(sorted(rankings["A"]))
    return Holes(rankings, qrels, [Contrast("A", "B", metric, "overall", queries, family)], test=test)


def test_precision_hand_worked():
    # baseline [a, x], candidate [y, a], only a judged (relevant): delta = (y - x) / 2.
    holes = _holes({"A": {"q": ["a", "x"]}, "B": {"q": ["y", "a"]}}, {"q": {"a": 1}}, "precision@2")
    bound = holes.bound(0)
    assert (bound.delta, bound.low, bound.high, bound.all_relevant) == (0.0, -0.5, 0.5, 0.0)
    assert bound.holes == 2 and bound.movers == 2
    table = holes.table(holes.contrasts[0], "q")
    assert table.weights() == {"x": 0.5, "y": 0.5}


def test_recall_hand_worked():
    # R = 1 + x + y; baseline (1 + x) / R, candidate (1 + y) / R.
    bound = _holes({"A": {"q": ["a", "x"]}, "B": {"q": ["y", "a"]}}, {"q": {"a": 1}}, "recall@2").bound(0)
    assert (bound.low, bound.high, bound.all_relevant) == (-0.5, 0.5, 0.0)


def test_mrr_hole_below_the_first_relevant_weighs_nothing():
    # baseline's first relevant is at rank 1 whatever x is; the candidate's is 1 if y, else 1/2.
    holes = _holes({"A": {"q": ["a", "x"]}, "B": {"q": ["y", "a"]}}, {"q": {"a": 1}}, "mrr@2")
    bound = holes.bound(0)
    assert (bound.delta, bound.low, bound.high) == (-0.5, -0.5, 0.0)
    assert holes.table(holes.contrasts[0], "q").weights() == {"x": 0.0, "y": 0.5}
    assert bound.movers == 1


def test_a_hole_in_both_tops_weighs_nothing_for_precision_but_may_for_mrr():
    rankings = {"A": {"q": ["z", "a"]}, "B": {"q": ["a", "z"]}}
    precision = _holes(rankings, {"q": {"a": 1}}, "precision@2")
    assert precision.table(precision.contrasts[0], "q").weights() == {"z": 0.0}
    assert precision.bound(0).movers == 0
    mrr = _holes(rankings, {"q": {"a": 1}}, "mrr@2")
    # baseline 1 if z else 1/2; candidate 1: delta 0 or 1/2.
    assert mrr.table(mrr.contrasts[0], "q").weights() == {"z": 0.5}
    assert (mrr.bound(0).low, mrr.bound(0).high) == (0.0, 0.5)


def test_negative_grade_is_a_hole_and_judged_zero_is_not():
    assert holes_of({"a": 1, "b": 0, "c": -1}, ["a", "b", "c", "d"]) == ("c", "d")


def test_whole_ranking_metric_is_refused():
    with pytest.raises(BoundsError, match="rank cutoff"):
        metric_spec("mrr")


def test_too_many_holes_is_refused():
    spec = metric_spec("precision@20")
    ranking = [f"d{i}" for i in range(20)]
    with pytest.raises(BoundsError, match="at most 12"):
        labelling_values([spec], [ranking], {}, holes_of({}, ranking))


def test_verdict_of():
    assert verdict_of(0.1, 0.01) == "better"
    assert verdict_of(-0.1, 0.01) == "worse"
    assert verdict_of(0.1, 0.2) == "no difference"


def _brute_force(rankings, qrels, metric, k):
    """min and max mean delta over every joint labelling of every unjudged id either ranking holds
    (each 0 or 1; each 0-3 for a metric that reads grades), and the deltas with none and all at 1."""
    spec = metric_spec(metric)
    queries = sorted(rankings["A"])
    unjudged = sorted({(q, d) for q in queries for s in "AB" for d in rankings[s][q] if qrels[q].get(d, -1) < 0})
    deltas = []
    grades = (0, 1, 2, 3) if reads_grades(spec) else (0, 1)
    for bits in itertools.product(grades, repeat=len(unjudged)):
        labelled = {q: dict(qrels[q]) for q in queries}
        for (q, d), bit in zip(unjudged, bits, strict=True):
            labelled[q][d] = bit
        values = {}
        for s in "AB":
            data = judge_rankings(queries, [rankings[s][q] for q in queries], labelled, complete=True)
            values[s] = spec.compute(data)
        deltas.append(float((values["B"] - values["A"]).mean()))
    every = deltas[sum(grades.index(1) * len(grades) ** i for i in range(len(unjudged)))]
    return min(deltas), max(deltas), deltas[0], every


@pytest.mark.parametrize("metric", ["precision@3", "recall@3", "mrr@3", "ndcg@3", "hit@3", "map@3"])
@pytest.mark.parametrize("seed", range(6))
def test_bounds_agree_with_brute_force(metric, seed):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(6)]
    rankings = {"A": {}, "B": {}}
    qrels = {}
    for q in ("q1", "q2"):
        for s in "AB":
            rankings[s][q] = rng.sample(docs, 4)  # ranks past k hold unjudged ids the bounds must ignore
        qrels[q] = {d: rng.choice([0, 1, 2]) for d in rng.sample(docs, 3)}
    holes = _holes(rankings, qrels, metric)
    bound = holes.bound(0)
    k = 3
    cut = {s: {q: r[:k] for q, r in rankings[s].items()} for s in "AB"}
    low, high, none, every = _brute_force(cut, qrels, metric, k)
    assert bound.low == pytest.approx(low) and bound.high == pytest.approx(high)
    assert bound.delta == pytest.approx(none) and bound.all_relevant == pytest.approx(every)


@pytest.mark.parametrize("metric", ["ndcg@5", "ndcg_exp@5", "dcg@5"])
@pytest.mark.parametrize("seed", range(4))
def test_graded_bounds_are_the_true_extremes_with_many_holes(metric, seed):
    """nDCG with the page's grades 0-3 and 6-8 holes in one query's two tops (past every-grade
    enumeration): the bounds equal every 0-3 labelling brute-forced (issue 60: [-0.1066, +0.1066]
    reported where the labellings reach [-0.1480, +0.1451])."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(8)]
    a = rng.sample(docs[:5], 5)
    b = rng.sample(rng.sample(a, 2) + docs[5:], 5)
    judged = {rng.choice(sorted(set(a) | set(b))): rng.choice([0, 1, 2, 3]),
              "elsewhere": rng.choice([1, 2, 3])}  # relevant, in neither top: it sits in the ideal DCG
    holes = _holes({"A": {"q": a}, "B": {"q": b}}, {"q": judged}, metric)
    assert len(holes.table(holes.contrasts[0], "q").holes) == 7
    unjudged = [d for d in dict.fromkeys(a + b) if d not in judged]
    labelled = {f"{i}": {**judged, **dict(zip(unjudged, grades, strict=True))}
                for i, grades in enumerate(itertools.product((0, 1, 2, 3), repeat=len(unjudged)))}
    spec = metric_spec(metric)
    deltas = (spec.compute(judge_rankings(list(labelled), [b] * len(labelled), labelled, complete=True))
              - spec.compute(judge_rankings(list(labelled), [a] * len(labelled), labelled, complete=True)))
    low, high = deltas.min(), deltas.max()
    bound = holes.bound(0)
    assert bound.low == pytest.approx(low) and bound.high == pytest.approx(high)
    assert bound.delta == pytest.approx(deltas[0])


def test_grade_reading_is_probed_not_listed():
    assert reads_grades(metric_spec("ndcg@5")) and reads_grades(metric_spec("err@5"))
    assert not any(reads_grades(metric_spec(m)) for m in ("recall@5", "precision@5", "mrr@5", "hit@5", "map@5"))


def test_a_graded_metric_outside_the_dcg_family_with_many_holes_is_refused_naming_it():
    ranking_a, ranking_b = [f"a{i}" for i in range(5)], [f"b{i}" for i in range(5)]
    with pytest.raises(BoundsError, match="err@5 reads grades 0-3: .* at most 5 .* a query has 10"):
        _holes({"A": {"q": ranking_a}, "B": {"q": ranking_b}}, {"q": {}}, "err@5")


def test_labels_narrow_the_bounds_until_settled():
    rng = random.Random(3)
    docs = [f"d{i}" for i in range(12)]
    rankings = {"A": {}, "B": {}}
    truth, qrels = {}, {}
    for i in range(30):
        q = f"q{i}"
        rankings["A"][q] = rng.sample(docs, 3)
        rankings["B"][q] = rng.sample(docs, 3)
        truth[q] = {d: int(rng.random() < 0.4) for d in docs}
        qrels[q] = {rankings["B"][q][0]: 1}
    holes = _holes(rankings, qrels, "precision@3")
    first = holes.bound(0)
    assert first.can_flip and first.low < first.delta <= first.high
    steps = 0
    while not holes.settled:
        query, doc, weight = holes.order()[0]
        assert weight > 0
        holes.order().clear()  # each call's list is the caller's: the order kept between labels is not touched
        holes.label(query, doc, truth[query][doc])
        assert (query, doc) not in {(q, d) for q, d, _ in holes.order()}  # a label forgets the order kept
        steps += 1
    assert steps <= first.movers
    final = holes.bound(0)
    assert not final.can_flip
    # once every hole that can move it is judged, the delta is pinned
    assert holes.to_settle() == 0


def test_holm_family_adjusts_each_end():
    from recall_kit.decide.stats import holm

    rankings = {"A": {f"q{i}": ["a", f"x{i}"] for i in range(8)}, "B": {f"q{i}": [f"y{i}", "a"] for i in range(8)}}
    qrels = {q: {"a": 1} for q in rankings["A"]}
    queries = tuple(sorted(rankings["A"]))
    metrics = ("precision@2", "mrr@2")
    family = Holes(rankings, qrels, [Contrast("A", "B", m, "overall", queries, "decision") for m in metrics])
    alone = [Holes(rankings, qrels, [Contrast("A", "B", m, "overall", queries)]).bound(0) for m in metrics]
    together = family.bound(1)
    assert together.p_value == pytest.approx(holm([alone[0].p_value, alone[1].p_value])[1])
    # at an end, this row's p is taken there and the other row's as it is now
    assert together.p_low == pytest.approx(holm([alone[0].p_value, alone[1].p_low])[1])
    assert together.p_high == pytest.approx(holm([alone[0].p_value, alone[1].p_high])[1])


def test_condensed_scores_drop_the_holes():
    holes = _holes({"A": {"q": ["a", "x"]}, "B": {"q": ["y", "a"]}}, {"q": {"a": 1}}, "precision@2")
    (bound,) = holes.bounds()
    # judged only: both rankings become [a]; precision@2 = 1/2
    assert (bound.condensed_baseline, bound.condensed_candidate) == (0.5, 0.5)
    assert np.isclose(bound.to_dict()["low"], -0.5)


# -- compare --bounds, end to end -----------------------------------------------------------------

def _cli(*args: str):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": "recall-kit-bm25,recall-kit-fts5"}
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], check=False, cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_compare_bounds_end_to_end(tmp_path):
    import json
    from pathlib import Path

    from recall_kit import load_result

    example = Path(__file__).resolve().parents[2] / "examples" / "memories"
    paths = []
    for name in ("fts5", "bm25"):
        path = tmp_path / f"{name}.json"
        done = _cli("eval", "-d", str(example), "-r", name, "-m", "recall@5,mrr@5,mrr", "--json", str(path),
                    "--latency-sample", "2")
        assert done.returncode == 0, done.stderr
        paths.append(path)
    out = tmp_path / "cmp.json"
    done = _cli("compare", *map(str, paths), "--bounds", str(example / "qrels.jsonl"), "--resamples", "500",
                "--primary", "recall@5", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "What the unjudged top hits can do" in done.stdout and "flip" in done.stdout
    bounds = json.loads(out.read_text())["bounds"]
    # mrr (the whole ranking) has no top k to bound: only the two cutoff metrics, each overall and per stratum
    assert {(b["metric"], b["scope"]) for b in bounds} == {
        (m, s) for m in ("recall@5", "mrr@5") for s in ("overall", "exact", "paraphrase", "multihop")}
    rows = json.loads(out.read_text())["rows"]
    fts5, bm25 = (load_result(p) for p in paths)
    for bound in bounds:
        row = next(r for r in rows if (r["metric"], r["scope"]) == (bound["metric"], bound["scope"]))
        assert bound["delta"] == pytest.approx(row["delta"], abs=1e-6)  # unjudged as not relevant: as scored (files round)
        assert bound["p_value"] == pytest.approx(row["p_holm"])  # same test, seed and Holm family
        assert bound["low"] <= bound["delta"] <= bound["high"]
    overall = next(b for b in bounds if (b["metric"], b["scope"]) == ("recall@5", "overall"))
    assert overall["condensed_baseline"] >= fts5.mean("recall@5")  # dropping holes only lifts judged hits


def test_compare_bounds_with_no_cutoff_metric_is_one_line(tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "memories"
    paths = []
    for name in ("fts5", "bm25"):
        path = tmp_path / f"{name}.json"
        assert _cli("eval", "-d", str(example), "-r", name, "-m", "mrr", "--json", str(path),
                    "--latency-sample", "1").returncode == 0
        paths.append(path)
    done = _cli("compare", *map(str, paths), "--bounds", str(example / "qrels.jsonl"), "--resamples", "100")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "reads a top k" in done.stderr
