"""People's labels in the study: their files (`recall-kit label`'s), merged into the judged set, and
Cohen's kappa between them, against a model judge and against the user's qrels.
"""

from __future__ import annotations

import glob
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.errors import SpecError

if TYPE_CHECKING:
    from recall_kit.study.config import StudyConfig

Grades = dict[str, dict[str, int]]


def people_files(config: StudyConfig) -> list[Path]:
    """The grade files of `[judging] people` (globs allowed), else every FOLDER/labels/*.jsonl."""
    patterns = config.people if config.people is not None else [str(config.folder / "labels" / "*.jsonl")]
    found: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        for match in matches:
            path = Path(match)
            if not path.is_file():
                raise SpecError(f"{config.source.name}: [judging] people names {match}, which is not a file.")
            if path not in found:
                found.append(path)
    return found


#: People's grades files a study takes: it measures kappa between every two people, so the work and
#: the document grow with the square of their number (2,000 files: 2 million pairs, 8 minutes).
MAX_PEOPLE = 200


def check_people_count(paths: Sequence[Path], where: str) -> None:
    """Refuse, in one line naming `where`, more than `MAX_PEOPLE` people's grades files."""
    if len(paths) > MAX_PEOPLE:
        raise SpecError(f"{where}: {len(paths):,} people's grades files; a study measures agreement between every two "
                        f"people, so it takes at most {MAX_PEOPLE}: put each person's grades in one file.")


def read_people(paths: Sequence[Path]) -> dict[str, Grades]:
    """Assessor -> their grades, each file read as `recall-kit label` writes it; one assessor's
    several files merged (`merge_files`: the most recent grade of a pair wins)."""
    return merge_files(read_files(paths))[0]


@dataclass
class PeopleFile:
    """One grades file: its assessor, grades and when each was given (`judged_at`, ISO time)."""

    path: Path
    assessor: str
    grades: Grades
    times: dict[str, dict[str, str]]
    #: Pairs the file grades more than once (the last grade is kept): said, never silent.
    regraded: int = 0


def read_files(paths: Sequence[Path]) -> list[PeopleFile]:
    """Each file as `recall-kit label` writes it, in the order given."""
    from recall_kit.curate.assessor import AssessorFile

    out = []
    for path in paths:
        found = AssessorFile.open(path, _assessor_of(path))
        out.append(PeopleFile(path, found.assessor, found.grades, found.times, found.regraded))
    return out


def merge_files(files: Sequence[PeopleFile]) -> tuple[dict[str, Grades], dict[str, int]]:
    """Assessor -> their grades over all their files, and assessor -> the pairs two of their files
    grade differently (a conflict: the most recent grade, by its `judged_at` time, wins; with no time
    or the same one, the later file in the order given). Never a grade dropped for its file."""
    people: dict[str, Grades] = {}
    when: dict[str, dict[tuple[str, str], str]] = {}
    conflicts: dict[str, int] = {}
    for found in files:
        grades, times = people.setdefault(found.assessor, {}), when.setdefault(found.assessor, {})
        for query, judged in found.grades.items():
            for doc, grade in judged.items():
                at = found.times.get(query, {}).get(doc, "")
                before = grades.get(query, {}).get(doc)
                if before is not None and before != grade:
                    conflicts[found.assessor] = conflicts.get(found.assessor, 0) + 1
                if before is None or at >= times.get((query, doc), ""):
                    grades.setdefault(query, {})[doc] = grade
                    times[(query, doc)] = at
    return people, conflicts


def conflicts_line(conflicts: Mapping[str, int]) -> str | None:
    """``x: 3 pairs graded differently in two of their files (the most recent grade kept)``, or None."""
    if not any(conflicts.values()):
        return None
    return "; ".join(f"{name}: {n} pair{'' if n == 1 else 's'} graded differently in two of their files "
                     "(the most recent grade kept)" for name, n in sorted(conflicts.items()) if n)


def _assessor_of(path: Path) -> str:
    """The assessor a file names on its first row (else its stem); a file that cannot be read (not a
    regular file, not UTF-8, not JSON) is refused by `read_jsonl`, naming it and the line."""
    from recall_kit.dataset import read_jsonl

    for _, row in read_jsonl(path):
        return str(row.get("assessor") or path.stem)
    return path.stem


