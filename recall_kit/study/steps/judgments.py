"""The judgments step: the labels the study scores with: the user's qrels, then people's grades
(`recall-kit label`'s files), then a model judge's grades of the pool (or of `[judging] sample` pairs
of it, `judge_sample`), each only where nothing before it judged the pair."""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.fileio import write_jsonl_atomic
from recall_kit.study.config import StudyConfig
from recall_kit.study.people import LABELLED
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import (
    DATASET_FILES,
    Declaring,
    StepRule,
    hashes,
    people_paths,
    read_rows,
    write_output,
)

if TYPE_CHECKING:
    from recall_kit.types import RelevanceJudge

#: A model judge's probabilities of relevance for the pairs it graded, where it has them
#: (`write_probabilities`): the intervals step's predictor.
PROBABILITIES = "model-probabilities.jsonl"


@dataclass
class PeopleAdded:
    """People's grades (`recall-kit label`'s files) the judgments step merged."""

    assessors: list[str]
    #: Grades they added where nothing before them judged the pair.
    added: int
    #: A person's file name -> their grades of memories dropped as sensitive, dropped in turn.
    sensitive_dropped: dict[str, int] = field(default_factory=dict)
    #: Assessor -> pairs two of their files grade differently (the most recent grade kept).
    conflicts: dict[str, int] = field(default_factory=dict)


@dataclass
class JudgmentsOutput:
    """judgments.json: where the study's labels come from."""

    #: "qrels" or the model judge's name.
    source: str
    #: Labels added to the user's qrels (people's grades and the judge's, where nothing judged the pair).
    pooled_labels: int
    #: The model judge's provenance (its model, prompt, version), None without one.
    provenance: dict[str, Any] | None = None
    people: PeopleAdded | None = None
    #: A judge that learns, measured on the labelled pairs it learnt from (cross-fitted):
    #: `recall_kit.curate.evidence.measured_on_labels`'s numbers (kappa, kappa_ci, n, ...).
    judge_measured: dict[str, Any] | None = None


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


def make_judgments(reads: JudgmentsReads, artefacts: Artefacts, folder: Path) -> None:
    """The labels the study scores with: the user's qrels, then people's grades (`recall-kit label`'s
    files), then a model judge's grades of the pool, each only where nothing before it judged the pair."""
    from recall_kit.study.people import merge_labels, people_grades

    evaluation = artefacts.path("evaluation-set")
    out = folder / "dataset"
    out.mkdir()
    for name in DATASET_FILES:
        shutil.copyfile(evaluation / name, out / name)
    people, sensitive, conflicts = screen_people([Path(path) for path in reads.people], evaluation)
    layers = [people_grades(people)] if people else []
    info = JudgmentsOutput(source="qrels", pooled_labels=0)
    if reads.judge != "qrels":
        from recall_kit.curate.judge import build_judge, read_qrels_file

        judge = build_judge(reads.judge, {reads.judge: reads.options} if reads.options else None)
        grades_path = folder / "model-grades.jsonl"
        learning = reads.learning if judge.learns else None
        context = _judging_context(learning, artefacts, layers[0] if people else {}) if learning else None
        _judge_pool(reads, artefacts, judge, grades_path, folder, context)
        layers.append(read_qrels_file(grades_path) if grades_path.exists() else {})
        write_probabilities(judge, layers[-1], evaluation, folder / PROBABILITIES)
        info = JudgmentsOutput(source=reads.judge, pooled_labels=0, provenance=dict(judge.provenance()))
        if learning is not None and context is not None:  # cross-fitted: its grades of the labelled pairs are out of fold
            from recall_kit.curate.evidence import measured_on_labels

            measured = measured_on_labels(judge, context, learning.resamples, learning.seed)
            info.judge_measured = measured.to_dict() if measured is not None else None
    if layers:
        merged, added = merge_labels(read_rows(evaluation / "qrels.jsonl"), *layers)
        write_jsonl_atomic(out / "qrels.jsonl", merged)
        # the labels alone (the user's qrels and people's grades): a pair only a model graded is still a hole
        write_jsonl_atomic(folder / LABELLED, merge_labels(read_rows(evaluation / "qrels.jsonl"), *layers[:1])[0]
                           if people else read_rows(evaluation / "qrels.jsonl"))
        info.pooled_labels = sum(added)
        if people:
            info.people = PeopleAdded(assessors=sorted(people), added=added[0], sensitive_dropped=sensitive,
                                      conflicts=conflicts)
    write_output(folder / "judgments.json", info)


