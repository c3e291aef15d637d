"""The trec_eval measures added in the second trust pass, against pytrec_eval (which wraps
trec_eval 9) where it has them, and against values worked out by hand where it does not."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import pytrec_eval

import recall_kit
from recall_kit.measure.score.evaluation import aggregate, judge_rankings, metric_values, resolve_metrics, summed_names

# recall-kit name -> (pytrec_eval measure asked, key it answers under)
AGAINST_PYTREC_EVAL = {
    "set_precision": ("set_P", "set_P"),
    "set_recall": ("set_recall", "set_recall"),
    "set_map": ("set_map", "set_map"),
    "set_relative_precision": ("set_relative_P", "set_relative_P"),
    "relative_precision@5": ("relative_P.5", "relative_P_5"),
    "relative_precision@20": ("relative_P.20", "relative_P_20"),
    "utility": ("utility", "utility"),
    "num_nonrel_judged_ret": ("num_nonrel_judged_ret", "num_nonrel_judged_ret"),
    "eleven_point_precision": ("11pt_avg", "11pt_avg"),
    "f1": ("set_F", "set_F"),
    "ndcg_rel": ("ndcg_rel", "ndcg_rel"),
    "rndcg": ("Rndcg", "Rndcg"),
}


def _case(seed: int):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(40)]
    qrels, run = {}, {}
    for q in range(30):
        judged = rng.sample(docs, rng.randint(1, 14))
        top = 0 if rng.random() < 0.1 else 3
        qrels[f"q{q}"] = {doc: rng.randint(0, top) for doc in judged}
        run[f"q{q}"] = {doc: float(rng.randint(0, 50)) for doc in rng.sample(docs, rng.randint(1, 25))}
    return qrels, run


@pytest.mark.parametrize("seed", range(4))
def test_set_and_relative_measures_match_pytrec_eval(seed):
    qrels, run = _case(seed)
    asked = {measure for measure, _ in AGAINST_PYTREC_EVAL.values()} | {"gm_map", "gm_bpref", "iprec_at_recall",
                                                                         "Rprec_mult"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, asked).evaluate(run)
    got = recall_kit.evaluate(qrels, run, list(AGAINST_PYTREC_EVAL) + ["gm_map", "gm_bpref"], per_query=True)
    for name, (_, key) in AGAINST_PYTREC_EVAL.items():
        for query_id in expected:
            assert got[query_id][name] == pytest.approx(expected[query_id][key], abs=1e-4), (name, query_id)
    for query_id in expected:  # per query, the log of the floored AP, as trec_eval -q
        assert got[query_id]["gm_map"] == pytest.approx(expected[query_id]["gm_map"], abs=1e-4)
        assert got[query_id]["gm_bpref"] == pytest.approx(expected[query_id]["gm_bpref"], abs=1e-4)
    means = recall_kit.evaluate(qrels, run, ["gm_map", "gm_bpref", "set_precision"])
    for name in ("gm_map", "gm_bpref"):
        summary = pytrec_eval.compute_aggregated_measure(name, [expected[q][name] for q in expected])
        assert means[name] == pytest.approx(summary, rel=1e-4)
    # iprec_at_recall: the 11 levels whose mean is 11pt_avg, each as trec_eval 9 computes it.
    from recall_kit.measure.score.metrics.eleven_point_precision import interpolated_precision

    data = judge_rankings(sorted(qrels), [_ranked(run[q]) for q in sorted(qrels)], qrels)
    table = interpolated_precision(data)
    for row, query_id in enumerate(sorted(qrels)):
        for column in range(11):
            key = f"iprec_at_recall_{column / 10:.2f}"
            assert table[row, column] == pytest.approx(expected[query_id][key], abs=1e-4), (query_id, key)
    # The same through the metric names trec_eval prints, and its measure sets.
    names = [f"iprec_at_recall_{level / 10:.2f}" for level in range(11)] + ["Rprec_mult"]
    got = recall_kit.evaluate(qrels, run, names, per_query=True)
    for query_id in expected:
        for level in range(11):
            key = f"iprec_at_recall_{level / 10:.2f}"
            assert got[query_id][f"iprec_at_recall@{level * 10}"] == pytest.approx(expected[query_id][key], abs=1e-4)
        for multiple in range(20, 201, 20):
            key = f"Rprec_mult_{multiple / 100:.2f}"
            assert got[query_id][f"rprec_mult@{multiple}"] == pytest.approx(expected[query_id][key], abs=1e-4), key


def _ranked(scores):
    from recall_kit.types import Hit, sort_hits

    return [hit.id for hit in sort_hits([Hit(doc, score) for doc, score in scores.items()])]


def test_new_measures_by_hand():
    # Ranking a b c d e; qrels: a 2, c 1, e 0 (judged not relevant), f 3 (not retrieved).
    qrels = {"q": {"a": 2, "c": 1, "e": 0, "f": 3}}
    run = {"q": ["a", "b", "c", "d", "e"]}
    names = ["set_precision", "set_recall", "set_map", "set_relative_precision", "relative_precision@2",
             "dcg", "dcg@2", "rbp", "rbp@2", "rbp_residual", "utility", "num_nonrel_judged_ret"]
    got = recall_kit.evaluate(qrels, run, names, per_query=True)["q"]
    assert got["set_precision"] == pytest.approx(2 / 5)
    assert got["set_recall"] == pytest.approx(2 / 3)
    assert got["set_map"] == pytest.approx(2 / 5 * 2 / 3)
    assert got["set_relative_precision"] == pytest.approx(2 / 3)  # min(5 retrieved, 3 relevant)
    assert got["relative_precision@2"] == pytest.approx(1 / 2)
    assert got["dcg"] == pytest.approx(2 / math.log2(2) + 1 / math.log2(4))
    assert got["dcg@2"] == pytest.approx(2.0)
    p = 0.8
    assert got["rbp"] == pytest.approx((1 - p) * (1 + p**2))
    assert got["rbp@2"] == pytest.approx(1 - p)
    # b and d unjudged (ranks 2, 4), and everything past rank 5.
    assert got["rbp_residual"] == pytest.approx((1 - p) * (p + p**3) + p**5)
    assert got["utility"] == 2 - 3
    assert got["num_nonrel_judged_ret"] == 1


def test_geometric_summary_per_stratum():
    specs = resolve_metrics(["gm_map", "map"])
    qrels = {"a": {"x": 1}, "b": {"x": 1}, "c": {"x": 1}}
    rankings = [["x"], ["y", "x"], ["y"]]  # AP 1, 1/2, 0
    data = judge_rankings(["a", "b", "c"], rankings, qrels)
    summary = aggregate(metric_values(data, specs), ["s", "s", "t"], summed_names(specs))
    assert summary["overall"]["map"] == pytest.approx(0.5)
    assert summary["overall"]["gm_map"] == pytest.approx((1 * 0.5 * 0.00001) ** (1 / 3))
    assert summary["strata"]["s"]["gm_map"] == pytest.approx(math.sqrt(0.5))
    assert summary["strata"]["t"]["gm_map"] == pytest.approx(0.00001)


def test_every_builtin_metric_lives_in_the_file_named_after_it_with_bounds():
    from pathlib import Path

    from recall_kit.measure.score.metrics import builtin_metrics

    folder = Path(recall_kit.__file__).parent / "measure" / "score" / "metrics"
    for metric in builtin_metrics():
        assert (folder / f"{metric.name}.py").is_file(), metric.name
        assert metric.bounds is not None, metric.name
    assert np.isinf(next(m for m in builtin_metrics() if m.name == "num_ret").bounds[1])


def test_all_trec_official_and_bare_families_against_pytrec_eval(tmp_path):
    from recall_kit.measure.score.evaluation import score_trec_files
    from recall_kit.measure.score.trec import write_qrels, write_run
    from recall_kit.types import Hit

    qrels, run = _case(7)
    write_qrels(tmp_path / "qrels.txt", qrels)
    write_run(tmp_path / "run.txt", {q: [Hit(d, s) for d, s in scores.items()] for q, scores in run.items()}, "t")
    scores = score_trec_files(tmp_path / "qrels.txt", tmp_path / "run.txt", ["all_trec"])
    expected = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures).evaluate(run)
    spelled = {"precision": "P_{}", "recall": "recall_{}", "hit": "success_{}", "ndcg": "ndcg_cut_{}",
               "map": "map_cut_{}", "relative_precision": "relative_P_{}",
               "iprec_at_recall": "iprec_at_recall_{:.2f}", "rprec_mult": "Rprec_mult_{:.2f}"}
    whole = {"map": "map", "ndcg": "ndcg", "mrr": "recip_rank", "r_precision": "Rprec", "bpref": "bpref",
             "infap": "infAP", "f1": "set_F", "set_precision": "set_P", "set_recall": "set_recall",
             "set_map": "set_map", "set_relative_precision": "set_relative_P", "utility": "utility",
             "eleven_point_precision": "11pt_avg", "num_ret": "num_ret", "num_rel": "num_rel",
             "num_rel_ret": "num_rel_ret", "num_nonrel_judged_ret": "num_nonrel_judged_ret",
             "ndcg_rel": "ndcg_rel", "rndcg": "Rndcg", "num_q": "num_q", "gm_map": "gm_map",
             "gm_bpref": "gm_bpref"}
    compared = 0
    for name, values in scores.values.items():
        family, _, cutoff = name.partition("@")
        if family in ("dcg", "ideal_dcg"):
            continue  # not in trec_eval 9 (checked by hand)
        if cutoff:
            number = int(cutoff) / 100 if family in ("iprec_at_recall", "rprec_mult") else int(cutoff)
            key = spelled[family].format(number)
        else:
            key = whole[family]
        want = np.array([expected[q][key] for q in scores.query_ids])
        np.testing.assert_allclose(values, want, atol=1e-4, err_msg=name)
        compared += 1
    assert compared == len(scores.values) - 2 >= 80
    summary = pytrec_eval.compute_aggregated_measure("gm_map", [expected[q]["gm_map"] for q in expected])
    assert scores.overall["gm_map"] == pytest.approx(summary, rel=1e-6)
    assert any("not computed" in warning and "relstring" in warning for warning in scores.warnings)


def test_unjudged_by_hand():
    # Ranking a b c d; a judged 1, b absent, c pooled but unjudged (-1), d judged 0.
    qrels = {"q": {"a": 1, "c": -1, "d": 0}}
    from recall_kit.errors import RecallKitWarning

    with pytest.warns(RecallKitWarning, match="unjudged@10: cutoff past"):
        got = recall_kit.evaluate(qrels, {"q": ["a", "b", "c", "d"]}, ["unj_2", "unj.4", "unj_10"], per_query=True)["q"]
    assert got == {"unjudged@2": 1 / 2, "unjudged@4": 2 / 4, "unjudged@10": 2 / 10}
    assert [spec.name for spec in resolve_metrics(["unj"])] == ["unjudged@5", "unjudged@10", "unjudged@20"]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["iprec_at_recall.0", ".1", "0.25", "1"], ["iprec_at_recall@0", "iprec_at_recall@10", "iprec_at_recall@25",
                                                   "iprec_at_recall@100"]),
        (["iprec_at_recall_0.10", "iprec_at_recall_1.00"], ["iprec_at_recall@10", "iprec_at_recall@100"]),
        (["Rprec_mult.1.5", "2"], ["rprec_mult@150", "rprec_mult@200"]),
        (["P.5", "10"], ["precision@5", "precision@10"]),
        (["success"], ["hit@1", "hit@5", "hit@10"]),
        (["set"], ["num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_precision", "set_recall",
                   "set_relative_precision", "set_map", "f1"]),
    ],
)
def test_trec_eval_measure_names_with_fractions_and_sets(names, expected):
    # trec_eval's "-m iprec_at_recall.0,.1,0.25,1" arrives split at the commas, as from the CLI.
    assert [spec.name for spec in resolve_metrics(names)] == expected


@pytest.mark.parametrize("name", ["ndcg.1=3", "utility.1", "rbp.p=0.95", "Rprec_mult.999999999"])
def test_trec_eval_parameters_recall_kit_cannot_honour_are_refused(name):
    from recall_kit.errors import OptionError, UnknownMetricError

    with pytest.raises((UnknownMetricError, OptionError)):
        resolve_metrics([name])


@pytest.mark.parametrize("weight", ["0.5", "1", "2", "0.25"])
def test_set_f_with_trec_eval_weight_matches_pytrec_eval(weight):
    qrels, run = _case(3)
    expected = pytrec_eval.RelevanceEvaluator(qrels, {f"set_F.{weight}"}).evaluate(run)
    [name] = recall_kit.evaluate(qrels, run, [f"set_F.{weight}"])
    got = recall_kit.evaluate(qrels, run, [f"set_F.{weight}"], per_query=True)
    assert name == f"set_f_weighted@{round(float(weight) * 100)}"
    for query_id in expected:
        assert got[query_id][name] == pytest.approx(expected[query_id]["set_F"], abs=1e-4)


def test_evaluate_refuses_strings_python_reads_differently():
    with pytest.raises(ValueError, match="score '1_0' of 'a' is not a number"):
        recall_kit.evaluate({"q": {"a": 1}}, {"q": {"a": "1_0", "b": "5"}}, "mrr")
    with pytest.raises(ValueError, match="grade '\u0661' of 'a' is not an integer"):
        recall_kit.evaluate({"q": {"a": "\u0661"}}, {"q": {"a": 1.0}}, "mrr")
    assert recall_kit.evaluate({"q": {"a": "1", "b": "0"}}, {"q": {"a": "2.5", "b": "3"}}, "mrr") == {"mrr": 0.5}
