"""The ablation step: `recall-kit ablate` of the best hybrid (or `[ablation] system`): every single
leg, leave-one-out and the full system, from one search per leg."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import (
    JUDGED,
    Skipped,
    StepRule,
    SystemReads,
    best_of,
    eval_steps,
    executor,
    scoring,
    write_output,
)


@dataclass(frozen=True)
class AblationReads:
    """The system taken apart (`[ablation] system`, else the best hybrid; None: no candidate has two
    legs), how it is scored and tested, and where its tasks run."""

    system: SystemReads | None
    k: int
    metrics: list[str]
    decision: list[str]
    resamples: int
    seed: int
    executor: str = "local"
    executor_address: str | None = None


def ablation_reads(config: StudyConfig, artefacts: Artefacts) -> AblationReads:
    name = config.ablation_system or None
    if name is None:
        hybrids = [s.name for s in config.systems if len(s.legs) > 1]
        name = best_of(hybrids, config.decision_metrics[0], artefacts) if hybrids else None
    return AblationReads(SystemReads.of(config.system(name)) if name else None, config.depth, config.metrics,
                         list(config.decision_metrics), config.resamples, config.seed, config.executor,
                         config.executor_address)


def make_ablation(reads: AblationReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit ablate`: every single leg, leave-one-out and the full system, from one search per leg."""
    if reads.system is None:
        write_output(folder / "skipped.json", Skipped("no candidate has two legs or more"))
        return
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.ablate import run_ablation

    run_ablation(reads.system.spec(), load_dataset(artefacts.path("judgments") / "dataset"), k=reads.k,
                 metrics=reads.metrics, out=folder / "ablation", n_resamples=reads.resamples, seed=reads.seed,
                 latency_sample=0, show_progress=False, primary=reads.decision,
                 executor=executor(reads.executor, reads.executor_address))


def ablation_command(reads: AblationReads, folder: Path) -> str | None:
    if reads.system is None:
        return None
    return (f"recall-kit ablate --dataset {JUDGED} {reads.system.flags(folder)} {scoring(reads)} "
            f"--primary {','.join(reads.decision)} --resamples {reads.resamples} --seed {reads.seed} "
            "--latency-sample 0")  # prints the table; writes nothing into the study folder it is run from


RULE = StepRule("ablation", AblationReads, lambda at, artefacts: ablation_reads(at.config, artefacts), make_ablation,
                needs=lambda _: ["judgments"], reproduce=ablation_command, after=eval_steps)
