"""The sweep step: `recall-kit sweep --holdout --guard`, the `[sweep]` grid, chosen on the tuning half
and reported on the held-out one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import JUDGED, Skipped, StepRule, SystemReads, executor, scoring, write_output


@dataclass(frozen=True)
class SweepReads:
    """[sweep]: the system, its grid, the held-out share, the guards and the target; how it is
    scored and tested, and where its tasks run."""

    system: SystemReads | None
    grid: list[str]
    holdout: float | None
    guards: list[str]
    target: str
    k: int
    metrics: list[str]
    resamples: int
    seed: int
    executor: str = "local"
    executor_address: str | None = None


def sweep_reads(config: StudyConfig) -> SweepReads:
    system = SystemReads.of(config.system(config.sweep_system)) if config.sweep_system and config.sweep_grid else None
    return SweepReads(system, list(config.sweep_grid), config.sweep_holdout, list(config.sweep_guards),
                      config.sweep_target, config.depth, config.metrics, config.resamples, config.seed,
                      config.executor, config.executor_address)


def make_sweep(reads: SweepReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit sweep --holdout --guard`: the grid, chosen on the tuning half, reported on the held-out one."""
    if reads.system is None:
        write_output(folder / "skipped.json", Skipped("no [sweep] system and grid configured"))
        return
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.sweep import run_sweep

    run_sweep(reads.system.spec(), load_dataset(artefacts.path("judgments") / "dataset"),
              grid=reads.grid, target=reads.target, k=reads.k, metrics=reads.metrics,
              holdout=reads.holdout, seed=reads.seed, out=folder / "sweep", n_resamples=reads.resamples,
              latency_sample=0, show_progress=False, guards=reads.guards or None,
              executor=executor(reads.executor, reads.executor_address))


def sweep_command(reads: SweepReads, folder: Path) -> str | None:
    import shlex

    if reads.system is None:
        return None
    return (f"recall-kit sweep --dataset {JUDGED} {reads.system.flags(folder)} "
            + " ".join(f"-g {shlex.quote(g)}" for g in reads.grid) + f" --target {reads.target}"
            + (f" --holdout {reads.holdout:g}" if reads.holdout else "")
            + "".join(f" --guard {g}" for g in reads.guards)
            + f" {scoring(reads)} --resamples {reads.resamples} --seed {reads.seed} --latency-sample 0")


RULE = StepRule("sweep", SweepReads, lambda at, _: sweep_reads(at.config), make_sweep, needs=lambda _: ["judgments"],
                reproduce=sweep_command)