def write_probabilities(judge: RelevanceJudge, graded: Mapping[str, Mapping[str, int]], evaluation: Path,
                        path: Path) -> None:
    """The judge's probability of relevance for each pair it graded (`RelevanceJudge.probabilities`),
    one row per query ({"query_id", "probability": {id: p}}), where the judge has them: the intervals
    step's predictor. Nothing is written for a judge without them."""
    import math
    from numbers import Real

    from recall_kit.dataset import load_dataset
    from recall_kit.errors import PluginRunError
    from recall_kit.types import RelevanceJudge

    if type(judge).probabilities is RelevanceJudge.probabilities:  # none to give: nothing to read
        return
    dataset = load_dataset(evaluation)
    queries = {query.query_id: query for query in dataset.queries}
    pairs = [(queries[qid], memory) for qid, docs in graded.items() if qid in queries
             for doc in docs if (memory := dataset.corpus.get(doc)) is not None]
    values = judge.probabilities(pairs) if pairs else None
    if values is None:
        return
    given = list(values)
    # A real number (a numpy scalar is one too); not a string or a bool, which float() would also read.
    numbers = [float(value) if isinstance(value, Real) and not isinstance(value, bool) else math.nan for value in given]
    if len(numbers) != len(pairs) or not all(math.isfinite(v) and 0 <= v <= 1 for v in numbers):
        raise PluginRunError(f"Judge {type(judge).__name__} gave {len(given)} probabilities for {len(pairs)} pairs, "
                             "or one that is not a number in [0, 1]; each pair needs one in [0, 1].")
    rows: dict[str, dict[str, float]] = {}
    for (query, memory), value in zip(pairs, numbers, strict=True):
        rows.setdefault(query.query_id, {})[str(memory.id)] = value
    write_jsonl_atomic(path, [{"query_id": qid, "probability": found} for qid, found in rows.items()])


def read_probabilities(path: Path) -> dict[str, dict[str, float]]:
    """`write_probabilities`'s file: query id -> memory id -> probability."""
    return {row["query_id"]: {str(doc): float(p) for doc, p in row["probability"].items()} for row in read_rows(path)}


def screen_people(paths: list[Path], evaluation: Path) -> tuple[dict[str, dict[str, dict[str, int]]], dict[str, int],
                                                               dict[str, int]]:
    """People's grades (assessor -> query -> id -> grade), each id checked against the evaluation set
    (`screen_grades`): a grade of a memory the corpus step dropped as sensitive is dropped and counted
    per file (the document says how many, from whose file); an id the corpus does not hold is
    refused, naming the person's file and line (not the study's own merged qrels.jsonl). One assessor's
    several files are merged (`merge_files`); also assessor -> the pairs their files grade differently."""
    from recall_kit.curate.assessor import screen_grades
    from recall_kit.dataset import SENSITIVE_IDS_FILE
    from recall_kit.study.people import merge_files, read_files

    rows = read_rows(evaluation / "corpus.jsonl")
    known = {str(row.get("id")) for row in rows} | {str(row["parent_id"]) for row in rows if row.get("parent_id")}
    listed = evaluation / SENSITIVE_IDS_FILE
    sensitive = set(listed.read_text(encoding="utf-8").split()) if listed.is_file() else set()
    import sys

    from recall_kit.curate.assessor import doubts, outside_queries

    queries = {str(row.get("query_id")) for row in read_rows(evaluation / "queries.jsonl")}
    dropped: dict[str, int] = {}
    files = read_files(paths)
    for found in files:
        said = doubts(f"study: {found.path.name}", found.regraded, outside_queries(found.grades, queries))
        if said:
            print(said, file=sys.stderr)
        gone = screen_grades(found.path, found.grades, known, sensitive)
        if gone:
            dropped[found.path.name] = dropped.get(found.path.name, 0) + gone
    people, conflicts = merge_files(files)
    return people, dropped, conflicts


def _judging_context(learning: LearningReads, artefacts: Artefacts, people: Mapping[str, Mapping[str, int]]) -> Any:
    """What a judge that learns (`combined`) is fitted on: the user's qrels and people's grades, taken
    as complete over the systems' runs (a ranked id neither lists counts as not relevant), and
    the runs' ranks and scores. It is cross-fitted: no pair is graded by a model fitted on its query."""
    from recall_kit.curate.evidence import complete_labels, judging_context, pair_evidence
    from recall_kit.dataset import load_dataset
    from recall_kit.measure.result import load_result

    dataset = load_dataset(artefacts.path("evaluation-set"))
    named = [(name, load_result(artefacts.path(f"run/{name}") / "result.json")) for name in learning.systems]
    labels = {query: dict(grades) for query, grades in dataset.qrels.items()}
    for query, grades in people.items():
        for doc, grade in grades.items():
            labels.setdefault(query, {}).setdefault(doc, grade)
    return judging_context(dataset, named, complete_labels(labels, pair_evidence(named)), learning.seed)


def _judge_pool(reads: JudgmentsReads, artefacts: Artefacts, judge: RelevanceJudge, grades_path: Path, folder: Path,
                context: Any = None) -> None:
    """A model judge over the pool, or over `[judging] sample` pairs of it (`judge_sample`, below)."""
    from recall_kit.curate.judge import judge_with

    if reads.sample is not None:

        judge_sample(reads.sample, artefacts, judge, grades_path, folder, context)
        return
    judge_with(judge, artefacts.path("pool") / "pool.jsonl", artefacts.path("evaluation-set"), grades_path,
               show=lambda line: None, context=context)


