"""The study's steps, one module each, as ir_measures has one module per measure: each holds the
dataclass of what its step reads of study.toml (and how it is built), its make function, its
Reproduce line and its `RULE` (a `StepRule`, steps/common.py, with what several steps share).
`rules` collects the modules' RULEs in `STEPS`' order; `build_graph` makes the `StudyGraph`.

corpus (the store, sensitive rows dropped) -> evaluation-set -> lint; run/NAME for every system;
pool (their unjudged top ids) -> judgments (the user's qrels, people's labels, a model judge on the
pool) -> agreement; eval/NAME (scored on the judged set) -> compare, simpler, bounds, intervals;
ablation of the best hybrid; sweep; document. A new step is one more module here, named in `STEPS`.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Any

from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Rule
from recall_kit.study.pipeline.graph import StudyGraph
from recall_kit.study.steps import (
    ablation,
    agreement,
    bounds,
    compare,
    corpus,
    document,
    evaluation_set,
    intervals,
    judgments,
    lint,
    pool,
    run,
    simpler,
    sweep,
)
from recall_kit.study.steps import eval as eval_step

#: The step modules in the order the study runs them (the document last: it needs every other).
STEPS: tuple[ModuleType, ...] = (corpus, evaluation_set, lint, run, pool, judgments, agreement, eval_step, compare,
                                 simpler, bounds, intervals, ablation, sweep, document)


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


def rules(config: StudyConfig) -> list[Rule[Any]]:
    """Every step of the study as declared: each module's `RULE` in `STEPS`' order, made for `config`
    (one rule per system for run/NAME and eval/NAME); each step's needs, what it reads, how it makes
    its files and the command that reproduces it."""
    found: list[Rule[Any]] = []
    for module in STEPS:
        found += module.RULE.declare(config, [rule.name for rule in found])
    return found


def build_graph(config: StudyConfig) -> StudyGraph:
    """The study's steps in order, each with what its fingerprint covers (its declared reads)."""
    graph: StudyGraph
    common = {"versions": versions(config)}
    graph = StudyGraph(config.folder, [rule.step(lambda: graph, common) for rule in rules(config)])
    return graph
