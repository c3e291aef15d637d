"""The lint step: `recall-kit dataset lint` of the evaluation set, every stratum against its
construction rule (ids only). The smallest step: a module of its own, as every step is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import StepRule, write_output


@dataclass
class LintOutput:
    """lint.json: `recall-kit dataset lint`'s report (curate/lint.py `LintReport.to_dict`). A finding's
    keys vary with its kind (those it lacks are left out), so each finding stays a mapping."""

    path: str
    settings: dict[str, Any]
    queries: int
    strata: dict[str, int]
    near_duplicate_pairs: list[list[Any]]
    counts: dict[str, int]
    findings: list[dict[str, Any]]
    ok: bool


@dataclass(frozen=True)
class LintReads:
    """Nothing of study.toml: lint reads the evaluation set alone."""


def make_lint(_: LintReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit dataset lint`: every stratum against its construction rule (ids only)."""
    from recall_kit.curate.lint import lint_dataset
    from recall_kit.dataset import load_dataset

    report = lint_dataset(load_dataset(artefacts.path("evaluation-set")))
    write_output(folder / "lint.json", LintOutput(**report.to_dict()))


def lint_command(_: LintReads, folder: Path) -> str:
    return "recall-kit dataset lint steps/evaluation-set"


RULE = StepRule("lint", LintReads, lambda at, _: LintReads(), make_lint, needs=lambda _: ["evaluation-set"],
                reproduce=lint_command)
