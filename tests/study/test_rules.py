"""The recommendation's rules: the simplest adequate system, what the dense and graph legs buy, and
verdicts the study's own evidence makes provisional. Each rule planted to fire and not to fire."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from study.test_threats import clean_study  # tests/ is on sys.path (conftest.py)

from recall_kit.decide.compare import ComparisonRow, SavedComparison
from recall_kit.study import rules
from recall_kit.study.collect import mark_reach, smallest_p
from recall_kit.study.result import AgreementSummary, HeadToHead, LabelsSummary, StudyResult, SystemSummary


def _system(name: str, legs: list[str], recall: float, p50: float) -> SystemSummary:
    return SystemSummary(name=name, retriever="+".join(legs), legs=legs, fusions=[], models={},
                         means={"overall": {"recall@5": recall, "mrr@5": recall - 0.1}}, unjudged_share=0.0,
                         first_hit_share={}, latency_p50_ms=p50, index_bytes=1000 * len(legs))


def _compared(system: str, baseline: str, metric: str, delta: float, significant: bool) -> ComparisonRow:
    """`system` against `baseline` (delta = system - baseline), interval +-0.03 around it."""
    return ComparisonRow(system=system, metric=metric, scope="overall", n=200, baseline=0.6, value=0.6 + delta,
                         delta=delta, ci_low=delta - 0.03, ci_high=delta + 0.03, prob_not_better=0.0,
                         p_value=0.001 if significant else 0.4, p_holm=0.004 if significant else 0.6)


def _row(system: str, baseline: str, metric: str, delta: float, significant: bool) -> HeadToHead:
    """The study's copy of `_compared`'s row."""
    row = _compared(system, baseline, metric, delta, significant)
    return HeadToHead.of(row, [row])


def study_of(lexical: tuple[float, float], hybrid: tuple[float, float],
             significant: tuple[bool, bool] = (True, True)) -> tuple[StudyResult, SavedComparison]:
    """fts5 (baseline), lexical (bm25), hybrid (bm25+dense) and the best, hybrid-graph; the simpler
    systems' deltas against the best (recall@5, mrr@5) as given, the best beating fts5."""
    study = copy.deepcopy(clean_study())
    study.systems = [_system("fts5", ["fts5"], 0.4, 0.1), _system("lexical", ["bm25"], 0.7, 0.2),
                     _system("hybrid", ["bm25", "dense"], 0.72, 40.0),
                     _system("hybrid-graph", ["bm25", "dense", "graph"], 0.74, 150.0)]
    study.head_to_head = [_row("hybrid-graph", "fts5", m, 0.3, True) for m in ("recall@5", "mrr@5")]
    rows = [_compared(name, "hybrid-graph", metric, delta, significant[i])
            for name, deltas in (("lexical", lexical), ("hybrid", hybrid))
            for i, (metric, delta) in enumerate(zip(("recall@5", "mrr@5"), deltas, strict=True))]
    simpler = SavedComparison(baseline="hybrid-graph", systems=["hybrid-graph", "lexical", "hybrid"],
                              metrics=["recall@5", "mrr@5"], primary=["recall@5", "mrr@5"], resamples=2000, seed=0,
                              rows=rows)
    return study, simpler


def test_the_order_of_simplicity_puts_the_baseline_first_then_fewer_and_cheaper_legs() -> None:
    study, _ = study_of((-0.1, -0.1), (-0.1, -0.1))
    assert rules.simpler_than(study, "hybrid-graph") == ["fts5", "lexical", "hybrid"]


def test_a_simpler_system_within_noise_is_recommended() -> None:
    # lexical: -0.01 / +0.01 against the best, neither significant: the best does not earn its legs.
    study, simpler = study_of((-0.01, 0.01), (-0.05, -0.05), significant=(False, False))
    recommendation = rules.recommend_simplest(study, simpler)
    assert recommendation is not None and recommendation.system == "lexical"
    assert [c.richer_earns for c in recommendation.comparisons] == [True, False, False]
    assert "not significantly better than lexical" in recommendation.because


