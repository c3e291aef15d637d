"""The lint step (recall_kit.study.steps.lint): it reads the evaluation set and writes its report; one
command reproduces it."""

from __future__ import annotations

from pathlib import Path

from study.steps.test_corpus import evaluation_set  # tests/ is on sys.path (conftest.py)

from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import read_output
from recall_kit.study.steps.lint import LintOutput, LintReads, lint_command, make_lint


def test_lint_reports_on_the_evaluation_set_and_one_command_reproduces_it(tmp_path: Path) -> None:
    graph = evaluation_set(tmp_path)
    graph.path("lint").mkdir()
    make_lint(LintReads(), Artefacts(lambda: graph, "lint", ["evaluation-set"]), graph.path("lint"))
    report = read_output(LintOutput, graph.path("lint") / "lint.json")  # the step's typed output
    assert report.queries == 2 and list(report.strata) == ["all"] and report.ok == (not report.findings)
    assert lint_command(LintReads(), tmp_path) == "recall-kit dataset lint steps/evaluation-set"
