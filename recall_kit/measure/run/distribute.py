"""The independent work of an ablation, a sweep or an eval of several systems, as executor tasks:
one search per distinct leg configuration, then one fusion-and-scoring per system. The dataset and
each leg's run are shared once; finished tasks are kept in the output folder's checkpoint."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from recall_kit.dataset import Dataset
from recall_kit.errors import SpecError
from recall_kit.fileio import atomic_batch, file_name
from recall_kit.measure.result import BenchmarkResult
from recall_kit.measure.result_sections import SystemInfo
from recall_kit.measure.run.batch_embedding import embed_in_batches
from recall_kit.measure.run.executor import Checkpoint, Executor, LocalExecutor, Task, checkpoint_for, task_key
from recall_kit.measure.run.failures import MaxFailed
from recall_kit.measure.run.runner import run_legs, run_system, search_depth
from recall_kit.measure.run.runs import LegRun
from recall_kit.measure.run.settings import ScoringSettings
from recall_kit.measure.systems.system import Leg, System
from recall_kit.options import options_to_dict
from recall_kit.progress import progress_display, steps


def leg_key(leg: Leg) -> str:
    """What decides a leg's run: its name, options and context options (unmasked: two legs that
    differ only in a secret are two configurations; the key is hashed, never written)."""
    return json.dumps([leg.name, options_to_dict(leg.options, masked=False), options_to_dict(leg.context)],
                      sort_keys=True, default=str)


def describe_leg(leg: Leg) -> str:
    """A leg and its options as a person reads them in an error or the progress line:
    `bm25 (k1=0.9, b=0.4, context.window=2)`: its own options, then its context expansion's (a
    sweep's grid over `LEG.context.*` tells its variants apart by these; defaults left out)."""
    listed = ", ".join(f"{name}={value}" for name, value in _settings(leg).items())
    return f"{leg.name} ({listed})" if listed else leg.name


def step_names(legs: Mapping[str, Leg]) -> dict[str, str]:
    """What the progress line calls each leg search: the leg's name, and only the options that tell
    it from the other searches of a leg of that name (a sweep's variants), never the whole list
    (a dense leg's options are some 600 characters, and the line repeats them every few seconds)."""
    settings = {key: _settings(leg) for key, leg in legs.items()}
    names = {}
    for key, leg in legs.items():
        others = [settings[other] for other, peer in legs.items() if other != key and peer.name == leg.name]
        differing = [f"{name}={value}" for name, value in settings[key].items()
                     if any(other.get(name) != value for other in others)]
        names[key] = f"{leg.name} ({', '.join(differing)})" if differing else leg.name
    return names


def _settings(leg: Leg) -> dict[str, Any]:
    """A leg's options and its context expansion's (`context.NAME`, only where it differs from no
    expansion), masked, by name."""
    return {**(options_to_dict(leg.options) or {}),
            **{f"context.{name}": value for name, value in _context_set(leg).items()}}


def _context_set(leg: Leg) -> dict[str, Any]:
    """The options of a leg's context expansion that differ from no expansion."""
    if leg.context is None:
        return {}
    default = options_to_dict(type(leg.context)()) or {}
    return {name: value for name, value in (options_to_dict(leg.context) or {}).items() if default.get(name) != value}


def gpus_for(leg: Leg) -> float:
    """A leg whose options put it on an accelerator (`device=cuda`, `cuda:N` or `auto`, as the dense
    leg's) asks for one GPU; the executor asks for it only where the cluster has one."""
    device = str(getattr(leg.options, "device", "cpu") or "cpu")
    return 1.0 if device.startswith(("cuda", "auto")) else 0.0


def distinct_legs(systems: Sequence[tuple[System, int]]) -> tuple[dict[str, Leg], dict[str, int]]:
    """Every distinct leg configuration of the built `systems`, each given with the depth it
    searches (`search_depth`), by `leg_key`; and how deep to search each: as deep as the deepest
    system that uses it."""
    depths: dict[str, int] = {}
    legs: dict[str, Leg] = {}
    for system, depth in systems:
        for leg in system.legs:
            key = leg_key(leg)
            legs[key] = leg
            depths[key] = max(depths.get(key, 0), depth)
    return legs, depths


def search_leg(leg: Leg, dataset: Dataset, depth: int, latency_sample: int | None,
               show_progress: bool | None) -> LegRun:
    """One leg's run over the whole query set: a task."""
    return run_legs([leg], dataset, depth, latency_sample, show_progress)[leg.name]


def leg_runs_for(system: System, runs: dict[str, LegRun], depth: int) -> dict[str, LegRun]:
    """The shared leg runs this system uses, each cut to the depth a fresh run would search."""
    return {leg.name: replace(runs[leg.name], hits=[hits[:depth] for hits in runs[leg.name].hits])
            for leg in system.legs}


def score_system(system: System, dataset: Dataset, settings: ScoringSettings, depth: int,
                 *runs: LegRun) -> BenchmarkResult:
    """One built system fused from its legs' runs (each cut to `depth`, the depth it searches) and
    scored with `settings`: a task."""
    by_name = {run.name: run for run in runs}
    return run_system(system, dataset, settings, depth=depth, leg_runs=leg_runs_for(system, by_name, depth))


