"""`recall-kit sweep`: grids over weights and options, one search per distinct leg, seeded
stratified hold-out, and results reproducible by `eval`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from recall_kit import load_result
from recall_kit.dataset import load_dataset, split_queries
from recall_kit.decide.sweep import grid_specs, parse_grid
from recall_kit.errors import OptionError
from recall_kit.measure.systems.system import SystemSpec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "memories"
PLUGINS = "recall-kit-fts5,recall-kit-bm25,recall-kit-fusion"


def test_grid_by_hand():
    spec = SystemSpec("fts5+bm25", ["rrf"], {"fts5": 2.0}, {"bm25": {"b": "0.5"}})
    axes = parse_grid(["bm25=0,1", "rrf.k=10,60"], spec)
    assert [(a.name, a.values) for a in axes] == [("bm25", (0.0, 1.0)), ("rrf.k", ("10", "60"))]
    specs = grid_specs(spec, axes)
    assert [settings for settings, _ in specs] == [
        {"bm25": 0.0, "rrf.k": "10"}, {"bm25": 0.0, "rrf.k": "60"},
        {"bm25": 1.0, "rrf.k": "10"}, {"bm25": 1.0, "rrf.k": "60"},
    ]
    last = specs[-1][1]
    # Fixed settings stay; the grid's are added.
    assert last.weights == {"fts5": 2.0, "bm25": 1.0}
    assert last.options == {"bm25": {"b": "0.5"}, "rrf": {"k": "60"}}
    for bad, message in (["dense=1"], "not a leg"), (["bm25=-1"], ">= 0"), (["grph.k=1"], "not a leg or fusion"), \
            (["bm25=1", "bm25=2"], "twice"), (["bm25"], "expected"):
        with pytest.raises(OptionError, match=message):
            parse_grid(bad, spec)


def test_holdout_split_is_stratified_and_seeded():
    dataset = load_dataset(EXAMPLE)
    tuning, test = split_queries(dataset, 0.5, seed=0)
    strata = {q.query_id: q.stratum for q in dataset.queries}
    assert not set(tuning) & set(test) and len(tuning) + len(test) == len(dataset.queries)
    total = Counter(strata.values())
    held = Counter(strata[q] for q in test)
    assert all(held[s] == round(total[s] * 0.5) for s in total)
    assert split_queries(dataset, 0.5, seed=0) == (tuning, test)
    assert split_queries(dataset, 0.5, seed=1)[1] != test
    smaller = split_queries(dataset, 0.25, seed=0)[1]
    assert Counter(strata[q] for q in smaller) == {s: round(n * 0.25) for s, n in total.items()}
    with pytest.raises(OptionError):
        split_queries(dataset, 1.0, seed=0)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], check=False, cwd=ROOT,
                          env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": PLUGINS},
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def sweep_out(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("sweep_e2e") / "out"
    done = _cli("sweep", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "--grid", "bm25=0,1",
                "--grid", "rrf.k=10,60", "--grid", "bm25.k1=1.2,1.5", "--target", "ndcg@10", "--holdout", "0.5",
                "--resamples", "2000", "--latency-sample", "0", "--out-dir", str(out))
    assert done.returncode == 0, done.stderr
    return out, done


def test_sweep_with_holdout(sweep_out):
    out, done = sweep_out
    index = json.loads((out / "sweep.json").read_text())
    assert len(index["points"]) == 8
    # fts5 once, bm25 once per k1 value: three searches for eight settings.
    assert index["leg_searches"] == 3
    assert len(index["tuning_queries"]) == 60 and len(index["test_queries"]) == 60
    best = max(index["points"], key=lambda p: p["tuning_score"])
    assert index["best"]["settings"] == best["settings"]
    # The best is reported on the test half, against the default, with the paired statistics.
    assert index["best"]["test_score"] == best["test_score"]
    rows = index["comparison"]["rows"]
    overall = next(r for r in rows if r["scope"] == "overall")
    assert overall["n"] == 60 and overall["value"] == pytest.approx(best["test_score"])
    assert overall["baseline"] == pytest.approx(index["default"]["test_score"])
    assert "held-out test queries" in done.stdout and "optimistic" not in done.stdout
    for point in index["points"]:
        result = load_result(out / point["file"])
        ids = set(index["tuning_queries"])
        tuned = [value for qid, value in result.per_query("ndcg@10").items() if qid in ids]
        assert point["tuning_score"] == pytest.approx(sum(tuned) / len(tuned))


def test_sweep_results_are_reproduced_by_eval(sweep_out, tmp_path):
    out, _ = sweep_out
    index = json.loads((out / "sweep.json").read_text())
    point = next(p for p in index["points"] if p["settings"] == {"bm25": 1.0, "rrf.k": "10", "bm25.k1": "1.2"})
    fresh = tmp_path / "fresh.json"
    done = _cli("eval", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "-o", "rrf.k=10", "-o", "bm25.k1=1.2",
                "--weights", "bm25=1", "-m", "ndcg@10", "--json", str(fresh), "--latency-sample", "0")
    assert done.returncode == 0, done.stderr
    mine, theirs = load_result(out / point["file"]), load_result(fresh)
    assert mine.rankings() == theirs.rankings()
    assert mine.mean("ndcg@10") == theirs.mean("ndcg@10")


def test_sweep_without_holdout_says_it_is_optimistic():
    done = _cli("sweep", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "--grid", "rrf.k=10,60",
                "--target", "recall@10", "--latency-sample", "0")
    assert done.returncode == 0, done.stderr
    assert "optimistic" in done.stdout and "chosen and scored on the same queries" in done.stdout


def test_sweep_on_one_stratum_tunes_and_tests_on_its_queries_only(tmp_path):
    out = tmp_path / "out"
    done = _cli("sweep", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "--grid", "bm25=0.25,1",
                "--target", "recall@10", "--holdout", "0.5", "--stratum", "multihop", "--resamples", "500",
                "--latency-sample", "0", "--out-dir", str(out))
    assert done.returncode == 0, done.stderr
    dataset = load_dataset(EXAMPLE)
    strata = {q.query_id: q.stratum for q in dataset.queries}
    tuning, test = split_queries(dataset, 0.5, seed=0)
    index = json.loads((out / "sweep.json").read_text())
    assert index["stratum"] == "multihop"
    assert index["tuning_queries"] == [q for q in tuning if strata[q] == "multihop"]
    assert index["test_queries"] == [q for q in test if strata[q] == "multihop"]
    assert len(index["tuning_queries"]) == len(index["test_queries"]) == 20
    for point in [*index["points"], index["default"]]:
        values = load_result(out / point["file"]).per_query("recall@10")
        assert point["tuning_score"] == pytest.approx(sum(values[q] for q in index["tuning_queries"]) / 20)
        assert point["test_score"] == pytest.approx(sum(values[q] for q in index["test_queries"]) / 20)
    overall = next(r for r in index["comparison"]["rows"] if r["scope"] == "overall")
    assert overall["n"] == 20 and overall["value"] == pytest.approx(index["best"]["test_score"])
    assert "recall@10 on multihop" in done.stdout and "multihop stratum's queries only" in done.stdout
    bad = _cli("sweep", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "--grid", "bm25=1",
               "--target", "recall@10", "--stratum", "multi-hop", "--latency-sample", "0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "--stratum 'multi-hop': no query has it (strata: exact, multihop, paraphrase)" in bad.stderr


def test_guard_checks_rule_out_a_significant_loss_only():
    from decide.test_compare import synthetic_result  # tests/ is on sys.path (conftest.py)

    from recall_kit.decide.sweep import GuardCheck, SweepPoint, guard_checks

    n = 40
    strata = ["s"] * n
    default = synthetic_result("d", {"ndcg@10": [0.5] * n, "mrr": [0.5] * n}, strata)
    # Loses 0.25 of nDCG@10 on every query (a sure loss), mrr unchanged.
    worse = synthetic_result("w", {"ndcg@10": [0.25] * n, "mrr": [0.5] * n}, strata)
    # Loses on two queries only: not significant.
    slight = synthetic_result("s", {"ndcg@10": [0.25, 0.25] + [0.5] * (n - 2), "mrr": [0.5] * n}, strata)
    ids = [f"q{i:03d}" for i in range(n)]
    checks = guard_checks(default, worse, ["ndcg@10", "mrr"], ids, 2000, 0)
    assert checks["ndcg@10"].delta == pytest.approx(-0.25) and checks["ndcg@10"].fails
    # Holm over the two guards: the smaller p doubled (the randomisation p is 1 / 2001 here).
    assert checks["ndcg@10"].p_holm == pytest.approx(2 * checks["ndcg@10"].p_value)
    assert checks["mrr"] == GuardCheck(0.0, 1.0, 1.0) and not checks["mrr"].fails
    assert not any(c.fails for c in guard_checks(default, slight, ["ndcg@10", "mrr"], ids, 2000, 0).values())
    point = SweepPoint({}, SystemSpec("x"), worse, 0.0, guard_checks=checks)
    assert not point.eligible and "FAIL" in str(checks["ndcg@10"])


def test_sweep_with_guards_reports_them(tmp_path):
    out = tmp_path / "out"
    done = _cli("sweep", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "--grid", "bm25=0.25,1",
                "--target", "recall@10", "--guard", "ndcg@10,mrr", "--holdout", "0.5", "--resamples", "500",
                "--latency-sample", "0", "--out-dir", str(out))
    assert done.returncode == 0, done.stderr
    index = json.loads((out / "sweep.json").read_text())
    assert index["guards"] == ["ndcg@10", "mrr"]
    for point in index["points"]:
        assert set(point["guards"]) == {"ndcg@10", "mrr"}
        assert point["eligible"] == (not any(g["fails"] for g in point["guards"].values()))
    # The chosen setting is the best eligible one; its guards are compared on the held-out half too.
    eligible = [p for p in index["points"] if p["eligible"]] or index["points"]
    assert index["best"]["settings"] == max(eligible, key=lambda p: p["tuning_score"])["settings"]
    held = {r["metric"] for r in index["comparison"]["rows"] if r["scope"] == "overall"}
    assert held == {"recall@10", "ndcg@10", "mrr"}
    assert "ndcg@10 vs default (tuning)" in done.stdout and "Guards ndcg@10, mrr" in done.stdout
    bad = _cli("sweep", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "--grid", "bm25=1",
               "--target", "recall@10", "--guard", "recall@10", "--latency-sample", "0")
    assert bad.returncode == 2 and "guards are the other metrics" in bad.stderr


def test_sweep_scores_with_relevance_level_and_judged_only(tiny_dataset):
    """-l and -J mean in sweep what they mean in eval and ablate: every setting is scored at the
    level, judged-only. (The sweep once dropped both: its settings were scored at -l 1 without -J,
    so its files could not be compared with an `eval -l 2 -J` of the same system.)"""
    from helpers import OverlapPlugin

    from recall_kit.decide.sweep import run_sweep
    from recall_kit.measure.run.runner import run_benchmark
    from recall_kit.testing import registered_plugin

    recall_kit_fusion = pytest.importorskip("recall_kit_fusion")
    dataset = load_dataset(tiny_dataset)
    spec = SystemSpec("overlap+helpers:ReverseIdRetriever", ["rrf"], {}, {})
    with registered_plugin(OverlapPlugin(), name="overlap-plugin"), \
            registered_plugin(recall_kit_fusion, name="fusion-for-sweep-test"):
        graded = run_sweep(spec, dataset, ["overlap=0.5,1"], "mrr", k=3, metrics=["recall@3", "mrr"],
                           latency_sample=0, relevance_level=2, judged_only=True)
        fresh = run_benchmark(spec, dataset, k=3, metrics=["recall@3", "mrr"], latency_sample=0,
                              relevance_level=2, judged_only=True)
        plain = run_sweep(spec, dataset, ["overlap=0.5,1"], "mrr", k=3, metrics=["recall@3", "mrr"], latency_sample=0)
    assert all(p.result.relevance_level == 2 and p.result.judged_only for p in [*graded.points, graded.default])
    assert graded.default.result.overall == fresh.overall
    # m1's only grade-2 memory is 1: at -l 2 fewer documents are relevant than by default.
    assert graded.default.result.overall != plain.default.result.overall
    assert plain.default.result.relevance_level == 1 and not plain.default.result.judged_only


def test_sweep_cli_takes_relevance_level_and_judged_only(tmp_path):
    out = tmp_path / "out"
    done = _cli("sweep", "-d", str(EXAMPLE), "-r", "bm25", "--grid", "bm25.k1=0.9,1.2", "--target", "recall@10",
                "-l", "2", "-J", "--latency-sample", "0", "--out-dir", str(out))
    assert done.returncode == 0, done.stderr
    index = json.loads((out / "sweep.json").read_text())
    for point in [*index["points"], index["default"]]:
        result = load_result(out / point["file"])
        assert result.relevance_level == 2 and result.judged_only
