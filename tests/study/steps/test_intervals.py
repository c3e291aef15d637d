"""The study's hole-aware intervals (recall_kit.study.steps.intervals): the seeded sample of open queries, offered
first by `recall-kit label`; the bottom line's assumption and power analysis without labels; the
prediction-powered interval once a person labelled the sample's first queries."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from study.test_people import write
from study_support import plugins

from recall_kit.curate.assessor import AssessorFile
from recall_kit.study import run_study
from recall_kit.study.steps.intervals import sample_pairs


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        yield


def test_the_sample_is_offered_first_and_its_labels_make_the_interval(tmp_path: Path, monkeypatch) -> None:
    from recall_kit import load_dataset, load_result
    from recall_kit.decide import ppi
    from recall_kit.decide.holes import Contrast, Holes
    from recall_kit.label.session import open_session

    monkeypatch.setattr(ppi, "MIN_LABELLED", 20)  # the example store has about 40 open queries
    path = write(tmp_path)
    first, _ = run_study(path)
    folder = tmp_path / "out"
    saved = json.loads((folder / "steps" / "intervals" / "intervals.json").read_text(encoding="utf-8"))
    rows = first.intervals.rows
    assert first.intervals.challenger == first.challenger and first.intervals.sample == saved["sample"]
    assert saved["challenger"] is None and {r["candidate"] for r in saved["rows"]} == {"bm25"}  # every candidate's rows
    assert {(r.scope, r.metric) for r in rows} == {(v.scope, m) for v in first.verdicts for m in ("recall@5", "mrr@5")}
    assert all(r.interval is None and r.labelled == 0 and r.plan.labels > 0 for r in rows)
    line = next(x for x in first_bottom_line(first) if "assume every unjudged hit is not relevant" in x)
    assert "power analysis" in line and "labels" in line

    # the label page offers the sample's holes first, a query at a time in the sample's order (the
    # page's checks, pairs already judged, mixed in; the pairs of one query in the page's order)
    pairs = sample_pairs(folder)
    session = open_session(path, "alice")
    try:
        offered = [p for p in pairs if session.offerable(*p)]
        queries = list(dict.fromkeys(q for q, _ in offered))
        queue = [p for p in session.queue() if not session.already_judged(*p)]
    finally:
        session.close()
    # each sample query's pairs (every system's holes at the hook), one query after another, before any
    # other pair (its pooled pairs beyond the hook wait for the pool's phase)
    head = queue[:len(offered)]
    assert [q for q, _ in itertools.groupby(q for q, _ in head)] == queries
    assert set(offered) == set(head)
    groups = [q for q, _ in itertools.groupby(q for q, _ in pairs)]  # one query's holes together, in the sample's order
    assert groups == saved["sample"] and len(groups) == len(set(groups))

    # a person labels every hole of the sample's first queries (relevant: an odd id, a stand-in rule)
    labelled = list(dict.fromkeys(q for q, _ in pairs))[:35]
    out = AssessorFile.open(folder / "labels" / "alice.jsonl", "alice")
    people: dict[str, dict[str, int]] = {}
    for query, doc in pairs:
        if query in labelled:
            grade = int(doc) % 2
            out.grade(query, doc, grade)
            people.setdefault(query, {})[doc] = grade
    second, build = run_study(path)
    assert "intervals" in build.computed and second.intervals.sample == first.intervals.sample
    overall = [r for r in second.intervals.rows if r.scope == "overall"]

    # the same intervals from the library, on the evaluation set's own labels
    dataset = load_dataset(folder / "steps" / "evaluation-set")
    rankings = {s: load_result(folder / "steps" / "eval" / s / "result.json").rankings() for s in ("fts5", "bm25")}
    for row in overall:
        contrast = Contrast("fts5", "bm25", row.metric, "overall", tuple(sorted(rankings["fts5"])))
        holes = Holes(rankings, dataset.qrels, [contrast], n_resamples=10)
        tables = {q: holes.table(contrast, q) for q in contrast.query_ids}
        expected = ppi.interval(tables, [q for q in second.intervals.sample if q in tables], people)
        if expected is None:  # fewer of this row's open queries among those labelled than an interval needs
            assert row.interval is None
            continue
        assert row.interval.labelled == expected.labelled >= ppi.MIN_LABELLED
        assert (row.interval.low, row.interval.high) == pytest.approx((expected.low, expected.high))
    assert overall[0].metric == "recall@5" and overall[0].interval.method == ppi.PPI
    assert any(x.startswith("Hole-aware interval (bm25 against fts5") for x in first_bottom_line(second))
    markdown = (folder / "study.md").read_text(encoding="utf-8")
    assert "## Hole-aware intervals" in markdown


def first_bottom_line(study) -> list[str]:
    from recall_kit.study.document import bottom_line

    return bottom_line(study)