def test_the_richer_system_stands_when_significantly_better_and_worse_on_none() -> None:
    study, simpler = study_of((-0.1, -0.08), (-0.05, -0.04))
    recommendation = rules.recommend_simplest(study, simpler)
    assert recommendation is not None and recommendation.system == "hybrid-graph"
    assert all(c.richer_earns for c in recommendation.comparisons)


def test_better_on_one_metric_but_worse_on_another_does_not_earn_it() -> None:
    study, simpler = study_of((-0.1, +0.08), (-0.05, -0.04))  # lexical: worse recall, better MRR
    recommendation = rules.recommend_simplest(study, simpler)
    assert recommendation is not None and recommendation.system == "lexical"


def test_a_margin_keeps_the_simpler_system_only_when_shown_as_good() -> None:
    # Within noise, but its interval reaches -0.04 and -0.06: a 0.05 margin does not hold on MRR.
    study, simpler = study_of((-0.01, -0.03), (-0.01, -0.01), significant=(False, False))
    wide = rules.recommend_simplest(study, simpler, margin=0.05)
    assert wide is not None and wide.system == "hybrid"  # hybrid: -0.04 at worst on both, within 0.05
    assert [c.non_inferior for c in wide.comparisons] == [False, False, True]
    tight = rules.recommend_simplest(study, simpler, margin=0.01)
    assert tight is not None and tight.system == "hybrid-graph"
    loose = rules.recommend_simplest(study, simpler, margin=0.1)
    assert loose is not None and loose.system == "lexical"


def test_the_bottom_line_says_what_dense_and_graph_buy_with_intervals() -> None:
    study, simpler = study_of((-0.1, -0.08), (-0.02, -0.01), significant=(True, False))
    recommendation = rules.recommend_simplest(study, simpler)
    assert recommendation is not None
    # dense: the best without a dense leg is lexical; graph: the best without a graph leg is hybrid.
    assert recommendation.legs["dense"].startswith("hybrid-graph over lexical (the best candidate without a dense leg)")
    assert "recall@5 +0.1000 [+0.0700, +0.1300] (significant)" in recommendation.legs["dense"]
    assert "hybrid-graph over hybrid (the best candidate without a graph leg)" in recommendation.legs["graph"]
    assert "mrr@5 +0.0100 [-0.0200, +0.0400] (within noise)" in recommendation.legs["graph"]


def test_a_best_candidate_without_the_leg_says_so() -> None:
    study, simpler = study_of((-0.1, -0.08), (-0.05, -0.04))
    study.systems[3].means["overall"]["recall@5"] = 0.5  # hybrid is now the best: it has no graph leg
    rows = [_row("hybrid-graph", "hybrid", m, d, False) for m, d in (("recall@5", -0.02), ("mrr@5", 0.01))]
    simpler = dataclasses.replace(simpler, rows=rows)
    worth = rules.leg_worth(study, "hybrid", simpler)
    assert worth["graph"] == ("the best candidate (hybrid) has no graph leg; hybrid-graph (the best with one) over it: "
                              "recall@5 -0.0200 [-0.0500, +0.0100] (within noise); "
                              "mrr@5 +0.0100 [-0.0200, +0.0400] (within noise)")


@pytest.mark.parametrize(("agreement", "source", "provisional"), [
    (AgreementSummary(measured=False, why="none named"), "words", True),  # a model judge, never measured
    (AgreementSummary(measured=True, kappa=0.3, n=80), "words", True),  # measured, below 0.6
    (AgreementSummary(measured=True, kappa=0.3, n=80), "qrels", True),  # the user's own labels, disagreeing
    (AgreementSummary(measured=True, kappa=0.75, n=80), "words", False),
    (AgreementSummary(measured=False, why="one judge"), "qrels", False),  # the user's labels, no second judge
])
def test_judge_agreement_makes_the_verdict_provisional(agreement: AgreementSummary, source: str,
                                                       provisional: bool) -> None:
    study, simpler = study_of((-0.1, -0.08), (-0.05, -0.04))
    study.agreement = agreement
    study.labels = LabelsSummary(source, 100, 10, 100, 80)
    study.strata = []
    recommendation = rules.recommend_simplest(study, simpler)
    assert recommendation is not None and recommendation.provisional is provisional
    assert all(v.provisional is provisional for v in rules.recommend(study))
    from recall_kit.study.document import bottom_line

    study.verdicts, study.recommendation = rules.recommend(study), recommendation
    assert bottom_line(study)[0].startswith("Provisional recommendation" if provisional else "Recommendation:")