def people_grades(people: Mapping[str, Grades]) -> Grades:
    """One grade per pair from several people: the most common grade, the lower one on a tie."""
    votes: dict[str, dict[str, Counter[int]]] = {}
    for grades in people.values():
        for query, judged in grades.items():
            for doc, grade in judged.items():
                votes.setdefault(query, {}).setdefault(doc, Counter())[grade] += 1
    return {query: {doc: min(count, key=lambda g: (-count[g], g)) for doc, count in docs.items()}
            for query, docs in votes.items()}


def merge_labels(rows: Sequence[Mapping[str, Any]], *layers: Grades) -> tuple[list[dict[str, Any]], list[int]]:
    """qrels rows with each layer's grades added where nothing before it judged the pair (the user's
    qrels win, then each layer in turn); also how many grades each layer added."""
    merged: list[dict[str, Any]] = []
    added = [0] * len(layers)
    seen: set[str] = set()
    for row in rows:
        query = str(row["query_id"])
        seen.add(query)
        relevance = {str(k): int(v) for k, v in (row.get("relevance") or
                                                  {str(d): 1 for d in row.get("relevant_ids", [])}).items()}
        for index, layer in enumerate(layers):
            for doc, grade in layer.get(query, {}).items():
                if doc not in relevance:
                    relevance[doc] = grade
                    added[index] += 1
        merged.append({"query_id": row["query_id"], "relevance": relevance})
    return merged, added


def people_agreement(people: Mapping[str, Grades], model: Grades | None, seed: int = 0,
                     qrels: Grades | None = None) -> dict[str, Any]:
    """Cohen's kappa between every two assessors, of each against the model judge, and of each
    against the user's `qrels` (the pairs the label page mixed in as checks), on the pairs both
    graded; relevance binary (a grade of 1 or more), as the decisions read it."""
    from recall_kit.curate.agreement import agreement, paired_grades

    def measure(a: Grades, b: Grades) -> dict[str, Any] | None:
        first, second, _, _ = paired_grades(a, b, binary=True)
        if not first:
            return None
        agreed = sum(x == y for x, y in zip(first, second, strict=True))
        if len(set(first)) == 1 or len(set(second)) == 1:  # one side grades them all alike: kappa says nothing
            return {"kappa": None, "n": len(first), "interval": None, "agreed": agreed,
                    "why": "one side grades every shared pair alike"}
        found = agreement(a, b, binary=True, samples=500, seed=seed).to_dict()
        return {"kappa": found.get("kappa"), "n": found.get("n"), "interval": found.get("kappa_ci"), "agreed": agreed}

    names = sorted(people)
    pairs = []
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            found = measure(people[first], people[second])
            if found is not None:
                pairs.append({"a": first, "b": second, **found})
    against = []
    if model is not None:
        for name in names:
            found = measure(people[name], model)
            if found is not None:
                against.append({"assessor": name, **found})
    against_qrels = []
    if qrels is not None:
        for name in names:
            found = measure(people[name], qrels)
            if found is not None:
                against_qrels.append({"assessor": name, **found})
    return {"assessors": {name: sum(len(d) for d in people[name].values()) for name in names},
            "between": pairs, "against_model": against, "against_qrels": against_qrels}


#: The judgments step's file of labels: the user's qrels and people's grades, a model's left out.
LABELLED = "labelled.jsonl"


def labelled_qrels(judgments: Path) -> dict[str, dict[str, int]]:
    """The study's labels, a model judge's grades left out: what a person or the store's own qrels
    judged. A pair only a model graded is a prediction, not a label: the bounds, the holes threat,
    the label page's order and progress count it as a hole (`judgments`: the judgments step's folder)."""
    from recall_kit.curate.judge import read_qrels_file

    path = judgments / LABELLED
    return read_qrels_file(path if path.is_file() else judgments / "dataset" / "qrels.jsonl")


def model_grades(judgments: Path) -> dict[str, dict[str, int]]:
    """A model judge's grades of the pool (empty: the study's judge is its qrels)."""
    from recall_kit.curate.judge import read_qrels_file

    return read_qrels_file(judgments / "model-grades.jsonl")
