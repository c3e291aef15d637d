"""The agreement step: `recall-kit agreement`, a second judge's grades against the labels the study
used, and the kappas between the people who labelled and of each against the model judge."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError
from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.pipeline.graph import file_hash
from recall_kit.study.steps.common import StepRule, hashes, people_paths, write_output


@dataclass
class AgreementOutput:
    """agreement.json: judge agreement, measured (Cohen's kappa, on how many pairs, against what) or why not."""

    measured: bool
    #: What the second judge (or the person) was compared with.
    against: str | None = None
    kappa: float | None = None
    n: int | None = None
    kappa_ci: list[float] | None = None
    #: Why it was not measured.
    why: str | None = None
    #: People's agreement, between them and with the judge or the qrels (study/people.py `people_agreement`).
    people: dict[str, Any] | None = None
    #: `recall-kit agreement`'s whole result, when `[judging] agreement` names a grades file.
    detail: dict[str, Any] | None = None


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


RULE = StepRule("agreement", AgreementReads, lambda at, _: agreement_reads(at.config), make_agreement,
                needs=lambda _: ["evaluation-set", "judgments"], reproduce=agreement_command)
