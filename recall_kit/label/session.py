"""What a person labels, in which order, and what each label changes: the state behind the page.

Over a study (its study.toml or folder) the queue is the unjudged (query, memory) pairs grouped by
query, the queries the study needs first (`recall_kit.label.order.label_order`: a sample that must
be labelled, then what can move a verdict, `recall_kit.decide.holes.Holes`), then the rest of the
study's pool; over a pool file it is the pool's order. A share of already-judged pairs (the qrels',
other assessors') is mixed in unannounced, so each person's agreement can be measured. Each grade
goes to the assessor's own file at once (`AssessorFile`), so a closed tab or a Ctrl-C loses nothing
and a restart resumes. Sensitive memories, and ids the corpus does not hold, are never offered.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from recall_kit.curate.assessor import AssessorFile
from recall_kit.curate.scale import scale_named
from recall_kit.errors import DatasetError, OptionError, RecallKitError
from recall_kit.label.order import Pair, check_pairs, label_order

if TYPE_CHECKING:
    from recall_kit.dataset import Dataset
    from recall_kit.decide.holes import Holes
    from recall_kit.study.result import StudyResult

Grades = dict[str, dict[str, int]]
#: The share of already-judged pairs mixed into each query's pairs (unannounced checks).
CHECK_SHARE = 0.2
#: How many pairs after the one shown the page holds, to show the next at once on a key.
PREFETCH = 3
#: A pause longer than this between two grades is a break, not the assessor's pace.
LONGEST_PACE_S = 300.0
#: The longest note a pair can carry.
MAX_NOTE = 500


@dataclass
class Material:
    """Everything the page reads: the dataset (texts, base labels), rankings and the decision."""

    dataset: Dataset
    rankings: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    baseline: str | None = None
    challenger: str | None = None
    metrics: list[str] = field(default_factory=list)
    hook_k: int = 5
    pool: list[Pair] = field(default_factory=list)
    folder: Path | None = None
    resamples: int = 2000
    seed: int = 0
    #: Every candidate of the study: the Holm family of the decision rows holds all of them.
    candidates: list[str] = field(default_factory=list)
    #: The grades offered (`[judging] scale`): "binary" or "graded".
    scale: str = "binary"
    #: Queries to label before any other, in this order (a random sample an interval needs labelled) ...
    first: list[str] = field(default_factory=list)
    #: ... and their pairs: the holes of every system that can become the verdict (the intervals step's).
    sample: list[Pair] = field(default_factory=list)
    #: A model judge's grades (query -> id -> grade): predictions, shown only after the person's grade.
    model: Grades = field(default_factory=dict)
    #: Other people's grades of the same pairs (assessor -> grades): checks are drawn from them too.
    others: dict[str, Grades] = field(default_factory=dict)
    #: Ids dropped as sensitive (a grades file's grades of them are left out, and counted here per file).
    sensitive: set[str] = field(default_factory=set)
    #: Grades file name -> its grades of sensitive memories left out (said once, at start).
    sensitive_dropped: dict[str, int] = field(default_factory=dict)

    def dropped_line(self) -> str | None:
        """The one line said at start when grades files named sensitive memories (None: none did)."""
        if not self.sensitive_dropped:
            return None
        return (f"label: {sum(self.sensitive_dropped.values())} grade(s) of memories dropped as sensitive left out ("
                + ", ".join(f"{n} in {name}" for name, n in self.sensitive_dropped.items())
                + "); the study drops them too.")

    def screen(self, path: Path, grades: Grades) -> None:
        """A grades file's grades checked as the study checks people's (`screen_grades`): an unknown
        id refused naming the file and line, a sensitive memory's grade left out and counted."""
        from recall_kit.curate.assessor import screen_grades

        memories = self.dataset.corpus
        known = {memory.id for memory in memories} | {m.parent_id for m in memories if m.parent_id is not None}
        where = "the study's corpus" if self.folder is not None else "the dataset's corpus"
        dropped = screen_grades(path, grades, known, self.sensitive | set(self.dataset.sensitive_ids), where)
        if dropped:
            self.sensitive_dropped[path.name] = self.sensitive_dropped.get(path.name, 0) + dropped


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


