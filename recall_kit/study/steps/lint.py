"""The lint step: `recall-kit dataset lint` of the evaluation set, every stratum against its
construction rule (ids only). The smallest step: a module of its own, as every step is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recall_kit.fileio import write_json_atomic
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import StepRule


@dataclass(frozen=True)
class LintReads:
    """Nothing of study.toml: lint reads the evaluation set alone."""


def make_lint(_: LintReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit dataset lint`: every stratum against its construction rule (ids only)."""
    from recall_kit.curate.lint import lint_dataset
    from recall_kit.dataset import load_dataset

    report = lint_dataset(load_dataset(artefacts.path("evaluation-set")))
    write_json_atomic(folder / "lint.json", report.to_dict())


def lint_command(_: LintReads, folder: Path) -> str:
    return "recall-kit dataset lint steps/evaluation-set"


RULE = StepRule("lint", LintReads, lambda at, _: LintReads(), make_lint, needs=lambda _: ["evaluation-set"],
                reproduce=lint_command)