def search_legs(executor: Executor | None, dataset: Dataset, legs: dict[str, Leg], depths: dict[str, int],
                latency_sample: int | None, show_progress: bool | None,
                checkpoint: Checkpoint | None = None) -> dict[str, LegRun]:
    """Every leg (by `leg_key`) searched once, as deep as `depths` says; runs by the same keys."""
    executor = executor or LocalExecutor()
    shared = executor.share(dataset)
    fingerprint = dataset.fingerprint if checkpoint is not None else ""
    # A task in this process shows its own stages; remote tasks show none, the driver counts them.
    task_progress = show_progress if executor.inline else False
    tasks = {key: Task(task_key("leg", fingerprint, key, depths[key], latency_sample), describe_leg(leg),
                       search_leg, (leg, shared, depths[key], latency_sample, task_progress), gpus_for(leg))
             for key, leg in legs.items()}
    if not executor.inline:
        # Large corpora: the batches a leg's embedding cache misses run as tasks first (GPUs where asked).
        searching = {task.key for task in (checkpoint.split(list(tasks.values()))[1] if checkpoint else tasks.values())}
        embed_in_batches(executor, dataset, {key: (leg, tasks[key].label, tasks[key].gpus) for key, leg in legs.items()
                                             if tasks[key].key in searching}, show_progress)
        with progress_display(show_progress):
            done = executor.run(list(tasks.values()), "leg searches", checkpoint)
        return _kept_whole({key: done[task.key] for key, task in tasks.items()}, tasks, checkpoint)
    # In this process one display says which leg search of how many is running, and its stages.
    with progress_display(show_progress), steps(len(tasks), "leg search") as begin:
        named = step_names(legs)
        labelled = [replace(task, function=_begun(begin, named[key], task.function)) for key, task in tasks.items()]
        done = executor.run(labelled, "leg searches", checkpoint)
    return _kept_whole({key: done[task.key] for key, task in tasks.items()}, tasks, checkpoint)


def _kept_whole(runs: dict[str, LegRun], tasks: dict[str, Task], checkpoint: Checkpoint | None) -> dict[str, LegRun]:
    """`runs`, with every run that has failed queries dropped from the checkpoint: a rerun (the
    server fixed) asks those queries again instead of reusing their failures."""
    if checkpoint is not None:
        for key, run in runs.items():
            if run.failures:
                checkpoint.forget(tasks[key].key)
    return runs


def _begun(begin: Any, label: str, function: Any) -> Any:
    """`function`, saying first on the progress display that the step `label` begins."""
    def call(*args: Any) -> Any:
        begin(label)
        return function(*args)
    return call


def score_systems(executor: Executor | None, dataset: Dataset, systems: Sequence[tuple[str, System, int]],
                  runs: dict[str, LegRun], settings: ScoringSettings,
                  show_progress: bool | None = None, checkpoint: Checkpoint | None = None) -> list[BenchmarkResult]:
    """Each (label, system, depth) fused from the shared leg runs and scored with `settings`;
    results in order."""
    executor = executor or LocalExecutor()
    shared_dataset = executor.share(dataset)
    shared_runs = {key: executor.share(run) for key, run in runs.items()}
    fingerprint = dataset.fingerprint if checkpoint is not None else ""
    tasks = [Task(task_key("score", fingerprint, label, SystemInfo.of(system).to_dict(), depth,
                           sorted(settings.scoring().items()),
                           [leg_key(leg) for leg in system.legs]),
                  label, score_system,
                  (system, shared_dataset, settings, depth, *(shared_runs[leg_key(leg)] for leg in system.legs)))
             for label, system, depth in systems]
    with progress_display(False if executor.inline else show_progress):
        done = executor.run(tasks, "fusion and scoring", checkpoint)
    return [done[task.key] for task in tasks]


def run_systems(
    systems: Sequence[tuple[str, System]],
    dataset: Dataset,
    k: int = 20,
    metrics: Sequence[str] | None = None,
    latency_sample: int | None = 200,
    show_progress: bool | None = None,
    seed: int = 0,
    relevance_level: int = 1,
    judged_only: bool = False,
    executor: Executor | None = None,
    out: str | Path | None = None,
    max_failed: MaxFailed | None = None,
) -> list[BenchmarkResult]:
    """Several named systems on one dataset, each scored as `run_benchmark` scores it alone; a leg
    configuration that several systems use is searched once, as deep as the deepest needs.

    With `out`, each result is written there as `NAME.json` (all or none), and finished tasks are
    kept for a rerun until then.
    """
    names = [name for name, _ in systems]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise SpecError(f"Two systems are named {repeated[0]!r}; give each its own name (config file name).")
    # Each system's depth, worked out once: its legs search it, its scoring cuts their runs to it.
    settings = ScoringSettings.of(k, metrics, relevance_level, judged_only, latency_sample, seed, max_failed)
    deep = [(name, system, search_depth(system, dataset, k, metrics)) for name, system in systems]
    legs, depths = distinct_legs([(system, depth) for _, system, depth in deep])
    checkpoint = checkpoint_for(out)
    runs = search_legs(executor, dataset, legs, depths, settings.latency_sample, show_progress, checkpoint)
    results = score_systems(executor, dataset, deep, runs, settings, show_progress, checkpoint)
    if out is not None:
        with atomic_batch():  # every file or none
            for name, result in zip(names, results, strict=True):
                result.save(Path(out) / file_name(name))
        if checkpoint is not None:
            checkpoint.clear()
    return results


__all__ = ["describe_leg", "distinct_legs", "gpus_for", "leg_key", "leg_runs_for", "run_systems", "score_system", "score_systems", "search_leg", "search_legs", "step_names"]