def test_a_small_stratum_in_a_large_family_cannot_reach_significance() -> None:
    # The case: 10 queries in a 32-row Holm family: 2^-9 * 32 = 0.0625 >= 0.05.
    assert smallest_p(10, 2000) == pytest.approx(2 ** -9)
    assert smallest_p(40, 2000) == pytest.approx(1 / 2001)  # the resamples bound it
    study = copy.deepcopy(clean_study())
    small = dataclasses.replace(study.strata[0], name="tiny", queries=10)
    mark_reach([small, study.strata[0]], family_rows=32, resamples=2000)
    assert not small.reachable and study.strata[0].reachable
    # The detectable delta in the family is larger than at alpha 0.05 alone (alpha / 32).
    assert small.minimum_detectable_in_family["recall@5"] > small.minimum_detectable["recall@5"]  # type: ignore[operator]
    study.strata = [small, study.strata[0]]
    study.head_to_head = [h for h in study.head_to_head if h.scope == "overall"]
    hint = rules.stratum_hint(study, "tiny")
    assert "no effect could reach significance here" in hint and "0.0625" in hint
    assert "could detect in its family" in rules.stratum_hint(study, "paraphrase")


def test_the_typed_result_round_trips_through_json() -> None:
    """study.json holds every section as data, and reads back into the same dataclasses."""
    import json

    study, simpler = study_of((-0.01, 0.01), (-0.05, -0.05), significant=(False, False))
    study.verdicts, study.recommendation = rules.recommend(study), rules.recommend_simplest(study, simpler, 0.05)
    data = json.loads(json.dumps(study.to_dict()))
    assert data["schema"] == "recall-kit/study/2"
    back = StudyResult.from_dict(data)
    assert back == study
    assert isinstance(back.recommendation.comparisons[1].rows[0], HeadToHead)  # type: ignore[union-attr]


def _at_ceiling(row: Any) -> Any:
    """A head-to-head or saved comparison row with both systems at the ceiling."""
    at = {"baseline": 1.0, "value": 1.0, "delta": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0, "p_holm": 1.0}
    if "significant" in {field.name for field in dataclasses.fields(row)}:
        at["significant"] = False
    return dataclasses.replace(row, **at)


def test_a_saturated_evaluation_set_cannot_show_a_difference_rather_than_a_delta_of_zero() -> None:
    """Every system at the ceiling: the verdict and what each leg buys say so, no "+0.0000 (within noise)"."""
    from recall_kit.study.document import bottom_line

    study, simpler = study_of((0.0, 0.0), (0.0, 0.0), significant=(False, False))
    study.head_to_head = [_at_ceiling(row) for row in study.head_to_head]
    simpler = dataclasses.replace(simpler, rows=[_at_ceiling(row) for row in simpler.rows])
    study.strata = []
    study.recommendation = rules.recommend_simplest(study, simpler)
    study.verdicts = rules.recommend(study)
    lines = "\n".join(bottom_line(study))
    assert "+0.0000" not in lines
    assert "cannot show a difference: every system scores the ceiling on recall@5, mrr@5" in lines
    assert "What the dense leg buys: " in lines and "recall@5: cannot show a difference (both at the ceiling" in lines