def study_material(path: str | Path, assessor: str) -> Material:
    """A study's evaluation set, labels (the user's qrels and people's grades: a model judge's grades
    kept apart, `Material.model`), rankings and decision (the verdict's system against the baseline),
    read from its folder; its scale from its study.toml (when given). The other assessors' files in
    STUDY/labels/ are read by `open_session`, which knows the file this session writes."""
    import dataclasses

    from recall_kit.curate.judge import read_pool
    from recall_kit.dataset import SENSITIVE_IDS_FILE, load_dataset
    from recall_kit.measure.result import load_result
    from recall_kit.study.people import labelled_qrels, model_grades
    from recall_kit.study.rules import verdict_subject
    from recall_kit.study.steps.intervals import sample_pairs

    folder = study_folder(path)
    study = study_result(folder)
    steps = folder / "steps"
    # a model's grades are predictions, not labels: its pairs stay to label (its grade shown after the person's)
    dataset = dataclasses.replace(load_dataset(steps / "judgments" / "dataset"),
                                  qrels=labelled_qrels(steps / "judgments"))
    names = [system.name for system in study.systems]
    rankings = {name: load_result(steps / "eval" / name / "result.json").rankings() for name in names}
    pool_file = steps / "pool" / "pool.jsonl"
    pool = [(q, d) for q, docs in read_pool(pool_file) for d in docs] if pool_file.is_file() else []
    scale = "binary"
    if Path(path).suffix == ".toml":
        from recall_kit.study.config import load_study

        scale = load_study(path).scale
    listed = steps / "evaluation-set" / SENSITIVE_IDS_FILE
    sample = sample_pairs(folder)
    material = Material(dataset=dataset, rankings=rankings, baseline=study.baseline, challenger=verdict_subject(study),
                        metrics=list(study.decision_metrics), hook_k=int(study.hook_k), pool=pool, folder=folder,
                        resamples=int(study.resamples), seed=int(study.seed),
                        candidates=[n for n in names if n != study.baseline], scale=scale,
                        first=list(dict.fromkeys(query for query, _ in sample)), sample=sample,
                        sensitive=_listed_ids(listed), model=model_grades(steps / "judgments"))
    return material


class _Damaged(ValueError):
    """What is wrong with a study.json, in words that quote nothing from it."""


def study_result(folder: Path) -> StudyResult:
    """The study's study.json as the page reads it: its systems name folders of steps/eval/, its
    baseline and challenger are among them, its numbers are in range; else one line naming it."""
    from recall_kit.decide.stats import check_resamples
    from recall_kit.study.result import StudyResult
    from recall_kit.study.validate import MAX_DEPTH

    path = folder / "study.json"
    try:
        study = StudyResult.from_dict(json.loads(path.read_text(encoding="utf-8")))
        names = [system.name for system in study.systems]
        if any(not name or Path(name).name != name or name in (".", "..") for name in names):
            raise _Damaged("a system's name is no folder name")
        if study.baseline not in names or (study.challenger is not None and study.challenger not in names):
            raise _Damaged("its baseline or challenger is none of its systems")
        if not 1 <= int(study.hook_k) <= MAX_DEPTH:
            raise _Damaged(f"hook_k is not 1 to {MAX_DEPTH}")
        check_resamples(int(study.resamples))
        int(study.seed)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, RecallKitError) as error:
        why = str(error) if isinstance(error, (_Damaged, RecallKitError)) else type(error).__name__
        raise DatasetError(f"{path}: not as `recall-kit study run` writes it ({why}); run the study again.") from None
    return study


def _listed_ids(path: Path) -> set[str]:
    """The ids a study's sensitive-ids file lists (none when there is no such file)."""
    if not path.is_file():
        return set()
    try:
        return set(path.read_text(encoding="utf-8").split())
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: not UTF-8 text; run the study again.") from None


def other_assessors(folder: Path, assessor: str, material: Material, exclude: Path | None = None) -> dict[str, Grades]:
    """The grades in FOLDER/*.jsonl but those of the file `exclude` (the one this session writes),
    screened as the study screens them (`Material.screen`), each assessor's files merged
    (`merge_files`): another file of `assessor` (their laptop's) counts as graded already.
    Without `exclude`, every file of `assessor` is left out."""
    from recall_kit.study.people import check_people_count, merge_files, read_files

    if not folder.is_dir():
        return {}
    paths = sorted(folder.glob("*.jsonl"))
    check_people_count(paths, str(folder))
    skip = exclude.resolve() if exclude is not None else None
    files = [found for found in read_files(paths) if (found.path.resolve() != skip if skip is not None
                                                      else found.assessor != assessor)]
    for found in files:
        material.screen(found.path, found.grades)
    return merge_files(files)[0]


