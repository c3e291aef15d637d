"""How the document words the bounds and people's labels (recall_kit.study.label_report)."""

from __future__ import annotations

import copy

from study.test_hole_evidence import _row, _study  # tests/ is on sys.path (conftest.py)

from recall_kit.study.label_report import bounds_table, flip_line, people_line
from recall_kit.study.result import KappaAgainst, KappaBetween, PeopleSummary, Verdict


def test_the_flip_line_names_the_metric_that_can_flip_and_each_rows_range() -> None:
    line = flip_line(Verdict("overall", "hybrid", "adopt", "better"),
                     [_row("hybrid", "overall", 0.2, 0.3, 0.001), _row("hybrid", "overall", 0.2, 0.3, 0.5, "mrr@5")])
    assert line.startswith("overall (adopt): can flip (on mrr@5); recall@5 +0.2000, +0.2000 to +0.3000 over the "
                           "unjudged top-5 hits")


def test_the_bounds_table_has_a_row_per_verdict_row_and_none_without_bounds() -> None:
    study = _study()
    assert bounds_table(study) is None
    study.bounds = [_row("hybrid", "overall", 0.2, 0.3, 0.001), _row("hybrid", "exact", 0.1, 0.2, 0.5)]
    table = bounds_table(study)
    assert table is not None and [row[:3] for row in table.rows] == [["overall", "adopt", "cannot flip"],
                                                                      ["exact", "adopt", "can flip"]]


def test_the_people_line_says_each_kappa_or_why_it_is_undefined() -> None:
    study = copy.deepcopy(_study())
    assert people_line(study) is None
    study.people = PeopleSummary(assessors={"alice": 4, "bob": 3}, added=2,
                                 between=[KappaBetween("alice", "bob", None, 3, None, 3, "one side grades alike")],
                                 against_qrels=[KappaAgainst("alice", 0.5, 4, [0.1, 0.9], 3)])
    assert people_line(study) == ("alice 4 grades, bob 3 grades; 2 of their labels joined the judged set; "
                                  "kappa alice / bob undefined on 3 pairs (one side grades alike, 3 agreed); "
                                  "kappa alice / the user's qrels 0.500 on 4 pairs (3 agreed)")
