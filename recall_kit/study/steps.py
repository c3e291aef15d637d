"""The study's steps declared once (study/pipeline/declare.py): each the library call a single recall-kit
command makes, with the dataclass of what it reads (study/reads.py) and its Reproduce line.

corpus (the store, sensitive rows dropped) -> evaluation-set -> lint; run/NAME for every system;
pool (their unjudged top ids) -> judgments (the user's qrels, people's labels, a model judge on the
pool) -> agreement; eval/NAME (scored on the judged set) -> compare, simpler, bounds; ablation of
the best hybrid; sweep; document. `rules` declares them; `build_graph` makes the `StudyGraph`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.fileio import write_json_atomic
from recall_kit.study import reads as declared
from recall_kit.study.bounds import BoundsReads, make_bounds
from recall_kit.study.config import StudyConfig
from recall_kit.study.dataset_steps import lint_command, make_corpus, make_evaluation_set, make_lint
from recall_kit.study.intervals import make_intervals
from recall_kit.study.judging_steps import (
    DATASET_FILES,
    agreement_command,
    make_agreement,
    make_judgments,
    make_pool,
    pool_command,
)
from recall_kit.study.pipeline.declare import Artefacts, Rule
from recall_kit.study.pipeline.graph import StudyGraph, file_hash
from recall_kit.study.reads import (
    AblationReads,
    AgreementReads,
    CompareReads,
    CorpusReads,
    DocumentReads,
    EvaluationSetReads,
    IntervalReads,
    JudgmentsReads,
    LintReads,
    PoolReads,
    RunReads,
    SweepReads,
)

if TYPE_CHECKING:
    from recall_kit.measure.run.executor import Executor

JUDGED, EVALUATION = "steps/judgments/dataset", "steps/evaluation-set"


def versions(config: StudyConfig) -> dict[str, str]:
    """recall-kit's version, and those of the installed distributions that can change the study's
    numbers: each whose code defines a plugin object the study names (a retriever, fusion, judge,
    generator, importer, metric, or a name an option's value gives, such as a graph extractor), and
    the recall-kit distributions those require. A plugin the study does not name (one installed to
    try it) leaves every step fresh; an upgraded one the study uses makes its steps stale."""
    import importlib.metadata
    import re

    from recall_kit.registry import registries

    used = names_used(config)
    wanted = ["recall-kit"]
    for registry in registries().values():
        for name, registration in registry.all().items():
            if name in used:
                obj = registration.obj
                wanted += distributions_of((getattr(obj, "__module__", None) or type(obj).__module__).partition(".")[0])
    found: dict[str, str] = {}
    while wanted:
        name = re.sub(r"[-_.]+", "-", wanted.pop()).lower()
        if name in found or not name.startswith("recall-kit"):
            continue
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # an optional requirement not installed: it cannot change a number
        if name != "recall-kit":  # the host's extras are the plugins themselves; a plugin's, what it runs on
            wanted += [re.split(r"[^A-Za-z0-9_.-]", requirement.strip(), maxsplit=1)[0]
                       for requirement in importlib.metadata.requires(name) or []]
    return dict(sorted(found.items()))


@cache
def distributions_of(package: str) -> list[str]:
    """The installed distributions that hold the top-level `package`: by recall-kit's naming
    (`recall_kit_fts5` in `recall-kit-fts5`) when that holds, else from every distribution's files."""
    import importlib.metadata

    named = package.replace("_", "-")
    try:
        importlib.metadata.version(named)
        return [named]
    except importlib.metadata.PackageNotFoundError:
        return importlib.metadata.packages_distributions().get(package, [])


def names_used(config: StudyConfig) -> set[str]:
    """Every word of the study's choices that could name a plugin: the systems' legs, fusions and
    option values, the judge, the generators, the store, the metrics, the sweep's grid."""
    import re

    words: list[str] = [config.judge, config.store.kind, config.queries, *config.generate, *config.judge_options,
                        *config.metrics, *config.sweep_grid, *(["exact"] if config.exact else [])]
    for system in config.systems:
        words += [system.retriever, *system.fusions, *system.overrides]
        words += [str(value) for values in system.options.values() for value in values.values()]
    for options in [*config.judge_options.values(), *config.generate_options.values(), config.production]:
        words += [str(value) for value in options.values()] if isinstance(options, dict) else []
    return {word for text in words for word in re.split(r"[^A-Za-z0-9_-]+", str(text)) if word}


@cache
def renderer_hash() -> str:
    """A hash of the code that makes the document: the module of `make_document` and every module of
    recall_kit it imports, followed through the imports (study/pipeline/code.py): a change to the
    rules, the detectors, the renderers (reporting/html.py, decide/holes_report.py, ...) re-renders it."""
    from recall_kit.study.pipeline.code import code_hash

    return code_hash(make_document.__module__)


# -- systems ---------------------------------------------------------------------------------------


def _benchmark(reads: RunReads, dataset: Path, folder: Path) -> None:
    from recall_kit.dataset import load_dataset
    from recall_kit.measure.run.runner import run_benchmark

    result = run_benchmark(reads.system.spec(), load_dataset(dataset), k=reads.k, metrics=reads.metrics,
                           latency_sample=reads.latency_sample, seed=reads.seed, show_progress=False)
    result.save(folder / "result.json")


def make_run(reads: RunReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit eval`: the system built, run, timed and scored on the evaluation set."""
    _benchmark(reads, artefacts.path("evaluation-set"), folder)


def make_eval(reads: RunReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit eval` on the judged set, whatever made its labels (the user's qrels, people's,
    a model judge's): the run's own result where the judged set is the evaluation set, file for
    file (the same rankings scored on the same labels), else the system run and scored on it."""
    judged = artefacts.path("judgments") / "dataset"
    run = artefacts.path(f"run/{reads.system.name}")
    evaluation = artefacts.path("evaluation-set")
    if all(file_hash(judged / name) == file_hash(evaluation / name) for name in DATASET_FILES):
        shutil.copyfile(run / "result.json", folder / "result.json")
        return
    _benchmark(reads, judged, folder)


def _scoring(reads: RunReads | AblationReads | SweepReads) -> str:
    return f"-k {reads.k} --metrics {','.join(reads.metrics)}"


def run_command(dataset: str) -> Callable[[RunReads, Path], str]:
    def command(reads: RunReads, folder: Path) -> str:
        return (f"recall-kit eval --dataset {dataset} {reads.system.flags(folder)} {_scoring(reads)} "
                f"--seed {reads.seed}")
    return command


# -- deciding ---------------------------------------------------------------------------------------


def make_compare(reads: CompareReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit compare`: every system against the first, Holm over the decision rows (per stratum
    too when `reads.strata`)."""
    from recall_kit.decide.compare import compare_results
    from recall_kit.measure.result import load_result

    if len(reads.systems) < 2:
        write_json_atomic(folder / "skipped.json", {"why": "no other system to compare with"})
        return
    named = [(name, load_result(artefacts.path(f"eval/{name}") / "result.json")) for name in reads.systems]
    comparison = compare_results(named, metrics=reads.metrics, n_resamples=reads.resamples, seed=reads.seed,
                                 primary=reads.decision, primary_strata=reads.strata)
    write_json_atomic(folder / "comparison.json", comparison.to_dict())


def compare_command(reads: CompareReads, folder: Path) -> str | None:
    """`recall-kit compare` of the step's systems, the first as the baseline (deltas: other - first)."""
    if len(reads.systems) < 2:
        return None
    return (f"recall-kit compare {' '.join(f'steps/eval/{n}/result.json' for n in reads.systems)} "
            f"--names {','.join(reads.systems)} --metrics {','.join(reads.metrics)} "
            f"--primary {','.join(reads.decision)}" + (" --primary-strata" if reads.strata else "")
            + f" --resamples {reads.resamples} --seed {reads.seed}")


def make_ablation(reads: AblationReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit ablate`: every single leg, leave-one-out and the full system, from one search per leg."""
    if reads.system is None:
        write_json_atomic(folder / "skipped.json", {"why": "no candidate has two legs or more"})
        return
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.ablate import run_ablation

    run_ablation(reads.system.spec(), load_dataset(artefacts.path("judgments") / "dataset"), k=reads.k,
                 metrics=reads.metrics, out=folder / "ablation", n_resamples=reads.resamples, seed=reads.seed,
                 latency_sample=0, show_progress=False, primary=reads.decision,
                 executor=_executor(reads.executor, reads.executor_address))


def ablation_command(reads: AblationReads, folder: Path) -> str | None:
    if reads.system is None:
        return None
    return (f"recall-kit ablate --dataset {JUDGED} {reads.system.flags(folder)} {_scoring(reads)} "
            f"--primary {','.join(reads.decision)} --resamples {reads.resamples} --seed {reads.seed} "
            "--latency-sample 0")  # prints the table; writes nothing into the study folder it is run from


def _executor(executor: str, address: str | None) -> Executor:
    """`--executor` for the ablation and the sweep (their results are the same wherever tasks run)."""
    from recall_kit.measure.run.executor import make_executor

    return make_executor(executor, address)


def make_sweep(reads: SweepReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit sweep --holdout --guard`: the grid, chosen on the tuning half, reported on the held-out one."""
    if reads.system is None:
        write_json_atomic(folder / "skipped.json", {"why": "no [sweep] system and grid configured"})
        return
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.sweep import run_sweep

    run_sweep(reads.system.spec(), load_dataset(artefacts.path("judgments") / "dataset"),
              grid=reads.grid, target=reads.target, k=reads.k, metrics=reads.metrics,
              holdout=reads.holdout, seed=reads.seed, out=folder / "sweep", n_resamples=reads.resamples,
              latency_sample=0, show_progress=False, guards=reads.guards or None,
              executor=_executor(reads.executor, reads.executor_address))


def sweep_command(reads: SweepReads, folder: Path) -> str | None:
    import shlex

    if reads.system is None:
        return None
    return (f"recall-kit sweep --dataset {JUDGED} {reads.system.flags(folder)} "
            + " ".join(f"-g {shlex.quote(g)}" for g in reads.grid) + f" --target {reads.target}"
            + (f" --holdout {reads.holdout:g}" if reads.holdout else "")
            + "".join(f" --guard {g}" for g in reads.guards)
            + f" {_scoring(reads)} --resamples {reads.resamples} --seed {reads.seed} --latency-sample 0")


def make_document(reads: DocumentReads, artefacts: Artefacts, folder: Path) -> None:
    """The study result (study.json) and its renderings (study.md, study.html)."""
    from recall_kit.study.collect import collect
    from recall_kit.study.document import render_html, render_markdown

    result = collect(reads, artefacts)
    write_json_atomic(folder / "study.json", result.to_dict())
    (folder / "study.md").write_text(render_markdown(result), encoding="utf-8")
    (folder / "study.html").write_text(render_html(result), encoding="utf-8")


# -- the graph --------------------------------------------------------------------------------------


def rules(config: StudyConfig) -> list[Rule[Any]]:
    """Every step of the study as declared: its needs, what it reads, how it makes its files and the
    command that reproduces it. A new step is one more `Rule` here (with its dataclass in reads.py)."""
    names = [system.name for system in config.systems]
    runs, evals = [f"run/{n}" for n in names], [f"eval/{n}" for n in names]
    found: list[Rule[Any]] = [
        Rule("corpus", [], CorpusReads, lambda _: declared.corpus_reads(config), make_corpus),
        Rule("evaluation-set", ["corpus"], EvaluationSetReads, lambda _: declared.evaluation_set_reads(config),
             make_evaluation_set),
        Rule("lint", ["evaluation-set"], LintReads, lambda _: LintReads(), make_lint, lint_command),
    ]
    found += [Rule(f"run/{n}", ["evaluation-set"], RunReads, _reads_of(config, n), make_run,
                   run_command(EVALUATION)) for n in names]
    judging = declared.judgments_reads(config)
    sample = judging.sample is not None or judging.learning is not None  # both read the runs
    found += [
        Rule("pool", ["evaluation-set", *runs], PoolReads, lambda _: declared.pool_reads(config), make_pool,
             pool_command),
        Rule("judgments", ["evaluation-set", "pool", *(runs if sample else [])], JudgmentsReads,
             lambda _: declared.judgments_reads(config), make_judgments),
        Rule("agreement", ["evaluation-set", "judgments"], AgreementReads, lambda _: declared.agreement_reads(config), make_agreement,
             agreement_command),
    ]
    found += [Rule(f"eval/{n}", ["evaluation-set", "judgments", f"run/{n}"], RunReads, _reads_of(config, n),
                   make_eval, run_command(JUDGED)) for n in names]
    found += [
        Rule("compare", evals, CompareReads, lambda _: declared.compare_reads(config), make_compare, compare_command),
        Rule("simpler", evals, CompareReads, lambda a: declared.simpler_reads(config, a), make_compare,
             compare_command),
        Rule("bounds", ["judgments", *evals], BoundsReads, lambda a: declared.bounds_reads(config, a), make_bounds),
        Rule("intervals", ["evaluation-set", "judgments", *evals], IntervalReads,
             lambda _: declared.interval_reads(config), make_intervals),
        Rule("ablation", ["judgments"], AblationReads, lambda a: declared.ablation_reads(config, a), make_ablation,
             ablation_command, after=evals),
        Rule("sweep", ["judgments"], SweepReads, lambda _: declared.sweep_reads(config), make_sweep, sweep_command),
    ]
    return found


def _reads_of(config: StudyConfig, name: str) -> Callable[[Artefacts], RunReads]:
    return lambda _: declared.run_reads(config, name)


def build_graph(config: StudyConfig) -> StudyGraph:
    """The study's steps in order, each with what its fingerprint covers (its declared reads)."""
    graph: StudyGraph
    common = {"versions": versions(config)}
    steps = [rule.step(lambda: graph, common) for rule in rules(config)]
    before = [step.name for step in steps]
    document = Rule("document", before, DocumentReads,
                    lambda _: declared.document_reads(config, graph.commands(), renderer_hash()), make_document)
    graph = StudyGraph(config.folder, [*steps, document.step(lambda: graph, common)])
    return graph