def pool_material(pool_path: str | Path, dataset_path: str | Path) -> Material:
    """A pool file (`recall-kit pool`'s) over a dataset: no decision, the pool's order."""
    from recall_kit.curate.judge import read_pool
    from recall_kit.dataset import load_dataset

    dataset = load_dataset(dataset_path)
    pool = [(q, d) for q, docs in read_pool(pool_path) for d in docs]
    return Material(dataset=dataset, pool=pool)


def decision_holes(material: Material, qrels: Grades) -> Holes | None:
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


def judged_by_others(base: Grades, others: dict[str, Grades]) -> Grades:
    """The grades already given before this assessor: the qrels', then other people's where the qrels say nothing."""
    from recall_kit.study.people import people_grades

    merged = {query: {doc: grade for doc, grade in docs.items() if grade >= 0} for query, docs in base.items()}
    for query, docs in people_grades(others).items():
        for doc, grade in docs.items():
            merged.setdefault(query, {}).setdefault(doc, grade)
    return merged


class LabelSession:
    """One assessor labelling one study or pool: the queue, the history (back), skips, the file."""

    def __init__(self, material: Material, out: AssessorFile, check_share: float = CHECK_SHARE) -> None:
        self.material = material
        self.out = out
        self.scale = scale_named(material.scale)
        self.memories = {memory.id: memory for memory in material.dataset.corpus}
        self.queries = {query.query_id: query for query in material.dataset.queries}
        self.sensitive = set(material.dataset.sensitive_ids)
        self.base = {q: dict(j) for q, j in material.dataset.qrels.items()}
        self.known = judged_by_others(self.base, material.others)
        #: Queries another assessor began since this page opened (their files re-read as each query
        #: group begins): left to them, so two people at once are offered different pairs (the
        #: planned checks aside).
        self.taken: set[str] = set()
        self.holes = decision_holes(material, self.known)
        if self.holes is not None and out.grades:  # resume: what this assessor already gave
            self.holes.label_many([(q, d, g) for q, grades in out.grades.items() for d, g in grades.items()
                                   if not self.already_judged(q, d)])
        self.skipped: set[Pair] = set()
        self.history: list[Pair] = []
        self.current: Pair | None = None
        #: The queue's pair to come back to after one opened from the contrast view is graded.
        self.resume: Pair | None = None
        #: The queries whose group was shown and left: they do not come back before the pool's phase.
        self.finished: set[str] = set()
        #: The query on screen and the pairs its group held when it began (what the page prefetched).
        self.group_query: str | None = None
        self.group_pairs: set[Pair] = set()
        self.given = 0  # grades in this session
        self.graded_at: list[float] = []
        self._queue: list[Pair] | None = None
        self.checks = check_pairs(self._check_counts(), self.known, check_share, material.seed)
        #: A check every this many pairs; the pairs a check group may come from between two queries (other
        #: assessors' grades, the qrels' queries that judge both kinds).
        self.check_gap = max(1, round(1 / check_share)) if check_share > 0 else 0
        self.since_check = 0
        self.others_pairs = {(q, d) for grades in material.others.values() for q, docs in grades.items() for d in docs}
        self.apart_pairs = self.others_pairs | {(q, d) for q, docs in self.both_kinds().items() for d in docs}
        self.groups_planned = 0
        #: The current group's checks: its own, and the check group that follows it (`_plan`).
        self.plan_own: list[Pair] = []
        self.plan_apart: list[Pair] = []
        self._pairs: set[tuple[str, str]] | None = None  # what the page can show (`on_page`)
        self.advance()

    # -- the queue ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the assessor file's lock (a session ends with its server)."""
        self.out.close()

    def offerable(self, query: str, doc: str) -> bool:
        """A pair the page may show: a known query, a memory the corpus holds that is not sensitive."""
        return query in self.queries and doc in self.memories and doc not in self.sensitive

    def already_judged(self, query: str, doc: str) -> bool:
        return self.known.get(query, {}).get(doc, -1) >= 0

    def on_page(self, query: str, doc: str) -> bool:
        """A pair the page can show (offerable, and in the pool, a judged pair, or in a system's top
        k): `api/grade` and `api/open` take no other, so a request cannot write grades of pairs no
        one was shown."""
        if not self.offerable(query, doc):
            return False
        if self._pairs is None:
            m = self.material
            tops = {(q, d) for ranking in m.rankings.values() for q, docs in ranking.items() for d in docs[:m.hook_k]}
            self._pairs = tops | set(m.pool)
        return (query, doc) in self._pairs or self.grade_of(query, doc) is not None

    def judged(self, query: str, doc: str) -> bool:
        return self.out.has(query, doc) or self.already_judged(query, doc)

    def _order(self) -> list[Pair]:
        """The unjudged pairs to offer, grouped by query (`label_order`), the query on screen first."""
        weighted = self.holes.order() if self.holes is not None else []
        pinned = self.current[0] if self.current is not None else None
        order = label_order(weighted, self.material.pool, self.material.first, pinned, self.finished,
                            self.material.sample)
        order = [pair for pair in order if pair not in self.skipped and not self.judged(*pair) and self.offerable(*pair)
                 and (pair[0] not in self.taken or pair[0] == self.group_query)]
        if pinned is not None and pinned == self.group_query:  # pairs that joined the group late wait at the end
            late = [pair for pair in order if pair[0] == pinned and pair not in self.group_pairs]
            waiting = set(late)
            order = [pair for pair in order if pair not in waiting] + late
        return order

    def _pin(self) -> None:
        """When the pair shown is a new query's (not the check group's), fix that query's group:
        the pairs it holds now, and its plan of checks (`_plan`)."""
        if self.current is None or self.current[0] == self.group_query or self.resume is not None:
            return
        taken = self._taken_by_others(self.current[0])
        if self.plan_apart and self.current[0] == self.plan_apart[0][0]:
            return  # a check group: its checks, and its other pairs unless another assessor began the query
        if taken:
            self.advance()  # another assessor began it since this page opened: the next query
            return
        self.group_query = self.current[0]
        self.group_pairs = {pair for pair in self._order() if pair[0] == self.group_query}
        self._plan(self.group_query)
        self.changed()

    def _taken_by_others(self, query: str) -> bool:
        """Re-read the other assessors' files (a study's labels/) and note the queries they graded
        since this page opened; whether `query` is one. A file that cannot be read now (being
        replaced, removed) is passed over: the study reads it later and says what is wrong."""
        folder = self.material.folder
        if folder is None or not (folder / "labels").is_dir():
            return False
        from recall_kit.errors import RecallKitError
        from recall_kit.study.people import read_people

        for path in sorted((folder / "labels").glob("*.jsonl")):
            if path.resolve() == self.out.path.resolve():
                continue
            try:
                people = read_people([path])
            except (RecallKitError, OSError):
                continue
            for name, grades in people.items():
                if name == self.out.assessor:
                    continue
                self.taken.update(q for q, docs in grades.items() if any(d not in self.known.get(q, {}) for d in docs))
        self.changed()
        return query in self.taken

    def _plan(self, query: str) -> None:
        """The checks of the group of `query`: its own, and the check group to follow it (the first
        query with checks not yet graded among other assessors' grades and the qrels' both-way queries)."""
        def open_check(pair: Pair) -> bool:
            return not self.out.has(*pair) and pair not in self.skipped and self.offerable(*pair)

        self.plan_own = [pair for pair in self.checks if pair[0] == query and open_check(pair)]
        apart = [pair for pair in self.checks if pair in self.apart_pairs and pair[0] != query
                 and pair[0] not in self.finished and open_check(pair)]
        others = [pair for pair in apart if pair in self.others_pairs]
        self.groups_planned += 1
        if others and (self.groups_planned % 2 or len(others) == len(apart)):  # other people's and the qrels' by turns
            apart = others
        else:
            apart = [pair for pair in apart if pair not in self.others_pairs] or apart
        self.plan_apart = [pair for pair in apart if pair[0] == apart[0][0]] if apart else []

    def _check_counts(self) -> dict[str, int]:
        """Per query, the pairs checks are drawn in proportion to: those to label, or those others graded."""
        counts: dict[str, int] = {}
        for query, _ in self._order():
            counts[query] = counts.get(query, 0) + 1
        for grades in [*self.material.others.values(), self.both_kinds()]:
            for query, docs in grades.items():
                counts[query] = max(counts.get(query, 0), len(docs))
        return counts

    def both_kinds(self) -> Grades:
        """The qrels' queries that judge some memory relevant and some not: their checks can measure
        agreement with the qrels (where the qrels only list relevant ids, a kappa says nothing)."""
        return {query: grades for query, grades in self.base.items()
                if any(g == 0 for g in grades.values()) and any(g > 0 for g in grades.values())}

    def queue(self) -> list[Pair]:
        """The pairs still to offer, in order, with the checks not yet graded mixed in (`_with_checks`)."""
        if self._queue is None:
            self._queue = self._with_checks(self._order())
        return self._queue

    def _with_checks(self, order: list[Pair]) -> list[Pair]:
        """`order` with the checks the group's plan holds (`_plan`): one of the query's own every
        `check_gap` pairs while its group goes on, the rest when it ends; then the check group of a
        query another assessor graded (or one the qrels judge both ways), then the next query."""
        def pending(pairs: list[Pair]) -> list[Pair]:
            return [p for p in pairs if p not in self.skipped and not self.out.has(*p) and self.offerable(*p)]

        pinned = self.current[0] if self.current is not None else None
        if pinned is None:
            return order
        apart = pending(self.plan_apart)
        if apart and pinned == apart[0][0]:
            return apart + order
        own = pending(self.plan_own)
        size = next((i for i, pair in enumerate(order) if pair[0] != pinned), len(order))
        group, rest = order[:size], order[size:]
        if group and own:
            at = min(max(0, self.check_gap - self.since_check), size)
            group = group[:at] + [own[0]] + group[at:]
            own = own[1:]
        return group + own + apart + rest

    def changed(self) -> None:
        self._queue = None

    def advance(self) -> None:
        """Show the next pair of the queue (None when none is left): the query on screen keeps it."""
        self._next()
        self._pin()

    def _next(self) -> None:
        """The queue's next pair on screen, its group not yet fixed (`_pin`): a query just left is
        marked finished first (`_leave`), so the next group's plan does not pick it for checks."""
        self.changed()
        upcoming = self.queue()
        self.current = upcoming[0] if upcoming else None
        self.changed()

    def upcoming(self, count: int = PREFETCH) -> list[Pair]:
        """The pairs the page shows after the current one, if it is graded (what the page prefetches)."""
        return [pair for pair in self.queue() if pair != self.current][:count]

    # -- actions -----------------------------------------------------------------------------------

    def grade(self, query: str, doc: str, grade: int, then: Pair | None = None) -> None:
        """Take a grade of `query`/`doc` (the pair shown, or one opened from the contrast view); show
        `then` next when given (the pair the page already shows: prefetched), else the queue's next."""
        values = [g.value for g in self.scale]
        if grade not in values:
            raise OptionError(f"grade {grade!r}: one of {', '.join(map(str, values))}")
        self._check(query, doc)
        self.out.grade(query, doc, grade)
        self.given += 1
        self.graded_at.append(time.monotonic())
        self.since_check = 0 if (query, doc) in self.checks else self.since_check + 1
        if self.holes is not None and not self.already_judged(query, doc):
            self.holes.label(query, doc, grade)
        self.history.append((query, doc))
        self.changed()
        resume, self.resume = self.resume, None
        if resume is not None:  # graded from the contrast view: back to the queue's pair
            if resume != (query, doc) and not self.out.has(*resume):
                self.current = resume
                self.changed()
            else:
                self.advance()
            return
        if then is not None and self._may_show(then, query):
            self.current = then
            self.changed()
        else:
            self._next()
        self._leave(query)

    def _may_show(self, pair: Pair, graded: str) -> bool:
        """Whether the page may show `pair` next, as it prefetched it after a pair of `graded`: a
        pair still in the queue, and another query's only when `graded` holds no pair next (the
        order changed after the page looked ahead: the queue's next pair is shown instead, so a
        query is not left with pairs that would bring it back). The page itself guesses within a
        query only (static/page.js)."""
        queue = self.queue()
        if pair not in queue:
            return False
        return pair[0] == graded or queue[0][0] != graded

    def _leave(self, query: str) -> None:
        """Mark `query` finished when the pair now shown is another query's (whose group begins)."""
        if self.current is None or self.current[0] != query:
            self.finished.add(query)
            self.changed()
        self._pin()

    def skip(self) -> None:
        left = self.current
        if left is not None:
            self.skipped.add(left)
            self.history.append(left)
        self._next()
        if left is not None and self.resume is None:
            self._leave(left[0])
        else:
            self._pin()

    def back(self) -> None:
        """Show the pair before this one again (its grade, if any, can be given anew)."""
        if self.history:
            pair = self.history.pop()
            self.skipped.discard(pair)
            self.current = pair
            self.changed()

    def open(self, query: str, doc: str) -> None:
        """Show one pair now (a hit chosen in the contrast view)."""
        self._check(query, doc)
        if self.current is not None:
            self.history.append(self.current)
            if self.resume is None:
                self.resume = self.current
        self.current = (query, doc)
        self.changed()

    def note(self, query: str, doc: str, text: str, flagged: bool) -> None:
        """Keep the assessor's note on a pair and its flag, in their file."""
        self._check(query, doc)
        if len(text) > MAX_NOTE:
            raise OptionError(f"a note holds at most {MAX_NOTE} characters ({len(text)} given)")
        self.out.note(query, doc, text.strip(), flagged)

    def _check(self, query: str, doc: str) -> None:
        if not self.on_page(query, doc):
            raise OptionError(f"({query[:100]!r}, {doc[:100]!r}) is not a pair this page offers")

    # -- what the assessor has done ----------------------------------------------------------------

    def grade_of(self, query: str, doc: str) -> int | None:
        if self.out.has(query, doc):
            return self.out.grades[query][doc]
        grade = self.known.get(query, {}).get(doc, -1)
        return grade if grade >= 0 else None

    def pace(self) -> float | None:
        """Seconds a grade takes this assessor: the median gap between their grades in this session."""
        gaps = [b - a for a, b in zip(self.graded_at, self.graded_at[1:], strict=False) if b - a <= LONGEST_PACE_S]
        return statistics.median(gaps) if gaps else None


