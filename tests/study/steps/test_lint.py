"""The lint step (recall_kit.study.steps.lint): it reads the evaluation set and writes its report; one
command reproduces it."""

from __future__ import annotations

import json
from pathlib import Path

from study.steps.test_corpus import evaluation_set  # tests/ is on sys.path (conftest.py)

from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.lint import LintReads, lint_command, make_lint


def test_lint_reports_on_the_evaluation_set_and_one_command_reproduces_it(tmp_path: Path) -> None:
    graph = evaluation_set(tmp_path)
    graph.path("lint").mkdir()
    make_lint(LintReads(), Artefacts(lambda: graph, "lint", ["evaluation-set"]), graph.path("lint"))
    report = json.loads((graph.path("lint") / "lint.json").read_text())
    assert report["queries"] == 2 and list(report["strata"]) == ["all"]
    assert lint_command(LintReads(), tmp_path) == "recall-kit dataset lint steps/evaluation-set"
