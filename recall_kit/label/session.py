"""What a person labels, in which order, and what each label changes: the state behind the page.

Over a study (its folder, or its study.toml) the queue is first the holes of the study's seeded
random sample of open queries (`recall_kit.study.intervals.sample_pairs`: their labels make the
hole-aware intervals), then the unjudged (query, memory) pairs in the
order of how much their label can move a verdict (`recall_kit.decide.holes.Holes`), then the rest of
the study's pool; over a pool file it is the pool's order. Each grade goes to the assessor's own
file at once (`AssessorFile`), so a closed tab or a Ctrl-C loses nothing and a restart resumes.
Sensitive memories, and ids the corpus does not hold, are never offered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.curate.assessor import AssessorFile
from recall_kit.errors import DatasetError, OptionError

if TYPE_CHECKING:
    from recall_kit.dataset import Dataset
    from recall_kit.decide.holes import Holes

#: Grades a key can give (0 not relevant ... 3 highly relevant), as the qrels read them.
GRADES = (0, 1, 2, 3)
#: How many of a query's judged memories the page shows beside the one being labelled.
JUDGED_SHOWN = 8
#: How many queries the contrast view shows.
CONTRAST_QUERIES = 10


@dataclass
class Material:
    """Everything the page reads: the dataset (texts, base labels), rankings and the decision."""

    dataset: Dataset
    rankings: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    baseline: str | None = None
    challenger: str | None = None
    metrics: list[str] = field(default_factory=list)
    hook_k: int = 5
    pool: list[tuple[str, str]] = field(default_factory=list)
    folder: Path | None = None
    resamples: int = 2000
    seed: int = 0
    #: Every candidate of the study: the Holm family of the decision rows holds all of them.
    candidates: list[str] = field(default_factory=list)
    #: The holes of the study's seeded sample of open queries, in order (study/intervals.py): offered first.
    sample: list[tuple[str, str]] = field(default_factory=list)


def study_folder(path: str | Path) -> Path:
    """The study folder of a study.toml or of a folder that holds a study's study.json."""
    source = Path(path)
    if source.is_file() and source.suffix == ".toml":
        from recall_kit.study.config import load_study

        source = load_study(source).folder
    if not (source / "study.json").is_file():
        raise OptionError(f"{path}: not a study that has run (no study.json); run `recall-kit study run` first, "
                          "or give --pool FILE --dataset DIR.")
    return source


def study_material(path: str | Path) -> Material:
    """A study's evaluation set, labels, rankings and decision, read from its folder."""
    from recall_kit import load_dataset, load_result
    from recall_kit.curate.judge import read_pool

    folder = study_folder(path)
    from recall_kit.study.intervals import sample_pairs
    from recall_kit.study.result import StudyResult

    study = StudyResult.from_dict(json.loads((folder / "study.json").read_text(encoding="utf-8")))
    steps = folder / "steps"
    dataset = load_dataset(steps / "judgments" / "dataset")
    names = [system.name for system in study.systems]
    rankings = {name: load_result(steps / "eval" / name / "result.json").rankings() for name in names}
    pool_file = steps / "pool" / "pool.jsonl"
    pool = [(q, d) for q, docs in read_pool(pool_file) for d in docs] if pool_file.is_file() else []
    return Material(dataset=dataset, rankings=rankings, baseline=study.baseline, challenger=study.challenger,
                    metrics=list(study.decision_metrics), hook_k=int(study.hook_k), pool=pool, folder=folder,
                    resamples=int(study.resamples), seed=int(study.seed),
                    candidates=[n for n in names if n != study.baseline], sample=sample_pairs(folder))


def pool_material(pool_path: str | Path, dataset_path: str | Path) -> Material:
    """A pool file (`recall-kit pool`'s) over a dataset: no decision, the pool's order."""
    from recall_kit import load_dataset
    from recall_kit.curate.judge import read_pool

    dataset = load_dataset(dataset_path)
    pool = [(q, d) for q, docs in read_pool(pool_path) for d in docs]
    return Material(dataset=dataset, pool=pool)


