"""What each study step reads of study.toml: one small frozen dataclass per step (study/pipeline/declare.py).

A field here is a key a step reads (or a value derived from keys, such as the ranking depth),
written as JSON values so the fingerprint covers it and the make function receives it. To make a
step read one more key: add a field to its dataclass and set it in its `*_reads` function; the
fingerprint, the make function's argument and the Reproduce line follow. Each function takes the
`StudyConfig` (and, for a choice made from earlier steps, their artefacts); nothing else does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.errors import SpecError
from recall_kit.study.bounds import BoundsReads
from recall_kit.study.config import StudyConfig, SystemConfig
from recall_kit.study.people import people_files
from recall_kit.study.pipeline.graph import file_hash

if TYPE_CHECKING:
    from recall_kit.measure.systems.system import SystemSpec
    from recall_kit.study.pipeline.declare import Artefacts


def hashes(paths: list[Path]) -> dict[str, str | None]:
    """Each file -> its sha256 (None: not there)."""
    return {str(path): file_hash(path) if path.is_file() else None for path in paths}


@dataclass(frozen=True)
class SystemReads:
    """One candidate as its steps read it: what decides what it returns, and the recipe file (and
    study.toml's options over it) its Reproduce line names."""

    name: str
    retriever: str
    fusions: list[str]
    weights: dict[str, float]
    options: dict[str, Any]
    config: str | None = None
    overrides: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, system: SystemConfig) -> SystemReads:
        return cls(system.name, system.retriever, list(system.fusions), dict(system.weights),
                   dict(system.options), str(system.config) if system.config else None, list(system.overrides))

    def spec(self) -> SystemSpec:
        """The `SystemSpec` that builds it (as `SystemConfig.spec`)."""
        return SystemConfig(self.name, self.retriever, list(self.fusions), dict(self.weights),
                            dict(self.options)).spec()

    def flags(self, folder: Path) -> str:
        """The command-line flags that build this system, with paths relative to `folder`."""
        import os
        import shlex

        from recall_kit.study.config import option_flags

        if self.config:
            return (f"--config {shlex.quote(os.path.relpath(self.config, folder))}"
                    + "".join(f" -o {shlex.quote(flag)}" for flag in self.overrides))
        return (f"--retriever {self.retriever}" + "".join(f" --fusion {f}" for f in self.fusions)
                + (" --weights " + ",".join(f"{leg}={w:g}" for leg, w in self.weights.items()) if self.weights else "")
                + "".join(f" -o {shlex.quote(flag)}" for flag in option_flags(self.options)))


# -- the dataset ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusReads:
    """[store]: its kind, path, sqlite columns, and the hashes of the files it names."""

    study_file: str
    kind: str
    path: str
    columns: dict[str, str]
    data: dict[str, str | None]


def corpus_reads(config: StudyConfig) -> CorpusReads:
    store = config.store
    files = [store.path / "corpus.jsonl"] if store.kind == "dataset" else [store.path]
    return CorpusReads(config.source.name, store.kind, str(store.path), dict(store.columns), hashes(files))


@dataclass(frozen=True)
class EvaluationSetReads:
    """[evaluation_set]: the user's queries and qrels (files and hashes) and the queries generated
    (exact = N, generate, their options, and the seed they are drawn with)."""

    study_file: str
    queries: str
    files: list[str]
    data: dict[str, str | None]
    exact: int = 0
    exact_options: dict[str, Any] = field(default_factory=dict)
    generate: dict[str, int] = field(default_factory=dict)
    generate_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The seed of the generators (None: nothing is generated, the seed is not read).
    seed: int | None = None


def evaluation_set_reads(config: StudyConfig) -> EvaluationSetReads:
    files = _query_files(config)
    generating = bool(config.exact or config.generate)
    return EvaluationSetReads(config.source.name, config.queries, [str(f) for f in files], hashes(files),
                              config.exact, dict(config.exact_options), dict(config.generate),
                              dict(config.generate_options), config.seed if generating else None)


