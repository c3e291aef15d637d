"""The bounds step's rows on the study result (recall_kit.study.hole_evidence): each verdict gets the summary of
its own rows (its challenger, its scope), a compare-down pair its own or the head-to-head's row read the
other way round, and people's kappa rows become typed."""

from __future__ import annotations

import copy

from study.test_threats import clean_study  # tests/ is on sys.path (conftest.py)

from recall_kit.decide.holes import PairedBounds
from recall_kit.study.hole_evidence import attach_bounds, hole_bounds, verdict_bounds
from recall_kit.study.result import KappaAgainst, StudyResult, Verdict
from recall_kit.study.steps.bounds import BoundsOutput


def _row(candidate: str, scope: str, delta: float, high: float, p_high: float, metric: str = "recall@5",
         baseline: str = "fts5") -> PairedBounds:
    return PairedBounds(baseline=baseline, candidate=candidate, metric=metric, scope=scope, n=40, delta=delta,
                        low=delta, high=high, all_relevant=high, p_value=0.001, p_low=0.001, p_high=p_high,
                        holes=12, movers=3, condensed_baseline=0.5, condensed_candidate=0.6)


def _study() -> StudyResult:
    study = copy.deepcopy(clean_study())
    study.verdicts = [Verdict("overall", "hybrid", "adopt", "better"), Verdict("exact", "hybrid", "adopt", "better")]
    return study


def test_a_verdict_can_flip_when_any_of_its_rows_can_and_reads_its_first_metric() -> None:
    steady = _row("hybrid", "overall", 0.2, 0.3, 0.001)
    flips = _row("hybrid", "overall", 0.2, 0.3, 0.5, metric="mrr@5")
    found = hole_bounds([steady, flips])
    assert found is not None and found.can_flip
    assert (found.delta_if_none_relevant, found.delta_if_all_relevant) == (0.2, 0.3)
    assert found.judged_only_delta is not None and abs(found.judged_only_delta - 0.1) < 1e-9
    assert hole_bounds([steady]).can_flip is False  # type: ignore[union-attr]
    against = hole_bounds([steady], sign=-1.0)
    assert against is not None and against.delta_if_none_relevant == -0.2
    assert hole_bounds([]) is None


def test_each_verdict_gets_only_its_own_rows() -> None:
    study = _study()
    study.bounds = [_row("hybrid", "overall", 0.2, 0.3, 0.001), _row("hybrid", "exact", 0.1, 0.2, 0.5),
                    _row("lexical", "overall", 0.0, 0.1, 0.5)]
    pairs = verdict_bounds(study)
    assert [(v.scope, [b.scope for b in rows]) for v, rows in pairs] == [("overall", ["overall"]), ("exact", ["exact"])]


def test_attach_bounds_puts_rows_verdict_summaries_and_typed_people_on_the_result() -> None:
    study = _study()
    found = BoundsOutput([_row("hybrid", "overall", 0.2, 0.3, 0.001).to_dict(),
                          _row("hybrid", "exact", 0.1, 0.2, 0.5).to_dict()])
    agreement = {"assessors": {"alice": 4}, "between": [],
                 "against_qrels": [{"assessor": "alice", "kappa": 1.0, "n": 4, "interval": None, "agreed": 4}]}
    attach_bounds(study, found, {"added": 2}, agreement)
    assert [b.scope for b in study.bounds] == ["overall", "exact"]
    assert [v.bounds.can_flip for v in study.verdicts if v.bounds] == [False, True]
    assert study.people is not None and study.people.added == 2
    assert study.people.against_qrels == [KappaAgainst("alice", 1.0, 4, None, 4)]
    bare = _study()
    attach_bounds(bare, BoundsOutput(), None, None)
    assert bare.people is None and all(v.bounds is None for v in bare.verdicts)
