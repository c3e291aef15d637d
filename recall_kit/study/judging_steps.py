"""The study's judging steps: pool (every system's unjudged top ids), judgments (the user's qrels,
people's labels, a model judge's grades) and agreement. Each make function receives its step's
declared reads (study/reads.py) and the artefacts it needs."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.errors import DatasetError
from recall_kit.fileio import write_jsonl_atomic
from recall_kit.study.dataset_steps import read_rows
from recall_kit.study.outputs import AgreementOutput, JudgmentsOutput, PeopleAdded, PoolOutput, write_output
from recall_kit.study.people import LABELLED
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.reads import AgreementReads, JudgmentsReads, LearningReads, PoolReads

if TYPE_CHECKING:
    from recall_kit.types import RelevanceJudge

DATASET_FILES = ("corpus.jsonl", "queries.jsonl", "qrels.jsonl")


def make_pool(reads: PoolReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit pool`: every system's unjudged ids at the pool depth; and the holes at the hook's k."""
    from recall_kit.curate.pool import pool_unjudged
    from recall_kit.dataset import load_dataset
    from recall_kit.measure.result import load_result

    dataset = load_dataset(artefacts.path("evaluation-set"))
    named = [(name, load_result(artefacts.path(f"run/{name}") / "result.json")) for name in reads.systems]
    pool = pool_unjudged(named, dataset, depth=reads.depth)
    write_jsonl_atomic(folder / "pool.jsonl", pool.rows)
    holes = {}
    for name, result in named:
        top = [doc for query_id, ranking in result.rankings().items() for doc in ranking[:reads.hook_k]
               if doc not in dataset.qrels.get(query_id, {})]
        returned = sum(len(ranking[:reads.hook_k]) for ranking in result.rankings().values())
        holes[name] = round(len(top) / returned, 4) if returned else 0.0
    write_output(folder / "pool.json", PoolOutput(depth=pool.depth, counts=pool.counts,
                                                  ids=sum(len(row["doc_ids"]) for row in pool.rows),
                                                  queries=len(pool.rows), unjudged_share_at_hook_k=holes))


def pool_command(reads: PoolReads, folder: Path) -> str:
    return (f"recall-kit pool {' '.join(f'steps/run/{n}/result.json' for n in reads.systems)} "
            f"--depth {reads.depth} --dataset steps/evaluation-set --out pool.jsonl")


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
    """A model judge over the pool, or over `[judging] sample` pairs of it (study/sample.py)."""
    from recall_kit.curate.judge import judge_with

    if reads.sample is not None:
        from recall_kit.study.sample import judge_sample

        judge_sample(reads.sample, artefacts, judge, grades_path, folder, context)
        return
    judge_with(judge, artefacts.path("pool") / "pool.jsonl", artefacts.path("evaluation-set"), grades_path,
               show=lambda line: None, context=context)


def make_agreement(reads: AgreementReads, artefacts: Artefacts, folder: Path) -> None:
    write_output(folder / "agreement.json", measure_agreement(reads, artefacts))


def agreement_command(reads: AgreementReads, folder: Path) -> str | None:
    """`recall-kit agreement`: the second judge's grades against the labels the study used."""
    import os
    import shlex

    if reads.agreement is None:
        return None
    against = "judgments/dataset/qrels.jsonl" if reads.judge == "qrels" else "judgments/model-grades.jsonl"
    return (f"recall-kit agreement {shlex.quote(os.path.relpath(reads.agreement, folder))} steps/{against} "
            f"--seed {reads.seed}")


def agreement_against(reads: AgreementReads, artefacts: Artefacts) -> Path:
    """The labels a second judge's grades are compared with: the model judge's grades, or the user's qrels."""
    if reads.judge == "qrels":
        return artefacts.path("judgments") / "dataset" / "qrels.jsonl"
    return artefacts.path("judgments") / "model-grades.jsonl"


def measure_agreement(reads: AgreementReads, artefacts: Artefacts) -> AgreementOutput:
    """The agreement step: a second judge's grades (`[judging] agreement`, qrels JSONL as `recall-kit
    judge` writes) against the labels the study used (a model judge's grades, or the user's own qrels):
    Cohen's kappa on the pairs both graded, as `recall-kit agreement` computes it."""
    against = "the user's qrels" if reads.judge == "qrels" else f"the model judge {reads.judge!r}'s grades"
    people = _people_agreement(reads, artefacts)
    if people is not None and (reads.agreement is None or not Path(reads.agreement).is_file()):
        if reads.judge != "qrels" and people["against_model"]:
            first = people["against_model"][0]
            return AgreementOutput(measured=True, against=f"{against}, by {first['assessor']}", kappa=first["kappa"],
                                   n=first["n"], kappa_ci=first["interval"], people=people)
        found = [p for p in people["between"] + (people["against_qrels"] if reads.judge == "qrels" else [])
                 if p["kappa"] is not None]
        if found:  # the lowest kappa decides whether the verdicts are provisional
            low = min(found, key=lambda p: p["kappa"])
            where = (f"{against}, by {low['assessor']}" if "assessor" in low
                     else f"between assessors {low['a']} and {low['b']}")
            return AgreementOutput(measured=True, against=where + " (the lowest of the people's kappas)",
                                   kappa=low["kappa"], n=low["n"], kappa_ci=low["interval"], people=people)
        return AgreementOutput(measured=False, people=people, why=(
            f"people's grades joined ({', '.join(people['assessors'])}), but no kappa is defined on the pairs they "
            "share with each other or with the qrels (too few, or graded all alike)"))
    if reads.agreement is None or not Path(reads.agreement).is_file():
        why = ("the labels come from one judge (the user's qrels) and [judging] agreement names no second one"
               if reads.judge == "qrels" else
               "the model judge's grades were never compared with a person's ([judging] agreement names none)")
        return AgreementOutput(measured=False, why=why, people=people)
    from recall_kit.curate.agreement import agreement_files

    try:
        measured = agreement_files(reads.agreement, agreement_against(reads, artefacts), seed=reads.seed)
    except DatasetError as error:
        return AgreementOutput(measured=False, why=str(error).replace(str(artefacts.folder) + "/", ""))
    detail = measured.to_dict()
    return AgreementOutput(measured=True, against=against, kappa=detail["kappa"], n=detail["n"],
                           kappa_ci=detail["kappa_ci"], people=people, detail=detail)


def _people_agreement(reads: AgreementReads, artefacts: Artefacts) -> dict[str, Any] | None:
    """Kappa between the people who labelled, and of each against the model judge (None: nobody labelled)."""
    from recall_kit.study.people import people_agreement, read_people

    people = read_people([Path(path) for path in reads.people])
    if not people:
        return None
    from recall_kit.curate.judge import read_qrels_file

    model = None
    grades = artefacts.path("judgments") / "model-grades.jsonl"
    if reads.judge != "qrels" and grades.is_file():
        model = read_qrels_file(grades)
    qrels = read_qrels_file(artefacts.path("evaluation-set") / "qrels.jsonl")  # the user's, before anyone's labels
    return people_agreement(people, model, seed=reads.seed, qrels=qrels)
