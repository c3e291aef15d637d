"""The HTML compare page leads with the answer, keeps one colour per system, marks significance,
and draws a latency histogram in which no series hides another."""

from __future__ import annotations

import re

from recall_kit.decide.compare import Comparison, ComparisonRow
from recall_kit.decide.compare_report import answer_table, scores_table
from recall_kit.reporting.html import HtmlReporter, bar_chart, histogram_chart, series_colours
from recall_kit.types import Report


def _comparison() -> Comparison:
    def row(system, scope, delta, low, high, p_holm):  # type: ignore[no-untyped-def]
        return ComparisonRow(system=system, metric="recall@10", scope=scope, n=40, baseline=0.5,
                             value=0.5 + delta, delta=delta, ci_low=low, ci_high=high,
                             prob_not_better=0.0, p_value=p_holm, p_holm=p_holm)

    rows = [row("dense", "overall", 0.2, 0.1, 0.3, 0.001), row("dense", "exact", -0.1, -0.2, -0.05, 0.01),
            row("dense", "paraphrase", 0.05, -0.05, 0.15, 0.4)]
    return Comparison(labels=["fts5", "dense"], metrics=["recall@10"],
                      scopes={"overall": 120, "exact": 40, "paraphrase": 40}, rows=rows,
                      n_resamples=1000, seed=0)


def test_answer_table_names_the_winner_per_scope():
    table = answer_table(_comparison())
    assert table.title == "Answer: who wins on recall@10"
    winners = {row[0]: row[4] for row in table.rows}
    # overall: +0.2, significant -> dense; exact: -0.1, significant -> the baseline; paraphrase: p 0.4.
    assert winners == {"overall": "dense", "exact": "fts5", "paraphrase": "no real difference"}
    assert table.rows[0][7:9] == ["+0.2000", "[+0.1000, +0.3000]"]


def test_page_leads_with_the_answer_then_charts_then_tables():
    comparison = _comparison()
    report = Report(title="t", tables=[answer_table(comparison), scores_table(comparison)],
                    charts=[{"kind": "bar", "title": "deltas", "groups": {"overall": {"dense": 0.2}}}])
    page = HtmlReporter().render(report)
    answer, charts, scores = (page.index("Answer: who wins"), page.index("<h2>Charts</h2>"),
                              page.index("<h2>Scores</h2>"))
    assert answer < charts < scores


def test_one_colour_per_system_across_charts():
    report = Report(title="t", data={"systems": ["fts5", "dense", "bm25"]}, charts=[
        {"kind": "bar", "groups": {"overall": {"dense": 0.1, "bm25": 0.2}}},
        {"kind": "histogram", "series": {"fts5": [1.0, 2.0], "dense": [3.0], "bm25": [4.0]}},
    ])
    colours = series_colours(report)
    assert list(colours) == ["fts5", "dense", "bm25"] and len(set(colours.values())) == 3
    page = HtmlReporter().render(report)
    dense = set(re.findall(r'fill="(#[0-9a-f]{6})"[^>]*><title>(?:overall / )?dense', page))
    assert dense == {colours["dense"]}  # the same colour in the bar chart and the histogram


def test_significant_bars_are_starred_and_the_others_faded():
    chart = {"groups": {"overall": {"a": 0.2, "b": 0.1}}, "intervals": {"overall": {"a": [0.1, 0.3], "b": [-0.1, 0.3]}},
             "significant": {"overall": {"a": True, "b": False}}}
    svg = bar_chart(chart)
    assert svg.count('class="star">*</text>') == 1
    assert re.search(r'fill-opacity="0.3"[^>]*><title>overall / b: 0.1000 \(not significant\)', svg)
    assert "overall / a: 0.2000 (significant)" in svg


def test_histogram_series_sit_side_by_side():
    svg = histogram_chart({"series": {"a": [1.0, 1.0, 2.0], "b": [1.0, 2.0, 2.0]}, "bins": 2})
    rects = re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]*><title>(\w): (\d)', svg)
    first_bin = sorted((float(x), float(w), name) for x, w, name, _ in rects if float(x) < 300)
    (x_a, w_a, name_a), (x_b, _, name_b) = first_bin
    assert (name_a, name_b) == ("a", "b") and x_b >= x_a + w_a - 1e-6  # no overlap