def _query_files(config: StudyConfig) -> list[Path]:
    if config.queries == "dataset":
        if config.store.kind != "dataset":
            raise SpecError(f"{config.source}: [evaluation_set] queries = \"dataset\" needs [store] dataset = DIR; "
                            "name queries = FILE and qrels = FILE, or queries = \"generated\" with exact = N.")
        return [config.store.path / "queries.jsonl", config.store.path / "qrels.jsonl"]
    if config.queries == "generated":
        return []
    assert config.qrels is not None
    return [Path(config.queries) if Path(config.queries).is_absolute() else config.source.parent / config.queries,
            config.qrels]


@dataclass(frozen=True)
class LintReads:
    """Nothing of study.toml: lint reads the evaluation set alone."""


# -- systems, pool, judgments -----------------------------------------------------------------------


@dataclass(frozen=True)
class RunReads:
    """run/NAME and eval/NAME: the system, how deep its ranking is kept, the metrics scored, how
    many queries are timed one by one and the seed."""

    system: SystemReads
    k: int
    metrics: list[str]
    latency_sample: int
    seed: int


def run_reads(config: StudyConfig, name: str) -> RunReads:
    return RunReads(SystemReads.of(config.system(name)), config.depth, config.metrics, config.latency_sample,
                    config.seed)


@dataclass(frozen=True)
class PoolReads:
    """The pool: the systems pooled, the pool's depth, and the hook's k (the unjudged share there)."""

    systems: list[str]
    depth: int
    hook_k: int


def pool_reads(config: StudyConfig) -> PoolReads:
    return PoolReads([s.name for s in config.systems], config.pool_depth, config.hook_k)


@dataclass(frozen=True)
class SampleReads:
    """`[judging] sample`: how many pairs, and what orders them (the decision rows' bounds: the
    baseline against every other system on the decision metrics, resampled with the seed)."""

    size: int
    systems: list[str]
    baseline: str
    decision: list[str]
    resamples: int
    seed: int


@dataclass(frozen=True)
class LearningReads:
    """What a judge that learns (`RelevanceJudge.learns`: `combined`) is fitted on besides the labels:
    the systems' runs (their ranks and scores), and the seed and resamples of its cross-fitting and
    of the kappa measured on the labelled pairs."""

    systems: list[str]
    resamples: int
    seed: int


@dataclass(frozen=True)
class JudgmentsReads:
    """The labels: people's files (and their hashes), and a model judge with its options and sample
    (None where judge = "qrels": neither is read then), and what a learning judge is fitted on."""

    study_file: str
    judge: str
    people: dict[str, str | None]
    options: dict[str, Any] | None = None
    sample: SampleReads | None = None
    learning: LearningReads | None = None


def judge_learns(name: str) -> bool:
    """Whether the registered judge `name` learns from labelled pairs (False for "qrels" or unknown)."""
    import recall_kit.registry as registry

    if name == "qrels" or name not in registry.judges.names():
        return False
    return bool(getattr(registry.judges.get(name).obj, "learns", False))


def judgments_reads(config: StudyConfig) -> JudgmentsReads:
    model = config.judge != "qrels"
    sample = (SampleReads(config.sample, [s.name for s in config.systems], config.baseline,
                          list(config.decision_metrics), config.resamples, config.seed)
              if model and config.sample else None)
    learning = (LearningReads([s.name for s in config.systems], config.resamples, config.seed)
                if judge_learns(config.judge) else None)
    return JudgmentsReads(config.source.name, config.judge, hashes(people_paths(config)),
                          dict(config.judge_options) if model else None, sample, learning)


def people_paths(config: StudyConfig) -> list[Path]:
    return people_files(config)


@dataclass(frozen=True)
class AgreementReads:
    """What the agreement step reads: the person's grades (and their hash), the labels' source, the seed."""

    judge: str
    agreement: str | None
    agreement_hash: str | None
    seed: int
    #: People's label files (`recall-kit label`'s) -> their hashes: kappa between them and against a model judge.
    people: dict[str, str | None] = dataclasses.field(default_factory=dict)