def decision_holes(material: Material, qrels: dict[str, dict[str, int]]) -> Holes | None:
    """The study's decision rows as `Holes`: every candidate against the baseline on each decision
    metric, overall and per stratum, one Holm family; only the challenger's rows are watched."""
    from recall_kit.decide.holes import Holes, boundable, decision_contrasts

    if material.baseline is None or material.challenger is None:
        return None
    queries = [q.query_id for q in material.dataset.queries
               if all(q.query_id in material.rankings[s] for s in (material.baseline, *material.candidates))]
    stratum = {q.query_id: q.stratum for q in material.dataset.queries}
    contrasts = decision_contrasts(material.baseline, material.candidates, boundable(material.metrics), queries,
                                   stratum, watched=material.challenger)
    return Holes(material.rankings, qrels, contrasts, n_resamples=material.resamples, seed=material.seed)


class LabelSession:
    """One assessor labelling one study or pool: the queue, the history (back), skips, the file."""

    def __init__(self, material: Material, out: AssessorFile) -> None:
        self.material = material
        self.out = out
        self.memories = {memory.id: memory for memory in material.dataset.corpus}
        self.queries = {query.query_id: query for query in material.dataset.queries}
        self.sensitive = set(material.dataset.sensitive_ids)
        base = {q: dict(j) for q, j in material.dataset.qrels.items()}
        self.holes = decision_holes(material, base)
        if self.holes is not None and out.grades:  # resume: what this assessor already gave
            self.holes.label_many([(q, d, g) for q, grades in out.grades.items() for d, g in grades.items()])
        self.base = base
        self.skipped: set[tuple[str, str]] = set()
        self.history: list[tuple[str, str]] = []
        self.current: tuple[str, str] | None = None
        self.given = 0  # grades in this session
        self.advance()

    # -- the queue ---------------------------------------------------------------------------------

    def offerable(self, query: str, doc: str) -> bool:
        """A pair the page may show: a known query, a memory the corpus holds that is not sensitive."""
        return query in self.queries and doc in self.memories and doc not in self.sensitive

    def judged(self, query: str, doc: str) -> bool:
        return self.out.has(query, doc) or self.base.get(query, {}).get(doc, -1) >= 0

    def queue(self) -> list[tuple[str, str]]:
        """The pairs still to offer, in order: the holes of the study's random sample of open queries
        (their labels make the hole-aware intervals), those that can move a verdict, then the pool."""
        order = list(self.material.sample)
        if self.holes is not None:
            order += [(q, d) for q, d, _ in self.holes.order()]
        order = list(dict.fromkeys(order))
        seen = set(order)
        order += [pair for pair in self.material.pool if pair not in seen]
        return [pair for pair in order
                if pair not in self.skipped and not self.judged(*pair) and self.offerable(*pair)]

    def advance(self) -> None:
        """Show the next pair of the queue (None when none is left)."""
        upcoming = self.queue()
        self.current = upcoming[0] if upcoming else None

    # -- actions -----------------------------------------------------------------------------------

    def grade(self, query: str, doc: str, grade: int) -> None:
        """Take a grade of `query`/`doc` (the pair shown, or one opened from the contrast view)."""
        if grade not in GRADES:
            raise OptionError(f"grade {grade!r}: one of {', '.join(map(str, GRADES))}")
        if not self.offerable(query, doc):
            raise OptionError(f"({query!r}, {doc!r}) is not a pair this page offers")
        self.out.grade(query, doc, grade)
        self.given += 1
        if self.holes is not None:
            self.holes.label(query, doc, grade)
        self.history.append((query, doc))
        self.advance()

    def skip(self) -> None:
        if self.current is not None:
            self.skipped.add(self.current)
            self.history.append(self.current)
        self.advance()

    def back(self) -> None:
        """Show the pair before this one again (its grade, if any, can be given anew)."""
        if self.history:
            pair = self.history.pop()
            self.skipped.discard(pair)
            self.current = pair

    def open(self, query: str, doc: str) -> None:
        """Show one pair now (an unjudged hit clicked in the contrast view)."""
        if not self.offerable(query, doc):
            raise OptionError(f"({query!r}, {doc!r}) is not a pair this page offers")
        if self.current is not None:
            self.history.append(self.current)
        self.current = (query, doc)

    # -- what the page shows -----------------------------------------------------------------------

    def grade_of(self, query: str, doc: str) -> int | None:
        if self.out.has(query, doc):
            return self.out.grades[query][doc]
        grade = self.base.get(query, {}).get(doc, -1)
        return grade if grade >= 0 else None

    def state(self) -> dict[str, Any]:
        """The page's view: the pair shown with its query's judged memories, and the progress."""
        item = None
        if self.current is not None:
            query, doc = self.current
            judged = [{"doc_id": d, "grade": self.grade_of(query, d), "text": self.memories[d].content}
                      for d in sorted({*self.base.get(query, {}), *self.out.grades.get(query, {})})
                      if d != doc and self.grade_of(query, d) is not None and self.offerable(query, d)]
            judged.sort(key=lambda row: -int(row["grade"] or 0))
            item = {"query_id": query, "query": self.queries[query].text, "stratum": self.queries[query].stratum,
                    "doc_id": doc, "memory": self.memories[doc].content, "grade": self.grade_of(query, doc),
                    "judged": judged[:JUDGED_SHOWN]}
        return {"item": item, "assessor": self.out.assessor, "given": self.given, "total": len(self.out),
                "left": len(self.queue()), "can_go_back": bool(self.history), **self.verdicts()}

    def verdicts(self) -> dict[str, Any]:
        """How many judgments at most settle every watched verdict, and each verdict's state."""
        if self.holes is None:
            return {"decision": None}
        from recall_kit.decide.holes_report import flip_words

        bounds = [b for i, b in enumerate(self.holes.bounds(condensed=False)) if self.holes.contrasts[i].watched]
        return {"decision": {"baseline": self.material.baseline, "challenger": self.material.challenger,
                             "to_settle": self.holes.to_settle(),
                             "verdicts": [{"metric": b.metric, "scope": b.scope, "verdict": b.verdict,
                                           "low": b.low, "high": b.high, "flip": flip_words(b)} for b in bounds]}}

    def contrast(self, limit: int = CONTRAST_QUERIES) -> dict[str, Any]:
        """The queries where the challenger and the baseline differ most, their tops side by side."""
        m = self.material
        if m.baseline is None or m.challenger is None:
            return {"queries": []}
        k = m.hook_k
        rows = []
        for query in self.queries:
            if query not in m.rankings[m.baseline] or query not in m.rankings[m.challenger]:
                continue
            a, b = m.rankings[m.baseline][query][:k], m.rankings[m.challenger][query][:k]
            rows.append((_rank_distance(a, b), query, a, b))
        rows.sort(key=lambda row: (-row[0], row[1]))
        return {"baseline": m.baseline, "challenger": m.challenger, "k": k,
                "queries": [{"query_id": q, "query": self.queries[q].text, "distance": round(d, 4),
                             "baseline": self._hits(q, a), "challenger": self._hits(q, b)}
                            for d, q, a, b in rows[:limit]]}

    def _hits(self, query: str, ranking: Sequence[str]) -> list[dict[str, Any]]:
        hits = []
        for rank, doc in enumerate(ranking, start=1):
            shown = self.offerable(query, doc)
            hits.append({"rank": rank, "doc_id": doc, "grade": self.grade_of(query, doc),
                         "text": self.memories[doc].content if shown else None, "offerable": shown})
        return hits


