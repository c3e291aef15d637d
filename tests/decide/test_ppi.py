"""Prediction-powered intervals of a paired delta (recall_kit/decide/ppi.py): coverage by simulation,
as ppi-python's own tests check theirs, and the parts worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from recall_kit.decide import ppi
from recall_kit.decide.holes import Contrast, Holes, QueryHoles
from recall_kit.portable import on_grid


def _table(query: str, baseline: list[float], candidate: list[float], holes: tuple[str, ...]) -> QueryHoles:
    return QueryHoles(query, holes, np.array(baseline, dtype=float), np.array(candidate, dtype=float))


def _population(rng: np.random.Generator, n: int = 400):
    """Queries with one hole each in the candidate's top 1 (hit@1-like): relevant -> delta 1, else
    0 or -1 (the baseline's own hit); a fifth decided (no hole). Returns tables, truth, the predictor."""
    tables, truth, predicted = {}, {}, {}
    for i in range(n):
        q = f"q{i:03d}"
        base = float(rng.random() < 0.4)
        if i % 5 == 0:
            tables[q] = _table(q, [base], [1.0], ())
            continue
        tables[q] = _table(q, [base, base], [0.0, 1.0], (f"d{i}",))
        relevant = rng.random() < 0.5
        truth[q] = {f"d{i}": int(relevant)}
        # a judge right 90% of the time
        predicted[q] = {f"d{i}": float(relevant if rng.random() < 0.9 else not relevant)}
    return tables, truth, predicted


def _true_delta(tables, truth) -> float:
    values = [t.delta[ppi.labelling(t, lambda d, q=q: truth[q][d] >= 1)] if t.holes else t.delta[0]
              for q, t in tables.items()]
    return float(np.mean(values))


@pytest.mark.parametrize("method,with_judge", [(ppi.PPI, False), (ppi.PPI, True), (ppi.LABELLED, False)])
def test_the_interval_covers_the_truth_at_its_level(method, with_judge):
    covered, widths = [], []
    for seed in range(150):
        rng = np.random.default_rng(seed)
        tables, truth, predicted = _population(rng)
        sample = ppi.draw_sample([q for q, t in tables.items() if ppi.is_open(t)], seed)
        people = {q: truth[q] for q in sample[:60]}
        found = ppi.interval(tables, sample, people, predicted if with_judge else None, method=method, alpha=0.1)
        covered.append(found.covers(_true_delta(tables, truth)))
        widths.append(found.width)
    assert np.mean(covered) >= 0.84  # 90% nominal; 150 draws
    assert found.labelled == 60 and found.labels == 60 and found.decided == 80 and found.open == 320


def test_a_good_predictor_narrows_the_interval_and_none_does_not_break_it():
    rng = np.random.default_rng(3)
    tables, truth, predicted = _population(rng)
    sample = ppi.draw_sample([q for q, t in tables.items() if ppi.is_open(t)], 3)
    people = {q: truth[q] for q in sample[:80]}
    judge = ppi.interval(tables, sample, people, predicted)
    blind = ppi.interval(tables, sample, people)
    alone = ppi.interval(tables, sample, people, method=ppi.LABELLED)
    assert judge.width < 0.9 * blind.width
    assert blind.width < 0.9 * alone.width  # the judged part of each delta is a predictor too
    assert judge.predictor == "holes not relevant"  # the caller names it


def test_a_constant_predictor_gives_the_labelled_only_interval():
    rng = np.random.default_rng(4)
    tables = {f"q{i}": _table(f"q{i}", [0.0, 0.0], [0.0, 1.0], ("x",)) for i in range(100)}
    truth = {q: {"x": int(rng.random() < 0.3)} for q in tables}
    sample = ppi.draw_sample(list(tables), 4)
    people = {q: truth[q] for q in sample[:60]}
    blind = ppi.interval(tables, sample, people)
    alone = ppi.interval(tables, sample, people, method=ppi.LABELLED)
    assert (blind.low, blind.high) == pytest.approx((alone.low, alone.high))


def test_cross_prediction_from_features_narrows_it():
    rng = np.random.default_rng(5)
    tables, truth, predicted = _population(rng)
    sample = ppi.draw_sample([q for q, t in tables.items() if ppi.is_open(t)], 5)
    people = {q: truth[q] for q in sample[:80]}
    features = {(q, d): [p, rng.random()] for q, docs in predicted.items() for d, p in docs.items()}
    folds = ppi.cross_predictions(features, people, sample[:80], folds=4)
    crossed = ppi.interval(tables, sample, people, method=ppi.CROSS, cross=folds)
    alone = ppi.interval(tables, sample, people, method=ppi.LABELLED)
    assert crossed.method == ppi.CROSS and crossed.width < 0.8 * alone.width
    assert crossed.covers(_true_delta(tables, truth))
    with pytest.raises(ppi.PPIError):
        ppi.interval(tables, sample, people, method=ppi.CROSS)


def test_decided_queries_count_exactly_and_a_fully_labelled_frame_is_exact():
    tables = {"a": _table("a", [0.0], [1.0], ()), "b": _table("b", [1.0, 1.0], [0.0, 1.0], ("x",)),
              "c": _table("c", [0.0, 0.0], [0.0, 1.0], ("y",))}
    assert [ppi.is_open(t) for t in tables.values()] == [False, True, True]
    found = ppi.interval(tables, ["c", "b"], {"b": {"x": 1}, "c": {"y": 0}})
    assert found.method == ppi.EXACT and found.low == found.high == pytest.approx((1 + 0 + 0) / 3)
    assert (found.decided, found.open, found.labelled, found.labels) == (1, 2, 2, 2)
    assert ppi.interval(tables, ["c", "b"], {"c": {"y": 1}}) is None  # one labelled query: no interval
    assert ppi.interval(tables, ["c", "b"], {"c": {"y": 1}}, min_labelled=1) is None  # never fewer than 2
    with pytest.raises(ppi.PPIError, match="'b'"):
        ppi.interval(tables, ["c"], {})


def test_the_labelled_set_is_the_samples_longest_labelled_prefix():
    tables = {q: _table(q, [0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0], ("x", "y")) for q in "abcd"}
    people = {"a": {"x": 0, "y": 1}, "b": {"x": 1}, "c": {"x": 0, "y": 0}}
    assert ppi.labelled_prefix(["a", "c", "b", "d"], tables, people) == ["a", "c"]
    assert ppi.labelled_prefix(["b", "a"], tables, people) == []


def test_predicted_delta_is_the_expectation_over_the_holes():
    table = _table("q", [0, 0, 0, 0], [0.0, 0.5, 1.0, 1.0], ("x", "y"))  # codes: bit 0 x, bit 1 y
    assert ppi.predicted_delta(table, {}) == 0.0
    assert ppi.predicted_delta(table, {"x": 1.0}) == 0.5
    assert ppi.predicted_delta(table, {"x": 0.5, "y": 0.5}) == pytest.approx((0 + 0.5 + 1 + 1) / 4)
    assert ppi.labelling(table, lambda d: d == "y") == 2
    # a judge's probabilities (the study's predictor): the expectation, on the grid, the same on every CPU
    third = ppi.predicted_delta(table, {"x": 0.1, "y": 0.3})
    assert third == on_grid(0.1 * 0.7 * 0.5 + 0.9 * 0.3 * 1.0 + 0.1 * 0.3 * 1.0) and third == on_grid(third)


def test_tables_from_holes_give_the_same_truth_as_scoring_with_every_label():
    rankings = {"a": {"q1": ["1", "2"], "q2": ["3", "4"]}, "b": {"q1": ["2", "5"], "q2": ["4", "3"]}}
    shown = {"q1": {"1": 1}, "q2": {"3": 1}}
    contrast = Contrast("a", "b", "hit@1", "overall", ("q1", "q2"))
    holes = Holes(rankings, shown, [contrast], n_resamples=50)
    tables = {q: holes.table(contrast, q) for q in ("q1", "q2")}
    sample = ppi.draw_sample([q for q, t in tables.items() if ppi.is_open(t)], 0)
    found = ppi.interval(tables, sample, {"q1": {"2": 1}, "q2": {"4": 0}})
    assert found.method == ppi.EXACT and found.delta == pytest.approx((0 + -1) / 2)


def test_draw_sample_is_seeded_and_ignores_input_order():
    ids = [f"q{i}" for i in range(50)]
    assert ppi.draw_sample(ids, 7) == ppi.draw_sample(list(reversed(ids)), 7)
    assert ppi.draw_sample(ids, 7) != ppi.draw_sample(ids, 8)
    assert sorted(ppi.draw_sample(ids, 7)) == sorted(ids)


def test_the_power_analysis_asks_more_labels_for_a_narrower_interval():
    rng = np.random.default_rng(11)
    tables, truth, predicted = _population(rng)
    sample = ppi.draw_sample([q for q, t in tables.items() if ppi.is_open(t)], 11)
    blind = ppi.plan_labels(tables, sample, {}, 0.2)
    assert blind.correlation is None and blind.labels == blind.queries  # one hole a query
    assert ppi.plan_labels(tables, sample, {}, 0.1).queries > blind.queries
    people = {q: truth[q] for q in sample[:60]}
    judged = ppi.plan_labels(tables, sample, people, 0.2, predicted)
    classical = ppi.plan_labels(tables, sample, people, 0.2)
    assert judged.correlation is not None and judged.correlation > 0.5
    assert judged.queries < classical.queries
    assert ppi.plan_labels(tables, sample, people, 0.001).everything
    with pytest.raises(ppi.PPIError):
        ppi.plan_labels(tables, sample, people, 0.0)