def agreement_reads(config: StudyConfig) -> AgreementReads:
    path = config.agreement
    return AgreementReads(judge=config.judge, agreement=str(path) if path else None,
                          agreement_hash=file_hash(path) if path and path.is_file() else None, seed=config.seed,
                          people=hashes(people_paths(config)))


# -- deciding -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareReads:
    """What a comparison step reads: the systems (the one the others are measured against first), the
    metrics, which of them decide, the resamples, the seed and whether the strata join the Holm family."""

    systems: list[str]
    metrics: list[str]
    decision: list[str]
    resamples: int
    seed: int
    strata: bool


def compare_reads(config: StudyConfig) -> CompareReads:
    """The head-to-head: every candidate against the baseline, per stratum, in one Holm family."""
    order = [config.baseline, *(s.name for s in config.systems if s.name != config.baseline)]
    return CompareReads(order, config.metrics, config.decision_metrics, config.resamples, config.seed, True)


def best_of(candidates: list[str], metric: str, artefacts: Artefacts) -> str:
    """The candidate with the best mean on `metric` over all queries (the first listed on a tie)."""
    from recall_kit.measure.result import load_result

    means = {name: load_result(artefacts.path(f"eval/{name}") / "result.json").mean(metric) for name in candidates}
    return max(candidates, key=lambda name: (means[name], -candidates.index(name)))


def simpler_reads(config: StudyConfig, artefacts: Artefacts) -> CompareReads:
    """The best candidate (best mean on the first decision metric over all queries) against every
    other candidate but the baseline (the head-to-head has that pair): overall, one Holm family."""
    candidates = [s.name for s in config.systems if s.name != config.baseline]
    best = best_of(candidates, config.decision_metrics[0], artefacts)
    return CompareReads([best, *(name for name in candidates if name != best)], config.metrics,
                        config.decision_metrics, config.resamples, config.seed, False)


def bounds_reads(config: StudyConfig, artefacts: Artefacts) -> BoundsReads:
    """The bounds step's rows: the head-to-head's (the baseline first) and the compare-down's (the best first)."""
    head = compare_reads(config)
    simpler = simpler_reads(config, artefacts).systems if len(head.systems) > 2 else []
    return BoundsReads(head.systems, simpler, list(config.decision_metrics), config.resamples, config.seed)


@dataclass(frozen=True)
class IntervalReads:
    """What the intervals step reads: the baseline and candidates, the decision metrics, the judge
    (its grades are the predictor), people's label files and their hashes, resamples and seed."""

    systems: list[str]
    decision: list[str]
    judge: str
    resamples: int
    seed: int
    people: dict[str, str | None] = field(default_factory=dict)
    #: The hook's k: a sample query's pairs are every system's unlabelled ids in its top k.
    hook_k: int = 5


def interval_reads(config: StudyConfig) -> IntervalReads:
    """The intervals step's reads: the head-to-head's systems, the decision metrics, the judge, people's files."""
    head = compare_reads(config)
    return IntervalReads(head.systems, list(config.decision_metrics), config.judge, config.resamples, config.seed,
                         people=hashes(people_paths(config)), hook_k=config.hook_k)


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


@dataclass(frozen=True)
class DocumentReads:
    """What the document reads of study.toml beside the artefacts, the Reproduce lines every other
    step derives from its own reads, and a hash of the code that renders it."""

    name: str
    systems: list[str]
    baseline: str
    hook_k: int
    decision: list[str]
    exploratory: list[str]
    seed: int
    resamples: int
    production: dict[str, Any]
    min_queries: int
    margin: float | None
    min_kappa: float
    sweep_system: str
    commands: dict[str, str]
    code: str


def document_reads(config: StudyConfig, commands: dict[str, str], code: str) -> DocumentReads:
    return DocumentReads(config.name, [s.name for s in config.systems], config.baseline, config.hook_k,
                         list(config.decision_metrics), list(config.exploratory_metrics), config.seed,
                         config.resamples, dict(config.production), config.min_queries, config.margin,
                         config.min_kappa, config.sweep_system if config.sweep_grid else "", commands, code)
