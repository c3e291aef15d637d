"""The eval/NAME step, one per system: `recall-kit eval` on the judged set, whatever made its labels
(the user's qrels, people's, a model judge's)."""

from __future__ import annotations

import shutil
from pathlib import Path

from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.pipeline.graph import file_hash
from recall_kit.study.steps.common import DATASET_FILES, JUDGED, RunReads, StepRule, benchmark, run_command, run_reads


def make_eval(reads: RunReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit eval` on the judged set: the run's own result where the judged set is the evaluation
    set, file for file (the same rankings scored on the same labels), else the system run and scored on it."""
    judged = artefacts.path("judgments") / "dataset"
    run = artefacts.path(f"run/{reads.system.name}")
    evaluation = artefacts.path("evaluation-set")
    if all(file_hash(judged / name) == file_hash(evaluation / name) for name in DATASET_FILES):
        shutil.copyfile(run / "result.json", folder / "result.json")
        return
    benchmark(reads, judged, folder)


RULE = StepRule("eval", RunReads, lambda at, _: run_reads(at.config, at.system), make_eval,
                needs=lambda at: ["evaluation-set", "judgments", f"run/{at.system}"], reproduce=run_command(JUDGED),
                each_system=True)
