"""The `html` reporter: self-contained, escaped, and rendered by a real headless browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from recall_kit.decide.compare import compare_results
from recall_kit.decide.compare_report import comparison_report
from recall_kit.measure.result import SCHEMA, BenchmarkResult
from recall_kit.measure.result_report import result_charts, result_report
from recall_kit.reporting.html import HtmlReporter
from recall_kit.types import Report, ReportTable

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HOSTILE = '<script>alert("x")</script>&<b>'


def _result(label: str, values: list[float], strata: list[str]) -> BenchmarkResult:
    n = len(values)
    queries = [{"query_id": f"q{i}", "stratum": strata[i], "ranking": [], "scores": [], "found_by": {},
                "metrics": {"recall@5": v / 2, "recall@10": v, "ndcg@10": v * 0.9}, "latency_ms": 1.0 + (i % 7)}
               for i, v in enumerate(values)]
    overall = {"recall@5": float(np.mean(values)) / 2, "recall@10": float(np.mean(values)),
               "ndcg@10": float(np.mean(values)) * 0.9, "n": n}
    return BenchmarkResult.from_dict({
        "schema": SCHEMA, "system": {"spec": label, "label": label}, "k": 10,
        "dataset": {"name": "d", "fingerprint": "fp", "path": "nowhere"},
        "metrics": {"names": ["recall@5", "recall@10", "ndcg@10"], "overall": overall, "strata": {}},
        "queries": queries, "latency_ms": {"n": n}, "warnings": [],
    })


def compare_page() -> str:
    rng = np.random.default_rng(0)
    strata = ["exact"] * 40 + ["paraphrase"] * 40 + [HOSTILE] * 10
    base = rng.random(90)
    named = [("A", _result("A", list(base), strata)),
             (HOSTILE, _result(HOSTILE, list(np.clip(base + 0.2, 0, 1)), strata)),
             ("C", _result("C", list(np.clip(base - rng.random(90) * 0.1, 0, 1)), strata))]
    return HtmlReporter().render(comparison_report(compare_results(named, n_resamples=500)))


def test_page_is_self_contained_and_escaped():
    page = compare_page()
    assert page.startswith("<!DOCTYPE html>")
    # Nothing is fetched: no scripts, links, images, imports or url() references.
    for pattern in (r"<script", r"\bsrc=", r"\bhref=", r"@import", r"url\(", r"<link"):
        assert not re.search(pattern, page, re.IGNORECASE), pattern
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&lt;b&gt;" in page
    assert page.count("<svg") >= 4  # two metrics' stratum bars, recall@k curve, latency histogram
    assert "recall@k (all queries)" in page
    assert 'class="ns"' in page  # the non-significant rows are marked


def test_charts_by_hand():
    from recall_kit.reporting.html import bar_chart, histogram_chart, line_chart, render_chart

    bars = bar_chart({"groups": {"g1": {"s": 0.5}, "g2": {"s": -0.25}}, "intervals": {"g1": {"s": [0.4, 0.6]}}})
    assert bars.count("<rect") == 2 + 1  # two bars and one legend swatch
    assert bars.count("<line") >= 3  # the interval: a stem and two caps
    assert "(no data to chart)" in bar_chart({"groups": {}})
    line = line_chart({"x": [5, 10, 20], "series": {"a": [0.1, 0.2, 0.3]}})
    assert line.count("<circle") == 3 and "<polyline" in line
    hist = histogram_chart({"values": [1, 1, 2, 3], "bins": 2})
    # Bins [1, 2) and [2, 3]: counts 2 and 2.
    assert hist.count("<title>values: 2 in") == 2
    assert "not drawn" in render_chart({"kind": "pie", "title": "x"})


def test_eval_report_renders():
    result = _result("A", [0.5, 0.25], ["s", "t"])
    result.strata = {"s": {"recall@5": 0.25, "recall@10": 0.5, "ndcg@10": 0.45, "n": 1}}
    report = Report(title="t", tables=[ReportTable("T", ["a"], [[1]])], charts=result_charts(result))
    page = HtmlReporter().render(report)
    assert page.count("<svg") == 2


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_renders_in_headless_chromium(tmp_path):
    page = tmp_path / "compare.html"
    page.write_text(compare_page(), encoding="utf-8")
    shot = tmp_path / "compare.png"
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0"]
    done = subprocess.run([*flags, "--dump-dom", page.as_uri()], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert "vs A (baseline)" in dom and "<svg" in dom and "significant" in dom
    assert "<script>alert" not in dom  # the hostile label stayed text
    assert "Uncaught" not in done.stderr and "ERROR:CONSOLE" not in done.stderr
    done = subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()], check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Uncaught" not in done.stderr and "ERROR:CONSOLE" not in done.stderr
    assert shot.stat().st_size > 20_000  # a blank page is a few kB
    if os.environ.get("RECALL_KIT_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["RECALL_KIT_KEEP_SCREENSHOT"])


def test_compare_cli_writes_html(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_result("A", [0.1, 0.5, 0.9], ["s"] * 3).to_dict()))
    b.write_text(json.dumps(_result("B", [0.2, 0.5, 1.0], ["s"] * 3).to_dict()))
    out = tmp_path / "c.html"
    done = subprocess.run([sys.executable, "-m", "recall_kit", "compare", str(a), str(b), "--report", "html",
                           "--output", str(out), "--resamples", "200"], check=False, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith("<!DOCTYPE html>") and "B vs A (baseline)" in out.read_text()


def test_a_chart_in_dict_form_draws_as_the_typed_chart():
    from recall_kit.reporting.html import render_chart
    from recall_kit.types import Chart

    as_dict = {"kind": "histogram", "title": "latency", "values": [1.0, 2.0, 2.5], "bins": 4, "unknown": 1}
    chart = Chart.of(as_dict)
    assert (chart.kind, chart.bins, chart.histogram_series) == ("histogram", 4, {"values": [1.0, 2.0, 2.5]})
    assert render_chart(as_dict) == render_chart(chart)
    assert Report(title="t", charts=[as_dict]).chart_list() == [chart]


def _with_legs(label: str, values: list[float], legs: list[dict], fusion: list[dict]) -> BenchmarkResult:
    result = _result(label, values, ["s"] * len(values))
    data = result.to_dict()
    data["system"].update(legs=legs, fusion=fusion)
    data["manifest"] = {"recall_kit": "9.9.9"}
    return BenchmarkResult.from_dict(data)


def test_what_was_measured_shows_the_options_that_differ_and_folds_the_rest():
    dense = {"name": "dense", "weight": 1.0, "options": {"model": "minilm", "batch_size": 64}}
    fts5 = {"name": "fts5", "weight": 1.0, "options": {"tokenizer": "porter"}}
    a = _with_legs("A", [0.5, 0.4, 0.3], [fts5, dense], [{"name": "rrf", "options": {"k": 60}}])
    b = _with_legs("B", [0.6, 0.4, 0.2], [fts5, {**dense, "options": {"model": "other", "batch_size": 64}}],
                   [{"name": "rrf", "options": {"k": 60}}])
    report = comparison_report(compare_results([("A", a), ("B", b)], n_resamples=200))
    shown = dict(report.provenance)
    assert shown["system A"] == "fts5 (weight 1.0); dense (weight 1.0; model=minilm); fusion rrf"
    assert shown["system B"] == "fts5 (weight 1.0); dense (weight 1.0; model=other); fusion rrf"
    assert report.provenance_details == [
        ("options every system shares", "dense.batch_size=64; fts5.tokenizer=porter; fusion rrf.k=60")]
    page = HtmlReporter().render(report)
    assert "<details><summary>Every other setting</summary>" in page and "fusion rrf.k=60" in page


def test_an_eval_page_names_the_version_and_folds_the_options():
    dense = {"name": "dense", "weight": 1.0, "options": {"model": "minilm"}}
    page = HtmlReporter().render(result_report(_with_legs("A", [0.5, 0.4], [dense], [])))
    assert "<h2>What was measured</h2>" in page and "recall-kit 9.9.9" in page
    assert "<dd>dense (weight 1.0)</dd>" in page and "<dd>dense.model=minilm</dd>" in page
