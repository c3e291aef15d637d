"""The study result rendered (recall_kit.study.document): the bottom line in sentences, the Holm note
that sizes every p's family, the markdown's sections in order, and the HTML page with the result's
own text escaped. On a hand-built result (tests/study/test_threats.py's clean study)."""

from __future__ import annotations

import copy
import dataclasses

from study.test_threats import _ROW, clean_study  # tests/ is on sys.path (conftest.py)

from recall_kit.study.document import (
    TIMINGS_TITLE,
    bottom_line,
    describe,
    holm_families,
    render_html,
    render_markdown,
)
from recall_kit.study.result import Recommendation, StudyResult, Threat, Verdict


def _decided() -> StudyResult:
    study = copy.deepcopy(clean_study())
    study.verdicts = [Verdict("overall", "hybrid", "adopt", "better on recall@5 +0.1000"),
                      Verdict("paraphrase", "hybrid", "inconclusive", "no decision metric moved beyond noise")]
    study.recommendation = Recommendation("hybrid", "it is the simplest adequate system", ["fts5", "hybrid"],
                                          legs={"dense": "hybrid over fts5: +0.1000 (significant)"})
    study.threats = [Threat("small-strata", "Small strata", ["exact: 12 queries"], "label more queries")]
    study.commands = {"compare": "recall-kit compare a.json b.json"}
    study.timings = {"compare": 1.5}
    return study


def test_the_bottom_line_says_the_recommendation_each_verdict_and_the_threats() -> None:
    lines = bottom_line(_decided())
    assert lines[0] == "Recommendation: hybrid, by the simplicity rule (it is the simplest adequate system)."
    assert lines[1] == "What the dense leg buys: hybrid over fts5: +0.1000 (significant)."
    assert lines[2] == "Adopt: hybrid against fts5 over all queries (better on recall@5 +0.1000)."
    assert lines[3] == "Stratum paraphrase: inconclusive."
    assert lines[-1] == ("1 threat(s) to validity detected from the study's own data (small-strata); read them "
                         "before acting.")
    assert describe(_decided()) == {"bottom_line": lines, "threats": ["small-strata"]}
    assert bottom_line(clean_study()) == ["No candidate besides the baseline: nothing to decide."]


def test_a_provisional_recommendation_says_why() -> None:
    study = _decided()
    assert study.recommendation is not None
    study.recommendation = dataclasses.replace(study.recommendation, provisional=True,
                                               provisional_why="the judge's agreement was never measured")
    assert bottom_line(study)[0] == ("Provisional recommendation: hybrid, by the simplicity rule (it is the simplest "
                                     "adequate system). Provisional because the judge's agreement was never measured.")


def test_the_holm_note_sizes_each_family_and_names_the_systems_when_two_differ() -> None:
    assert holm_families([dataclasses.replace(_ROW, family_rows=8)] * 2) == ["p (Holm): adjusted among 8 primary rows"]
    other = dataclasses.replace(_ROW, system="dense", family_rows=4, family="exploratory")
    assert holm_families([dataclasses.replace(_ROW, family_rows=8), other]) == [
        "p (Holm): adjusted among 8 primary rows (hybrid) or 4 exploratory rows (dense)"]
    assert holm_families([dataclasses.replace(_ROW, p_holm=None)]) == []  # a diagnostic row: no family


def test_the_markdown_holds_every_section_in_order_and_the_reproduce_lines() -> None:
    markdown = render_markdown(_decided())
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["## Bottom line", "## Methodology"]
    assert headings[-3:] == ["## Threats to validity", "## Reproduce (from the study folder)", f"## {TIMINGS_TITLE}"]
    assert "- Adopt: hybrid against fts5 over all queries (better on recall@5 +0.1000)." in markdown
    assert "### Small strata" in markdown and "- what would remove it: label more queries" in markdown
    assert "`recall-kit compare a.json b.json`" in markdown
    assert markdown.endswith("\n") and not markdown.endswith("\n\n")


def test_the_html_page_escapes_the_results_own_text() -> None:
    study = _decided()
    study.name = "<script>alert(1)</script>"
    study.commands = {"compare": "recall-kit compare 'a<b>.json'"}
    page = render_html(study)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "a<b>.json" not in page and "Adopt: hybrid against fts5 over all queries" in page
