"""score's tables: measures headed by the names they were asked by, counts as whole numbers, each
query's values wide only when they fit, `--test` as compare has it."""

from __future__ import annotations

import pytest

from recall_kit.testing import invoke_cli

QRELS = "q1 0 d1 2\nq1 0 d3 1\nq2 0 d4 1\n"
RUN = "q1 Q0 d3 1 2.5 t\nq1 Q0 d1 2 2.0 t\nq2 Q0 d5 1 0.9 t\nq2 Q0 d4 2 0.8 t\n"
OTHER = "q1 Q0 d9 1 2.5 u\nq1 Q0 d1 2 2.0 u\nq2 Q0 d4 1 0.9 u\nq2 Q0 d5 2 0.8 u\n"


@pytest.fixture
def files(tmp_path):
    for name, text in (("qrels", QRELS), ("run", RUN), ("other", OTHER)):
        (tmp_path / name).write_text(text)
    return tmp_path


def _score(files, *args):
    return invoke_cli(["score", "--qrels", str(files / "qrels"), "--run", str(files / "run"), *args])


def test_a_measure_asked_by_its_trec_eval_or_ir_measures_name_is_shown_by_it(files):
    result = _score(files, "-m", "Rprec_mult_2.0,nDCG@10,P.5,10,recall@10")
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[1].split()
    assert header == ["query", "n", "Rprec_mult_2.0", "nDCG@10", "P_5", "P_10", "recall@10"]


def test_a_trec_eval_set_is_shown_by_trec_evals_names_and_counts_as_whole_numbers(files):
    result = _score(files, "-m", "official")
    lines = result.stdout.splitlines()
    header, means = lines[1].split(), lines[3].split()
    assert header[2:7] == ["num_q", "num_ret", "num_rel", "num_rel_ret", "map"]
    assert means[2:6] == ["2", "4", "3", "3"]  # not 4.0000: counts


def test_the_json_keeps_recall_kits_names(files, tmp_path):
    import json

    out = tmp_path / "s.json"
    assert _score(files, "-m", "P.5", "--json", str(out)).exit_code == 0
    assert list(json.loads(out.read_text())["overall"]) == ["precision@5", "n"]


def test_per_query_values_are_a_row_of_measures_only_when_they_fit():
    import recall_kit

    qrels = {"q1": {"d1": 2, "d3": 1}, "q2": {"d4": 1}}
    scored = recall_kit.compare(qrels, {"run": {"q1": ["d3", "d1"], "q2": ["d5", "d4"]}}, "all_trec")
    narrow = scored.report(per_query=True, width=80)
    assert [table.headers for table in narrow.tables][1] == ["query", "measure", "value"]
    assert len(narrow.tables[0].rows) == 1  # the means only; each query's values are long rows
    assert narrow.tables[1].rows[0][:2] == ["q1", "num_q"]
    few = recall_kit.compare(qrels, {"run": {"q1": ["d3", "d1"], "q2": ["d5", "d4"]}}, ["map", "P.5"])
    wide = few.report(per_query=True, width=80)
    assert len(wide.tables) == 1 and [row[0] for row in wide.tables[0].rows] == ["all", "q1", "q2"]
    assert wide.tables[0].headers == ["query", "n", "map", "P_5"]


def test_score_takes_test_as_compare_does(files):
    default = _score(files, "--run", str(files / "other"), "-m", "map")
    wilcoxon = _score(files, "--run", str(files / "other"), "-m", "map", "--test", "wilcoxon")
    assert default.exit_code == 0 and wilcoxon.exit_code == 0, wilcoxon.output
    assert default.stdout != wilcoxon.stdout


def test_a_misspelt_test_gets_a_did_you_mean(files):
    result = _score(files, "--run", str(files / "other"), "-m", "map", "--test", "ttest")
    assert result.exit_code == 2
    assert "Unknown test 'ttest' (did you mean 't-test'?)" in result.stderr


def test_the_cutoff_warning_names_the_depth_left_by_j_not_the_run_file(files):
    # q1 returns d3, d1 and d8 (unjudged): 3 documents in the file, 2 once -J drops d8.
    (files / "run").write_text(RUN + "q1 Q0 d8 3 1.0 t\n")
    result = _score(files, "-m", "P.3", "-J")
    assert ("warning: precision@3: cutoff past the deepest ranking in run once -J left only judged documents "
            "(2 documents)") in result.stdout
    assert "warning" not in _score(files, "-m", "P.3").stdout


def test_in_memory_scoring_with_judged_only_names_the_depth_it_left():
    import recall_kit

    scored = recall_kit.compare({"q1": {"a": 1}}, {"r": {"q1": ["a", "x", "y"]}}, "P.3", judged_only=True)
    assert any("once -J left only judged documents (1 documents)" in warning for warning in scored.warnings)
