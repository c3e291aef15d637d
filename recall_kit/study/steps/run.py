"""The run/NAME step, one per system: `recall-kit eval`, the system built, run, timed and scored on the
evaluation set (its reads, `RunReads`, and the run itself are shared with eval/NAME: steps/common.py)."""

from __future__ import annotations

from pathlib import Path

from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import EVALUATION, RunReads, StepRule, benchmark, run_command, run_reads


def make_run(reads: RunReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit eval`: the system built, run, timed and scored on the evaluation set."""
    benchmark(reads, artefacts.path("evaluation-set"), folder)


RULE = StepRule("run", RunReads, lambda at, _: run_reads(at.config, at.system), make_run,
                needs=lambda _: ["evaluation-set"], reproduce=run_command(EVALUATION), each_system=True)
