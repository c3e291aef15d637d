"""recall-kit agreement: Cohen's kappa and linearly weighted kappa, worked by hand and checked
against scikit-learn's cohen_kappa_score; bootstrap intervals; the CLI's JSON and its warning."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from recall_kit.cli import app
from recall_kit.curate.agreement import agreement, binary_measures, cohen_kappa, paired_grades, wilson_interval

runner = CliRunner()


def test_kappa_by_hand():
    # 2x2: A says yes/no, B says yes/no. Observed agreement (20 + 15) / 50 = 0.7;
    # chance: A yes 25/50, B yes 30/50 -> 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4.
    assert cohen_kappa([[20, 5], [10, 15]]) == pytest.approx(0.4)
    # Linear weights on 3 grades: kappa = 1 - sum |i-j| O_ij / sum |i-j| E_ij, E_ij = row_i * col_j / n.
    confusion = [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    rows, cols, n = [2, 2, 2], [2, 3, 1], 6
    observed = 1 * 1 + 2 * 1  # cell (0,1) weight 1; cell (2,0) weight 2
    expected = sum(abs(i - j) * rows[i] * cols[j] / n for i in range(3) for j in range(3))
    assert cohen_kappa(confusion, weighted=True) == pytest.approx(1 - observed / expected)
    assert math.isnan(cohen_kappa([[5, 0], [0, 0]]))


def _random_qrels(seed: int, scale: int = 4):
    import random

    rng = random.Random(seed)
    a, b = {}, {}
    for q in range(12):
        for d in range(rng.randint(2, 8)):
            grade = rng.randrange(scale)
            a.setdefault(f"q{q}", {})[str(d)] = grade
            noisy = grade if rng.random() < 0.6 else rng.randrange(scale)
            if rng.random() < 0.9:
                b.setdefault(f"q{q}", {})[str(d)] = noisy
    b.setdefault("only_b", {})["x"] = 1
    return a, b


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_kappa_equals_scikit_learn(seed):
    from sklearn.metrics import cohen_kappa_score

    a, b = _random_qrels(seed)
    result = agreement(a, b, samples=0)
    grades_a, grades_b, only_a, only_b = paired_grades(a, b)
    labels = list(range(min(grades_a + grades_b), max(grades_a + grades_b) + 1))
    assert result.kappa == pytest.approx(cohen_kappa_score(grades_a, grades_b), abs=1e-12)
    assert result.weighted_kappa == pytest.approx(
        cohen_kappa_score(grades_a, grades_b, labels=labels, weights="linear"), abs=1e-12)
    assert result.n == len(grades_a) and only_b >= 1 and result.only_a == only_a
    binary = agreement(a, b, samples=0, binary=True)
    assert binary.kappa == pytest.approx(
        cohen_kappa_score([int(g >= 1) for g in grades_a], [int(g >= 1) for g in grades_b]), abs=1e-12)


def test_bootstrap_interval_holds_the_estimate_and_is_seeded():
    a, b = _random_qrels(5)
    first = agreement(a, b, samples=500, seed=3)
    again = agreement(a, b, samples=500, seed=3)
    assert first.kappa_ci == again.kappa_ci
    low, high = first.kappa_ci
    assert low <= first.kappa <= high
    low, high = first.weighted_kappa_ci
    assert low <= first.weighted_kappa <= high


def test_cli_prints_warns_and_writes_json(tmp_path):
    model = tmp_path / "model.jsonl"
    person = tmp_path / "person.jsonl"
    model.write_text('{"query_id": "q1", "relevance": {"1": 3, "2": 0, "3": 1}, "_judge_model": "m"}\n'
                     '{"query_id": "q2", "relevance": {"4": 2, "5": 0}}\n')
    person.write_text('{"query_id": "q1", "relevance": {"1": 3, "2": 1}}\n'
                      '{"query_id": "q2", "relevant_ids": [5]}\n')
    out = tmp_path / "agreement.json"
    result = runner.invoke(app, ["agreement", str(model), str(person), "--json", str(out), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    # Pairs judged by both: (q1,1) 3/3, (q1,2) 0/1, (q2,5) 0/1 -> n = 3; only A: (q1,3), (q2,4).
    assert data["n"] == 3 and data["only_a"] == 2 and data["only_b"] == 0
    assert data["labels"] == [0, 1, 2, 3]
    assert data["confusion"][3][3] == 1 and data["confusion"][0][1] == 2
    # Observed agreement 1/3; chance: A (0: 2/3, 3: 1/3), B (1: 2/3, 3: 1/3) -> 1/9; kappa = (1/3 - 1/9) / (8/9).
    assert data["kappa"] == pytest.approx((1 / 3 - 1 / 9) / (8 / 9), abs=1e-6)
    assert set(data) >= {"kappa", "weighted_kappa", "n"}
    assert "below 0.6" in result.output
    assert "Cohen's kappa" in result.output


def test_cli_no_common_pairs_is_one_line(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"query_id": "q1", "relevant_ids": [1]}\n')
    (tmp_path / "b.jsonl").write_text('{"query_id": "q2", "relevant_ids": [1]}\n')
    result = runner.invoke(app, ["agreement", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert result.exit_code == 2
    assert "no (query, id) pair in common" in result.output


def test_sensitivity_specificity_and_wilson_by_hand():
    # Reference (A): 4 relevant, 6 not. Judge (B): finds 3 of the 4, calls 1 of the 6 relevant.
    reference = [1, 2, 3, 1, 0, 0, 0, 0, 0, 0]
    judged = [2, 3, 0, 1, 1, 0, 0, 0, 0, 0]
    found = binary_measures(reference, judged, samples=200)
    assert (found.n, found.positives) == (10, 4)
    assert found.sensitivity == pytest.approx(3 / 4) and found.specificity == pytest.approx(5 / 6)
    assert found.kappa == pytest.approx(cohen_kappa([[5, 1], [1, 3]]))
    # Wilson (z = 1.96) for 3 of 4: centre (0.75 + z^2/8) / (1 + z^2/4), half-width
    # z * sqrt(0.75 * 0.25 / 4 + z^2 / 64) / (1 + z^2/4).
    z = 1.959964
    centre = (0.75 + z * z / 8) / (1 + z * z / 4)
    half = z * math.sqrt(0.75 * 0.25 / 4 + z * z / 64) / (1 + z * z / 4)
    low, high = wilson_interval(3, 4)
    assert low == pytest.approx(centre - half, abs=1e-5) and high == pytest.approx(centre + half, abs=1e-5)
    assert found.sensitivity_ci == (low, high)
    assert wilson_interval(0, 0) is None


def test_cli_measures_b_against_a_per_stratum(tmp_path):
    from recall_kit.testing import write_sample_dataset

    dataset = write_sample_dataset(tmp_path / "sample")
    person = tmp_path / "person.jsonl"
    model = tmp_path / "model.jsonl"
    person.write_text('{"query_id": "exact_keys", "relevance": {"1": 1, "2": 0}}\n'
                      '{"query_id": "para_coffee", "relevance": {"3": 2, "4": 0}}\n')
    model.write_text('{"query_id": "exact_keys", "relevance": {"1": 2, "2": 0}}\n'
                     '{"query_id": "para_coffee", "relevance": {"3": 0, "4": 0}}\n')
    out = tmp_path / "a.json"
    result = runner.invoke(app, ["agreement", str(person), str(model), "-d", str(dataset), "--json", str(out),
                                 "--samples", "50"])
    assert result.exit_code == 0, result.output
    strata = json.loads(out.read_text())["binary_against_a"]
    assert sorted(strata) == ["all", "exact", "paraphrase"]
    assert strata["exact"]["sensitivity"] == 1.0 and strata["exact"]["specificity"] == 1.0
    assert strata["paraphrase"]["sensitivity"] == 0.0 and strata["paraphrase"]["specificity"] == 1.0
    assert strata["all"]["sensitivity"] == 0.5 and strata["all"]["n"] == 4
    assert "paraphrase: n 2 (1 relevant)" in result.output