def _needs(at: Declaring) -> list[str]:
    """The evaluation set and the pool; the runs too where a sample is drawn or a judge learns (both read them)."""
    reads = judgments_reads(at.config)
    runs = [f"run/{s.name}" for s in at.config.systems] if reads.sample is not None or reads.learning is not None else []
    return ["evaluation-set", "pool", *runs]


RULE = StepRule("judgments", JudgmentsReads, lambda at, _: judgments_reads(at.config), make_judgments, needs=_needs)


# -- [judging] sample = N: a model judge grades N pairs, not the whole pool: a sample of the pairs
# ordered by how far their label can move a decision delta (recall_kit.decide.holes), stratified by
# the query's stratum, with a time estimate taken from the first calls and kept current.

#: Pairs judged before the first estimate, and per batch after it.
FIRST_CALLS = 5
BATCH = 25


def ordered_pairs(reads: SampleReads, artefacts: Artefacts) -> list[tuple[str, str]]:
    """The unjudged pairs in the order a person would be asked them: those that can move a decision
    row that can flip (heaviest first), then the rest of the pool in its order."""
    from recall_kit.curate.judge import read_pool
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.holes import Holes, boundable, decision_contrasts
    from recall_kit.measure.result import load_result

    dataset = load_dataset(artefacts.path("evaluation-set"))
    names = reads.systems
    results = {name: load_result(artefacts.path(f"run/{name}") / "result.json") for name in names}
    base = results[reads.baseline]
    contrasts = decision_contrasts(reads.baseline, [n for n in names if n != reads.baseline],
                                   boundable(reads.decision), base.query_ids, base.stratum_of())
    order: list[tuple[str, str]] = []
    if contrasts:
        holes = Holes({n: r.rankings() for n, r in results.items()}, dataset.qrels, contrasts,
                      n_resamples=reads.resamples, seed=reads.seed)
        order = [(q, d) for q, d, _ in holes.order()]
    seen = set(order)
    order += [(q, d) for q, docs in read_pool(artefacts.path("pool") / "pool.jsonl") for d in docs if (q, d) not in seen]
    return order


def stratified(pairs: Sequence[tuple[str, str]], stratum_of: dict[str, str], size: int) -> list[tuple[str, str]]:
    """`size` pairs of `pairs` (kept in their order), each stratum given its share of them (largest
    remainders), the first pairs of each stratum taken."""
    by: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        by.setdefault(stratum_of.get(pair[0], ""), []).append(pair)
    if size >= len(pairs):
        return list(pairs)
    quotas = {name: size * len(items) / len(pairs) for name, items in by.items()}
    taken = {name: int(quota) for name, quota in quotas.items()}
    for name in sorted(quotas, key=lambda n: (-(quotas[n] - taken[n]), n))[: size - sum(taken.values())]:
        taken[name] += 1
    chosen = {pair for name, items in by.items() for pair in items[: taken[name]]}
    return [pair for pair in pairs if pair in chosen]


def judge_sample(reads: SampleReads, artefacts: Artefacts, judge: RelevanceJudge, grades_path: Path, folder: Path,
                 context: Any = None) -> None:
    """Grade `[judging] sample` ordered pairs with `judge` (fitted on `context` when it learns), in
    batches; sample.json says how many, how long each took and how long the rest should take, after
    every batch."""
    from recall_kit.curate.judge import judge_with
    from recall_kit.dataset import load_dataset
    from recall_kit.fileio import write_json_atomic, write_jsonl_atomic
    from recall_kit.progress import stage

    evaluation = artefacts.path("evaluation-set")
    stratum_of = {q.query_id: q.stratum for q in load_dataset(evaluation).queries}
    sample = stratified(ordered_pairs(reads, artefacts), stratum_of, reads.size)
    pool_file = folder / "sample-pool.jsonl"
    done, started, estimate = 0, time.perf_counter(), None
    while done < len(sample):
        done = min(len(sample), done + (FIRST_CALLS if done == 0 else BATCH))
        rows: dict[str, list[str]] = {}
        for query, doc in sample[:done]:
            rows.setdefault(query, []).append(doc)
        write_jsonl_atomic(pool_file, [{"query_id": q, "doc_ids": docs} for q, docs in rows.items()])
        judge_with(judge, pool_file, evaluation, grades_path, show=lambda line: None, context=context)
        per_pair = (time.perf_counter() - started) / done
        estimate = per_pair * (len(sample) - done)
        stage(f"judging a sample: {done} of {len(sample)} pairs, about {estimate:.0f} s left")
        write_json_atomic(folder / "sample.json", {"sample": len(sample), "judged": done,
                                                  "seconds_per_pair": round(per_pair, 4),
                                                  "seconds_left": round(estimate, 1)})