def test_the_verdicts_are_about_the_recommended_system_and_say_whether_the_holes_can_flip_them() -> None:
    from recall_kit.decide.holes import PairedBounds
    from recall_kit.study.document import bottom_line

    study, simpler = study_of((-0.01, 0.01), (-0.05, -0.05), significant=(False, False))
    study.head_to_head += [_row("lexical", "fts5", m, 0.25, True) for m in ("recall@5", "mrr@5")]
    study.strata = []
    study.recommendation = rules.recommend_simplest(study, simpler)
    assert study.recommendation is not None and study.recommendation.system == "lexical"
    study.verdicts = rules.recommend(study)
    assert [v.system for v in study.verdicts] == ["lexical"]  # not the best candidate, hybrid-graph
    # recall@5 stays better at both ends; mrr@5's low end (-0.1, p 0.01) is worse: it can flip.
    study.bounds = [PairedBounds("fts5", "lexical", m, "overall", 200, 0.25, low, 0.4, 0.3, 0.001, p_low, 0.001, 10, 4)
                    for m, low, p_low in (("recall@5", 0.1, 0.01), ("mrr@5", -0.1, 0.01))]
    lines = bottom_line(study)
    assert lines[0].startswith("Recommendation: lexical")
    adopt = next(line for line in lines if line.startswith("Adopt: "))
    assert adopt.startswith("Adopt: lexical against fts5")
    assert adopt.endswith("Pairs no person labelled: recall@5 cannot flip; mrr@5 can flip.")


def test_every_p_value_the_document_prints_names_the_size_of_its_family() -> None:
    """Issue 63: "Holm p 0.0040" alone cannot be told from the same pair's p in another family; the
    verdict, the ablation notes and every "p (Holm)" column name how many rows Holm ran over."""
    import re

    from recall_kit.study.document import render_markdown

    study, simpler = study_of((-0.01, 0.01), (-0.05, -0.05), significant=(False, False))
    compared = [_compared(name, "fts5", m, 0.25, True) for name in ("lexical", "hybrid-graph")
                for m in ("recall@5", "mrr@5")]
    study.head_to_head = [HeadToHead.of(row, compared) for row in compared]
    study.strata = []
    study.recommendation = rules.recommend_simplest(study, simpler)
    study.verdicts = rules.recommend(study)
    assert ("recall@5 +0.2500 [+0.2200, +0.2800] (95% CI, not Holm-adjusted), Holm p 0.0040 among 4 primary rows, n 200"
            in study.verdicts[0].because)
    document = render_markdown(study)
    assert "p (Holm): adjusted among 4 primary rows" in document.split("## Head-to-head")[1]
    simplest = document.split("## Simplest adequate system")[1].split("## ")[0]
    assert "p (Holm): adjusted among 4 primary rows" in simplest
    printed = re.findall(r"Holm p [0-9.e-]+ ?[a-z]*", document)
    assert printed and all(p.endswith(" among") for p in printed), printed


# -- one system in the conclusion; a headline no stronger than its rows (issue 71) ------------------


def _lexical_adopted() -> StudyResult:
    """The recommendation lexical (the best, hybrid-graph, does not earn its legs over it), adopted
    against fts5 on both decision metrics; mrr@5's low end can flip on the pairs no person labelled."""
    from recall_kit.decide.holes import PairedBounds

    study, simpler = study_of((-0.01, 0.01), (-0.05, -0.05), significant=(False, False))
    study.head_to_head += [_row("lexical", "fts5", m, 0.25, True) for m in ("recall@5", "mrr@5")]
    study.strata = []
    study.recommendation = rules.recommend_simplest(study, simpler)
    study.verdicts = rules.recommend(study)
    study.bounds = [PairedBounds("fts5", "lexical", m, "overall", 200, 0.25, low, 0.4, 0.3, 0.001, p_low, 0.001, 10, 4)
                    for m, low, p_low in (("recall@5", 0.1, 0.01), ("mrr@5", -0.1, 0.01))]
    return study


