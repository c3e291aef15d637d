"""The study steps' JSON outputs that the document reads, typed: each step writes a dataclass
(`write_output`: `dataclasses.asdict`, unset optional fields left out) and `collect` reads it back
through one typed reader (`read_output`), never by key. The corpus step writes the document's own
`CorpusSummary` (study/result.py); the pool, judgments and agreement steps write the summaries below.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from recall_kit.document_reader import from_json
from recall_kit.fileio import write_json_atomic
from recall_kit.study.result import SCHEMA

Output = TypeVar("Output")


@dataclass
class PoolOutput:
    """pool.json: the pool of unjudged ids every system returned at `depth`, and the holes at the hook's k."""

    depth: int
    #: System -> {"returned": ids in its tops, "unjudged": of those, how many no label judges}.
    counts: dict[str, dict[str, int]]
    #: Unjudged ids pooled, over how many queries.
    ids: int
    queries: int
    #: System -> the share of its top `hook_k` that no label judges.
    unjudged_share_at_hook_k: dict[str, float] = field(default_factory=dict)


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


def write_output(path: Path, output: Any) -> None:
    """A step's typed output as JSON (`dataclasses.asdict`; optional fields left unset are left out)."""
    write_json_atomic(path, {key: value for key, value in dataclasses.asdict(output).items() if value is not None})


def read_output(kind: type[Output], path: Path) -> Output:
    """A step's typed output read back (document_reader.py `from_json`: field by field, nested types too)."""
    return from_json(kind, json.loads(path.read_text(encoding="utf-8")), path.name, SCHEMA)  # type: ignore[no-any-return]