def _rank_distance(a: Sequence[str], b: Sequence[str]) -> float:
    """How differently two top-k lists rank: 1 - the rank-biased overlap at p = 0.9 (Webber et al. 2010),
    truncated at their depth; 0 for the same list, 1 for disjoint ones."""
    depth = max(len(a), len(b))
    if depth == 0:
        return 0.0
    p, total, norm = 0.9, 0.0, 0.0
    for d in range(1, depth + 1):
        overlap = len(set(a[:d]) & set(b[:d])) / d
        total += p ** (d - 1) * overlap
        norm += p ** (d - 1)
    return 1.0 - total / norm


def open_session(source: str | Path | None, assessor: str, out: str | Path | None = None,
                 pool: str | Path | None = None, dataset: str | Path | None = None) -> LabelSession:
    """A session over a study (`source`) or a pool file with its dataset; the assessor's file is
    `out`, else STUDY/labels/ASSESSOR.jsonl (a study) or ASSESSOR.jsonl beside the pool file."""
    if pool is not None:
        if dataset is None:
            raise OptionError("--pool needs --dataset (the memories and queries the pool is of).")
        material = pool_material(pool, dataset)
        default = Path(pool).with_name(f"{assessor}.jsonl")
    elif source is not None:
        material = study_material(source)
        default = (material.folder or Path(".")) / "labels" / f"{assessor}.jsonl"
    else:
        raise OptionError("Give a study (its study.toml or folder), or --pool FILE --dataset DIR.")
    path = Path(out) if out is not None else default
    if path.exists() and not path.is_file():
        raise DatasetError(f"{path}: not a file")
    return LabelSession(material, AssessorFile.open(path, assessor))