def open_session(source: str | Path | None, assessor: str, out: str | Path | None = None,
                 pool: str | Path | None = None, dataset: str | Path | None = None,
                 scale: str | None = None) -> LabelSession:
    """A session over a study (`source`) or a pool file with its dataset; the assessor's file is
    `out`, else STUDY/labels/ASSESSOR.jsonl (a study) or ASSESSOR.jsonl beside the pool file;
    `scale` overrides the study's `[judging] scale`. The file is locked until `session.close()`: a
    second session on it is refused."""
    if pool is not None:
        if dataset is None:
            raise OptionError("--pool needs --dataset (the memories and queries the pool is of).")
        material = pool_material(pool, dataset)
        default = Path(pool).with_name(f"{assessor}.jsonl")
    elif source is not None:
        if (Path(source).is_dir() and not (Path(source) / "study.json").is_file()
                and any(Path(source).glob("*.toml"))):
            from recall_kit.study.config import study_file

            source = study_file(source)  # the folder holding the study file, as `study run` takes it
        material = study_material(source, assessor)
        default = (material.folder or Path(".")) / "labels" / f"{assessor}.jsonl"
    else:
        raise OptionError("Give a study (its study.toml or folder), or --pool FILE --dataset DIR.")
    if scale is not None:
        scale_named(scale)
        material.scale = scale
    path = Path(out) if out is not None else default
    if path.exists() and not path.is_file():
        raise DatasetError(f"{path}: not a file")
    if material.folder is not None:
        material.others = other_assessors(material.folder / "labels", assessor, material, exclude=path)
    # the study's own folder: nothing written through a link out of it (a path the user typed is followed)
    inside = material.folder if out is None and pool is None else None
    grades = AssessorFile.open_for_writing(path, assessor, inside=inside)
    try:
        material.screen(path, {query: dict(judged) for query, judged in grades.grades.items()})  # the file kept as is
        return LabelSession(material, grades)
    except BaseException:
        grades.close()
        raise
