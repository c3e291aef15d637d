"""`recall-kit compare`: paired deltas, intervals, p-values with Holm, refusals, on synthetic result
files with hand-worked numbers and end to end on examples/memories with the bm25 plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from recall_kit.decide.compare import compare_files, compare_results
from recall_kit.decide.compare_report import comparison_report
from recall_kit.errors import ResultFileError
from recall_kit.measure.result import SCHEMA, BenchmarkResult

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "memories"


def synthetic_result(label: str, values: dict[str, list[float]], strata: list[str], fingerprint: str = "fp1",
                     ids: list[str] | None = None) -> BenchmarkResult:
    """A minimal result document: per-query values of each metric, in query order."""
    n = len(strata)
    ids = ids or [f"q{i:03d}" for i in range(n)]
    queries = [{"query_id": ids[i], "stratum": strata[i], "ranking": [], "scores": [],
                "metrics": {m: v[i] for m, v in values.items()}, "found_by": {}} for i in range(n)]
    overall = {m: float(np.mean(v)) for m, v in values.items()}
    return BenchmarkResult.from_dict({
        "schema": SCHEMA, "system": {"spec": label, "label": label}, "k": 10,
        "dataset": {"name": "synthetic", "fingerprint": fingerprint, "path": "nowhere"},
        "metrics": {"names": list(values), "overall": {**overall, "n": n}, "strata": {}},
        "queries": queries, "latency_ms": {"n": 0}, "warnings": [],
    })


def test_hand_worked_two_system_comparison():
    # Six queries; B wins on q0, q1, q2 by 1, ties q3, q4, loses q5 by 0.5: delta = 2.5 / 6.
    a = synthetic_result("A", {"hit@1": [0, 0, 0, 1, 1, 1.0]}, ["s"] * 6)
    b = synthetic_result("B", {"hit@1": [1, 1, 1, 1, 1, 0.5]}, ["s"] * 6)
    comparison = compare_results([("A", a), ("B", b)], n_resamples=10_000, seed=0)
    row = comparison.row("B", "hit@1")
    assert row.delta == pytest.approx(2.5 / 6)
    assert (row.wins, row.ties, row.losses) == (3, 2, 1)
    # Exact test over 2**6 = 64 sign flips of differences (1, 1, 1, 0, 0, -0.5), observed sum 2.5:
    # |+-1 +-1 +-1 +-0.5| >= 2.5 only when the three 1s share a sign (2 ways): then 3 +- 0.5 is 3.5
    # or 2.5, both enough (2 ways): 4 of 16 sign patterns, times 4 for the zeros: 16 of 64.
    assert row.p_value == pytest.approx(16 / 64)
    # One row only (one stratum, so no per-stratum rows): Holm leaves it alone.
    assert len(comparison.rows) == 1 and row.p_holm == row.p_value
    assert not row.significant
    assert row.ci_low <= row.delta <= row.ci_high


def test_strata_rows_holm_and_small_stratum_warning():
    rng = np.random.default_rng(3)
    strata = ["big"] * 60 + ["small"] * 12
    base = rng.random(72)
    better = np.clip(base + 0.3, 0, 1)
    a = synthetic_result("A", {"m": list(base), "z": list(base)}, strata)
    b = synthetic_result("B", {"m": list(better), "z": list(base)}, strata)
    comparison = compare_results([("A", a), ("B", b)], n_resamples=2000, seed=0)
    assert [(r.metric, r.scope, r.n) for r in comparison.rows] == [
        ("m", "overall", 72), ("m", "big", 60), ("m", "small", 12),
        ("z", "overall", 72), ("z", "big", 60), ("z", "small", 12),
    ]
    # The primary family is the first metric on all queries: one row, which Holm leaves alone.
    assert comparison.primary == ["m"]
    assert [r.family for r in comparison.rows] == ["primary"] + ["exploratory"] * 5
    primary = comparison.row("B", "m")
    assert primary.p_holm == primary.p_value and primary.significant
    # Holm over the 5 exploratory rows: the smallest p among them is multiplied by 5.
    exploratory = [r for r in comparison.rows if r.family == "exploratory"]
    smallest = min(exploratory, key=lambda r: r.p_value)
    assert smallest.p_holm == pytest.approx(min(1.0, 5 * smallest.p_value))
    z = comparison.row("B", "z")
    assert z.delta == 0 and z.p_value == 1.0 and not z.significant
    assert any("'small' has 12 queries" in w for w in comparison.warnings)
    report = comparison_report(comparison)
    deltas = next(table for table in report.tables if table.title.endswith("(baseline)"))
    assert deltas.headers[2] == "family" and deltas.headers[11] == "significant"
    assert [row[11] for row in deltas.rows if row[0] == "z"] == ["no", "no", "no"]
    assert any("primary = m (1 row)" in note and "exploratory = the other 5 rows" in note
               for note in deltas.notes)
    assert any("significant=no" in note for note in deltas.notes)
    kinds = [chart.kind for chart in report.chart_list()]
    assert kinds.count("bar") == 2


def _clear_winner_among_many_rows():
    """recall@5 wins on 8 of 72 queries by 0.5, loses none; 3 other metrics x 4 scopes do nothing
    but judged@10 (a diagnostic), which rises everywhere."""
    strata = ["s1", "s2", "s3"] * 24
    base = [0.0] * 72
    better = [0.5 if i % 9 == 0 else 0.0 for i in range(72)]
    flat = [0.25] * 72
    a = synthetic_result("A", {"recall@5": base, "mrr": flat, "ndcg@10": flat, "judged@10": flat}, strata)
    b = synthetic_result("B", {"recall@5": better, "mrr": flat, "ndcg@10": flat, "judged@10": [0.5] * 72},
                         strata)
    return a, b


def test_a_win_on_the_primary_metric_is_not_drowned_by_exploratory_rows():
    from recall_kit.decide.stats import holm

    a, b = _clear_winner_among_many_rows()
    comparison = compare_results([("A", a), ("B", b)], n_resamples=10_000, seed=0)
    row = comparison.row("B", "recall@5")
    # 8 differences of +0.5 and 64 zeros: only flips that keep all 8 signs reach the observed
    # |mean|: probability 2 / 2**8, so p is about 0.0078.
    assert row.p_value == pytest.approx(2 / 256, abs=0.002)
    # Primary (default: the first metric, on all queries) is this one row: Holm leaves p alone.
    assert comparison.primary == ["recall@5"] and row.family == "primary"
    assert row.p_holm == row.p_value and row.significant
    # One family of all 16 rows (the old default) would have called it noise.
    assert holm([r.p_value for r in comparison.rows])[comparison.rows.index(row)] >= 0.05
    assert sum(1 for r in comparison.rows if r.family == "exploratory") == 11
    # judged@10 is a diagnostic: in the table, never tested, never "significant".
    judged = comparison.row("B", "judged@10")
    assert judged.family == "diagnostic" and judged.p_holm is None
    assert judged.to_dict()["significant"] is None
    table = next(t for t in comparison_report(comparison).tables if t.title.endswith("(baseline)"))
    assert table.rows[0][:3] == ["recall@5", "overall", "primary"]
    assert [r[11] for r in table.rows if r[0] == "judged@10"] == ["not tested"] * 4


def test_primary_names_the_decision_family_and_refuses_what_cannot_decide():
    a, b = _clear_winner_among_many_rows()
    comparison = compare_results([("A", a), ("B", b)], n_resamples=500, primary=["mrr", "recall@5"])
    assert comparison.primary == ["mrr", "recall@5"]
    primary = [r for r in comparison.rows if r.family == "primary"]
    assert [(r.metric, r.scope) for r in primary] == [("recall@5", "overall"), ("mrr", "overall")]
    recall = comparison.row("B", "recall@5")
    assert recall.p_holm == pytest.approx(min(1.0, 2 * recall.p_value))  # Holm over two rows
    with pytest.raises(ResultFileError, match="diagnostic"):
        compare_results([("A", a), ("B", b)], primary=["judged@10"])
    with pytest.raises(ResultFileError, match="not compared"):
        compare_results([("A", a), ("B", b)], metrics=["mrr"], primary=["recall@5"])


def test_losses_name_the_queries_that_got_worse_worst_first():
    a = synthetic_result("A", {"m": [1.0, 0.5, 0.5, 0.2]}, ["x", "y", "x", "y"])
    b = synthetic_result("B", {"m": [0.5, 0.5, 0.0, 0.9]}, ["x", "y", "x", "y"])
    data = compare_results([("A", a), ("B", b)], n_resamples=100).to_dict()
    assert data["losses"] == {"B": {"m": [
        {"query_id": "q000", "stratum": "x", "baseline": 1.0, "value": 0.5, "delta": -0.5},
        {"query_id": "q002", "stratum": "x", "baseline": 0.5, "value": 0.0, "delta": -0.5},
    ]}}
    assert data["test"]["primary"] == ["m"]


def test_refuses_different_datasets_and_query_sets():
    a = synthetic_result("A", {"m": [0.1, 0.2]}, ["s", "s"])
    other = synthetic_result("B", {"m": [0.1, 0.2]}, ["s", "s"], fingerprint="fp2")
    with pytest.raises(ResultFileError, match="different datasets"):
        compare_results([("A", a), ("B", other)])
    fewer = synthetic_result("B", {"m": [0.1, 0.2]}, ["s", "s"], ids=["q000", "q999"])
    with pytest.raises(ResultFileError, match="different query sets"):
        compare_results([("A", a), ("B", fewer)])
    with pytest.raises(ResultFileError, match="not in"):
        compare_results([("A", a), ("B", a)], metrics=["ndcg@10"])


def test_refuses_results_scored_with_different_relevance_levels_or_judged_only():
    from dataclasses import replace

    a = synthetic_result("A", {"m": [0.1, 0.2]}, ["s", "s"])
    strict = replace(synthetic_result("B", {"m": [0.1, 0.2]}, ["s", "s"]), relevance_level=2)
    with pytest.raises(ResultFileError, match=r"different relevance levels \(-l 2 and -l 1\)"):
        compare_results([("A", a), ("B", strict)])
    judged = replace(synthetic_result("B", {"m": [0.1, 0.2]}, ["s", "s"]), judged_only=True)
    with pytest.raises(ResultFileError, match=r"'B' was scored judged-only \(-J\) and 'A' was not"):
        compare_results([("A", a), ("B", judged)])
    with pytest.raises(ResultFileError, match=r"'B' was scored judged-only \(-J\) and 'A' was not"):
        compare_results([("B", judged), ("A", a)])
    same = replace(a, relevance_level=2, judged_only=True)
    compare_results([("A", same), ("B", replace(strict, judged_only=True))], n_resamples=10)


def _env(plugins: str) -> dict[str, str]:
    return {**os.environ, "RECALL_KIT_LOAD_PLUGINS": plugins}


def _cli(*args: str, plugins: str = "recall-kit-bm25") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], check=False, cwd=ROOT, env=_env(plugins),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def bm25_results(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("compare_e2e")
    plain, stemmed = folder / "bm25.json", folder / "bm25_stem.json"
    metrics = "recall@5,recall@10,ndcg@10"
    for path, extra in ((plain, []), (stemmed, ["-o", "bm25.stemming=true", "-o", "bm25.stopwords=true"])):
        done = _cli("eval", "-d", str(EXAMPLE), "-r", "bm25", *extra, "-m", metrics, "--json", str(path),
                    "--latency-sample", "20")
        assert done.returncode == 0, done.stderr
    return plain, stemmed


def test_compare_end_to_end(bm25_results, tmp_path):
    plain, stemmed = bm25_results
    out = tmp_path / "cmp.json"
    done = _cli("compare", str(plain), str(stemmed), "--resamples", "2000", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "significant" in done.stdout and "W/T/L" in done.stdout
    data = json.loads(out.read_text())
    a, b = BenchmarkResult.load(plain), BenchmarkResult.load(stemmed)
    row = next(r for r in data["rows"] if r["metric"] == "ndcg@10" and r["scope"] == "overall")
    ids = a.query_ids
    pa, pb = a.per_query("ndcg@10"), b.per_query("ndcg@10")
    differences = np.array([pb[q] - pa[q] for q in ids])
    assert row["delta"] == pytest.approx(differences.mean())
    assert row["value"] == pytest.approx(b.mean("ndcg@10"), abs=1e-6)
    assert (row["wins"], row["losses"]) == (int((differences > 1e-9).sum()), int((differences < -1e-9).sum()))
    assert {r["scope"] for r in data["rows"]} == {"overall", "exact", "paraphrase", "multihop"}
    # Seeded: the same inputs give the same numbers.
    again = tmp_path / "again.json"
    assert _cli("compare", str(plain), str(stemmed), "--resamples", "2000", "--json", str(again)).returncode == 0
    assert json.loads(again.read_text())["rows"] == data["rows"]


def test_compare_refusal_is_one_line(bm25_results, tmp_path):
    plain, _ = bm25_results
    data = json.loads(plain.read_text())
    data["dataset"]["fingerprint"] = "0" * 64
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    done = _cli("compare", str(plain), str(edited))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "different datasets" in done.stderr


def test_compare_refuses_a_different_relevance_level_in_one_line(bm25_results, tmp_path):
    plain, _ = bm25_results
    data = json.loads(plain.read_text())
    data["metrics"]["relevance_level"] = 2
    edited = tmp_path / "level2.json"
    edited.write_text(json.dumps(data))
    done = _cli("compare", str(plain), str(edited))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "different relevance levels (-l 2 and -l 1)" in done.stderr
    data["metrics"].update(relevance_level=1, judged_only=True)
    edited.write_text(json.dumps(data))
    done = _cli("compare", str(plain), str(edited))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "judged-only (-J)" in done.stderr


def test_compare_markdown_and_html_mark_non_significant(bm25_results):
    plain, _ = bm25_results
    comparison = compare_files([plain, plain], n_resamples=500)
    assert all(not row.significant for row in comparison.rows)
    from recall_kit.reporting.formats import MarkdownReporter
    from recall_kit.reporting.html import HtmlReporter

    report = comparison_report(comparison)
    markdown = MarkdownReporter().render(report)
    assert "| significant" in markdown and "significant=no" in markdown
    page = HtmlReporter().render(report)
    assert 'class="ns"' in page and "Greyed rows are not significant" in page


def test_metrics_asked_by_trec_eval_or_ir_measures_names():
    a = synthetic_result("A", {"hit@1": [0, 0, 1.0], "mrr": [0.5, 0.5, 1.0]}, ["s"] * 3)
    b = synthetic_result("B", {"hit@1": [1, 0, 1.0], "mrr": [1.0, 0.5, 1.0]}, ["s"] * 3)
    comparison = compare_results([("A", a), ("B", b)], metrics=["success_1", "Success@1", "recip_rank"],
                                 n_resamples=100, seed=0)
    assert comparison.metrics == ["hit@1", "mrr"]
    assert comparison.row("B", "hit@1").delta == pytest.approx(1 / 3)
    with pytest.raises(ResultFileError, match="'precision@5' is not in"):
        compare_results([("A", a), ("B", b)], metrics=["P_5"])


def _three_systems():
    rng = np.random.default_rng(11)
    strata = ["s"] * 80
    base = 0.3 + 0.4 * rng.random(80)
    a = synthetic_result("A", {"recall@5": list(base), "mrr": list(base)}, strata)
    # B: +0.2 recall@5 on every query, -0.2 mrr on every query: a trade.
    b = synthetic_result("B", {"recall@5": list(base + 0.2), "mrr": list(base - 0.2)}, strata)
    c = synthetic_result("C", {"recall@5": list(np.clip(base + rng.normal(0, 0.05, 80), 0, 1)), "mrr": list(base)}, strata)
    return [("A", a), ("B", b), ("C", c)]


@pytest.mark.parametrize("test", ["randomisation", "bootstrap", "t-test", "wilcoxon", "tukey"])
def test_every_test_gives_the_row_p_value(test):
    import scipy.stats

    named = _three_systems()
    comparison = compare_results(named, n_resamples=2000, seed=0, test=test)
    assert comparison.test == test
    row = comparison.row("C", "recall@5")
    a = np.array([v for v in named[0][1].per_query("recall@5").values()])
    c = np.array([v for v in named[2][1].per_query("recall@5").values()])
    if test == "t-test":
        assert row.p_value == pytest.approx(scipy.stats.ttest_rel(c, a).pvalue, rel=1e-7)
    elif test == "wilcoxon":
        assert row.p_value == pytest.approx(
            scipy.stats.wilcoxon(c, a, zero_method="wilcox", correction=False, method="approx").pvalue, rel=1e-9)
    d = c - a
    assert row.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    assert comparison.to_dict()["test"]["key"] == test


def test_unknown_test_is_refused():
    with pytest.raises(ResultFileError, match="Unknown test 'sign'"):
        compare_results(_three_systems(), n_resamples=100, test="sign")


def test_all_pairs_matrix_holm_and_tukey():
    named = _three_systems()
    comparison = compare_results(named, n_resamples=2000, seed=0)
    matrix = comparison.pairwise["recall@5"]
    # B - C and C - B: opposite deltas, one adjusted p; Holm over the 3 pairs.
    bc, cb = matrix.cells[1][2], matrix.cells[2][1]
    assert bc.delta == pytest.approx(-cb.delta) and bc.p_adjusted == cb.p_adjusted
    assert bc.delta == pytest.approx(matrix.means[1] - matrix.means[2])
    assert "Holm over the 3 pairs" in matrix.correction and bc.significant
    tukey = compare_results(named, n_resamples=2000, seed=0, test="tukey").pairwise["recall@5"]
    assert "Tukey" in tukey.correction and tukey.cells[0][1].p_adjusted < 1e-6
    report = comparison_report(comparison)
    titles = [t.title for t in report.tables]
    assert "All pairs on recall@5 (all queries): row - column" in titles
    from recall_kit.reporting.formats import LatexReporter, MarkdownReporter

    latex = LatexReporter().render(report)
    assert "\\begin{tabular}" in latex and "All pairs on recall@5" in latex
    assert "All pairs on mrr" in MarkdownReporter().render(report)
    from recall_kit.reporting.html import HtmlReporter

    assert "All pairs on recall@5 (all queries): row - column" in HtmlReporter().render(report)
    # Two systems: no matrix (the one pair is the comparison itself).
    assert compare_results(named[:2], n_resamples=200).pairwise == {}


def test_a_win_that_costs_another_metric_is_called_a_trade():
    named = _three_systems()[:2]
    comparison = compare_results(named, metrics=["recall@5", "mrr"], n_resamples=2000, seed=0)
    report = comparison_report(comparison)
    answer = report.tables[0]
    assert answer.rows[0][4].startswith("B, but loses mrr (-0.2000)")
    assert any("B wins recall@5 against A (+0.2000) but loses significantly on mrr" in n for n in report.notes)
    # The compare/1 document stores the trade as data; only the report words it.
    saved = json.loads(json.dumps(comparison.to_dict()))
    (trade,) = saved["tradeoffs"]
    mrr = comparison.row("B", "mrr")
    assert trade == {"winner": "B", "loser": "A", "metric": "recall@5", "gain": pytest.approx(0.2),
                     "scope": "overall",
                     "losses": [{"metric": "mrr", "delta": pytest.approx(-0.2), "p_holm": mrr.p_holm}]}
    assert not any(isinstance(value, str) and " wins " in value for value in _strings(saved))


def _strings(document):
    """Every string value in a JSON document, at any depth."""
    if isinstance(document, dict):
        for value in document.values():
            yield from _strings(value)
    elif isinstance(document, list):
        for value in document:
            yield from _strings(value)
    elif isinstance(document, str):
        yield document


def test_a_page_gives_each_pair_one_p_value_and_names_its_family():
    # ablation.html showed full vs fts5 on ndcg@10 as "+0.0602 (p 0.0112) *" in the all-pairs matrix
    # while the table above it said p (Holm) 0.1344: two Holm families for one pair on one page.
    comparison = compare_results(_three_systems(), n_resamples=2000, seed=0)
    report = comparison_report(comparison)
    matrix = next(t for t in report.tables if t.title.startswith("All pairs on recall@5"))
    baseline = comparison.baseline
    for row in matrix.rows:
        for column, cell in zip(matrix.headers[2:], row[2:], strict=True):
            if not cell:
                continue
            if baseline in (row[0], column):
                assert cell.endswith(f"(p: vs {baseline} table)") and "p 0" not in cell
            else:
                assert ", all pairs)" in cell
    assert "one p per pair on the page" in matrix.notes[0]
    deltas = [t for t in report.tables if t.title.endswith("(baseline)")]
    assert deltas and all(header in deltas[0].headers for header in ("family", "p (Holm)"))


def test_compare_files_names_the_results_and_puts_the_strata_in_the_holm_family(tmp_path: Path) -> None:
    """`compare --names a,b --primary-strata` (what a study's Reproduce line uses): the rows carry
    the given names, and the primary metric's per-stratum rows join its Holm family."""
    rng = np.random.default_rng(5)
    strata = ["big"] * 40 + ["small"] * 20
    base = rng.random(60)
    paths = []
    for label, values in (("A", base), ("B", np.clip(base + 0.2, 0, 1))):
        path = tmp_path / f"{label}.json"
        synthetic_result(label, {"m": list(values)}, strata).save(path)
        paths.append(path)
    plain = compare_files(paths, n_resamples=500, seed=0)
    named = compare_files(paths, n_resamples=500, seed=0, names=["fts5", "hybrid"], primary_strata=True)
    assert {r.system for r in plain.rows} == {"B"} and {r.system for r in named.rows} == {"hybrid"}
    assert [r.family for r in plain.rows] == ["primary", "exploratory", "exploratory"]
    assert [r.family for r in named.rows] == ["primary"] * 3
    # Holm over three rows: the overall row's adjusted p is not below its plain one.
    assert named.row("hybrid", "m").p_holm >= plain.row("B", "m").p_holm  # type: ignore[operator]
    from recall_kit.errors import OptionError

    with pytest.raises(OptionError, match="--names gives 1 names for 2 result files"):
        compare_files(paths, n_resamples=10, names=["only"])
    with pytest.raises(OptionError, match="distinct and non-empty"):
        compare_files(paths, n_resamples=10, names=["x", "x"])


def test_a_saved_comparison_reads_back_the_rows_it_wrote(tmp_path: Path) -> None:
    # One row type: ComparisonRow writes a row (to_dict) and reads it back (from_dict), every field
    # the same, a significant row and a diagnostic one (p_holm null, not tested) alike.
    from recall_kit.decide.compare import ComparisonRow, SavedComparison

    rng = np.random.default_rng(5)
    a = synthetic_result("A", {"recall@5": list(rng.random(40) * 0.5), "judged@5": [1.0] * 40}, ["s"] * 40)
    b = synthetic_result("B", {"recall@5": list(rng.random(40) * 0.5 + 0.5), "judged@5": [1.0] * 40}, ["s"] * 40)
    comparison = compare_results([("A", a), ("B", b)], n_resamples=500, seed=0)
    (tmp_path / "comparison.json").write_text(json.dumps(comparison.to_dict()), encoding="utf-8")
    saved = SavedComparison.load(tmp_path / "comparison.json")
    assert saved.rows == comparison.rows
    assert {row.family for row in saved.rows} == {"primary", "diagnostic"}
    assert [row.significant for row in saved.decision_rows()] == [True]
    assert (saved.baseline, saved.systems, saved.resamples) == ("A", ["A", "B"], 500)
    constant = ComparisonRow.from_dict({**comparison.rows[0].to_dict(), "effect_size_dz": None})
    assert constant.effect_size == (np.inf if comparison.rows[0].delta > 0 else -np.inf)
    (tmp_path / "list.json").write_text("[]", encoding="utf-8")
    with pytest.raises(ResultFileError, match="list.json: not a readable saved document"):
        SavedComparison.load(tmp_path / "list.json")
