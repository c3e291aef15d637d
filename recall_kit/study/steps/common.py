"""What several study steps share: the declaration each step module gives (`StepRule`), the reads of a
system and of a comparison, the run of a system, and small readers. A module of one step keeps its
own pieces; what two or more use is here, once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from recall_kit.document_reader import from_json
from recall_kit.fileio import write_json_atomic
from recall_kit.study.config import StudyConfig, SystemConfig
from recall_kit.study.people import people_files
from recall_kit.study.pipeline.declare import Artefacts, Rule
from recall_kit.study.pipeline.graph import file_hash
from recall_kit.study.result import SCHEMA

if TYPE_CHECKING:
    from recall_kit.measure.run.executor import Executor
    from recall_kit.measure.systems.system import SystemSpec

R = TypeVar("R")
Output = TypeVar("Output")

#: The judged set and the evaluation set, as a Reproduce line (run from the study folder) names them.
JUDGED, EVALUATION = "steps/judgments/dataset", "steps/evaluation-set"

#: The files of a dataset folder the judgments step copies and the eval step compares.
DATASET_FILES = ("corpus.jsonl", "queries.jsonl", "qrels.jsonl")


# -- the declaration --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Declaring:
    """What a step's declaration is made for: the study, the system of a per-system step (run/NAME,
    eval/NAME; "" otherwise) and the steps declared before it."""

    config: StudyConfig
    system: str = ""
    earlier: tuple[str, ...] = ()


def no_steps(_: Declaring) -> list[str]:
    return []


@dataclass(frozen=True)
class StepRule(Generic[R]):
    """One step as its module declares it (`RULE`): its name, the dataclass it reads and how that is
    built (from the study file and, for a choice made from earlier steps, their artefacts), the steps
    it needs, how it makes its files and the command that reproduces it. `each_system`: one step per
    system (run/NAME). `declare` gives the build graph's `Rule`s for one study."""

    name: str
    kind: type[R]
    reads: Callable[[Declaring, Artefacts], R]
    make: Callable[[R, Artefacts, Path], None]
    needs: Callable[[Declaring], Sequence[str]] = no_steps
    reproduce: Callable[[R, Path], str | None] | None = None
    after: Callable[[Declaring], Sequence[str]] = no_steps
    each_system: bool = False

    def declare(self, config: StudyConfig, earlier: Sequence[str] = ()) -> list[Rule[Any]]:
        systems = [system.name for system in config.systems] if self.each_system else [""]
        found: list[Rule[Any]] = []
        for system in systems:
            at = Declaring(config, system, tuple(earlier))
            found.append(Rule(f"{self.name}/{system}" if system else self.name, list(self.needs(at)), self.kind,
                              self._reads(at), self.make, self.reproduce, list(self.after(at))))
        return found

    def _reads(self, at: Declaring) -> Callable[[Artefacts], R]:
        return lambda artefacts: self.reads(at, artefacts)


# -- the outputs the document reads ----------------------------------------------------------------


def write_output(path: Path, output: Any) -> None:
    """A step's typed output as JSON (`dataclasses.asdict`; optional fields left unset are left out).
    A mapping of name -> dataclass (strata.json's stratum -> how it was built) is written entry by entry."""
    if isinstance(output, Mapping):
        write_json_atomic(path, {key: _plain(value) for key, value in output.items()})
    else:
        write_json_atomic(path, _plain(output))


def _plain(output: Any) -> dict[str, Any]:
    return {key: value for key, value in dataclasses.asdict(output).items() if value is not None}


def read_output(kind: type[Output], path: Path) -> Output:
    """A step's typed output read back (document_reader.py `from_json`: field by field, nested types too);
    a key the type does not declare, or a field it needs missing, is one error naming the file."""
    return from_json(kind, json.loads(path.read_text(encoding="utf-8")), path.name, SCHEMA)


@dataclass
class Skipped:
    """skipped.json: why a step that runs only when the study asks for it (compare with one system,
    ablation, sweep) did not run."""

    why: str


# -- readers ----------------------------------------------------------------------------------------


def hashes(paths: list[Path]) -> dict[str, str | None]:
    """Each file -> its sha256 (None: not there)."""
    return {str(path): file_hash(path) if path.is_file() else None for path in paths}


def people_paths(config: StudyConfig) -> list[Path]:
    return people_files(config)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's rows."""
    from recall_kit.dataset import read_jsonl

    return [row for _, row in read_jsonl(path)]


# -- a system ---------------------------------------------------------------------------------------


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


def benchmark(reads: RunReads, dataset: Path, folder: Path) -> None:
    """`recall-kit eval`: the system built, run, timed and scored on `dataset`, into result.json."""
    from recall_kit.dataset import load_dataset
    from recall_kit.measure.run.runner import run_benchmark

    result = run_benchmark(reads.system.spec(), load_dataset(dataset), k=reads.k, metrics=reads.metrics,
                           latency_sample=reads.latency_sample, seed=reads.seed, show_progress=False)
    result.save(folder / "result.json")


def scoring(reads: Any) -> str:
    """The flags that say how a step scores: the ranking depth and the metrics."""
    return f"-k {reads.k} --metrics {','.join(reads.metrics)}"


def run_command(dataset: str) -> Callable[[RunReads, Path], str]:
    def command(reads: RunReads, folder: Path) -> str:
        return (f"recall-kit eval --dataset {dataset} {reads.system.flags(folder)} {scoring(reads)} "
                f"--seed {reads.seed}")
    return command


def executor(name: str, address: str | None) -> Executor:
    """`--executor` for the ablation and the sweep (their results are the same wherever tasks run)."""
    from recall_kit.measure.run.executor import make_executor

    return make_executor(name, address)


def eval_steps(at: Declaring) -> list[str]:
    """The eval/NAME step of every system."""
    return [f"eval/{system.name}" for system in at.config.systems]


# -- a comparison -----------------------------------------------------------------------------------


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


def make_compare(reads: CompareReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit compare`: every system against the first, Holm over the decision rows (per stratum
    too when `reads.strata`)."""
    from recall_kit.decide.compare import compare_results
    from recall_kit.measure.result import load_result

    if len(reads.systems) < 2:
        write_output(folder / "skipped.json", Skipped("no other system to compare with"))
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