def _intervals(study: StudyResult, low: float | None) -> Any:
    """The intervals step's rows for lexical and hybrid-graph: each `low`..`low + 0.2` (None: too
    few labelled queries yet), 300 labels planned."""
    from recall_kit.decide.ppi import Interval, LabelPlan
    from recall_kit.study.hole_evidence import verdict_intervals
    from recall_kit.study.result import HoleInterval, HoleIntervals

    def row(candidate: str, metric: str) -> HoleInterval:
        found = None if low is None else Interval("ppi++", low + 0.1, low, low + 0.2, 200, 150, 50, 50, 300, "judge")
        return HoleInterval(candidate, metric, "overall", 200, 50, 0 if low is None else 50, found,
                            LabelPlan(0.2, 45, 300, None, False), "zero")

    found = HoleIntervals(None, "the judge", ["q1"], [row(c, m) for c in ("hybrid-graph", "lexical")
                                                     for m in ("recall@5", "mrr@5")])
    return verdict_intervals(study, found)


def test_the_intervals_speak_of_the_recommended_system_not_the_best_candidate() -> None:
    study = _lexical_adopted()
    assert study.challenger == "hybrid-graph" and study.recommendation.system == "lexical"
    study.intervals = _intervals(study, None)
    assert study.intervals.challenger == "lexical"
    assert {row.candidate for row in study.intervals.rows} == {"lexical"}


def test_the_headline_is_provisional_while_a_row_can_flip_and_no_interval_supports_it() -> None:
    from recall_kit.study.document import bottom_line

    study = _lexical_adopted()
    study.intervals = _intervals(study, None)
    rules.mark_provisional(study)  # the judge agrees (kappa 0.74): only the holes hold it back
    lines = bottom_line(study)
    assert lines[0].startswith("Provisional recommendation: lexical")
    assert "mrr@5 can flip on the pairs no person labelled, and no hole-aware interval yet (0 of the 50" in lines[0]
    assert "about 300 labels, 45 queries of the seeded sample, settle it" in lines[0]
    study.intervals = _intervals(study, -0.3)  # labelled: the intervals say "do not adopt", not "adopt"
    rules.mark_provisional(study)
    assert "the hole-aware intervals say 'do not adopt', not 'adopt'" in bottom_line(study)[0]
    study.intervals = _intervals(study, 0.05)  # they exclude 0 above: they support "adopt"
    rules.mark_provisional(study)
    assert bottom_line(study)[0].startswith("Recommendation: lexical") and not study.verdicts[0].provisional


def test_the_judge_holds_the_verdict_back_until_its_kappa_reaches_min_kappa() -> None:
    from recall_kit.study.document import bottom_line

    study = _lexical_adopted()
    study.intervals = _intervals(study, 0.05)
    study.labels = dataclasses.replace(study.labels, source="combined")
    study.agreement = AgreementSummary(measured=True, kappa=0.55, n=300, kappa_ci=[0.45, 0.65], against="alice",
                                       threshold=0.6)
    rules.mark_provisional(study)
    assert "judge agreement kappa 0.550 [0.450, 0.650] on 300 pairs (alice) is below 0.6" in bottom_line(study)[0]
    study.agreement = dataclasses.replace(study.agreement, kappa=0.6)
    rules.mark_provisional(study)
    assert not study.recommendation.provisional
    study.agreement = AgreementSummary(measured=False, why="never compared")
    rules.mark_provisional(study)
    assert "its agreement was never measured against a person's grades" in bottom_line(study)[0]


def test_every_system_at_the_ceiling_is_inconclusive_in_the_first_line() -> None:
    from recall_kit.study.document import bottom_line

    study = _lexical_adopted()
    for system in study.systems:
        system.means["overall"]["recall@5"] = 1.0
    rules.mark_provisional(study)
    lines = bottom_line(study)
    assert lines[0].startswith("Inconclusive: every system scores 1.000 on recall@5; add queries the store's words "
                               "do not answer")
    assert lines[1].startswith("Provisional recommendation: lexical") and "every system scores 1.000" in lines[1]
