"""Interactive relevance judging of a pool (`recall-kit pool`): one query and one candidate at a
time, saved after every answer (an fsynced append-only journal, then the merged qrels rewritten
atomically), resumable, and never losing a judgment already made."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.dataset import MAX_ID_LENGTH, Dataset, as_id, load_dataset, parse_grade, read_jsonl
from recall_kit.document_reader import shown
from recall_kit.errors import DatasetError, OptionError, PluginRunError
from recall_kit.fileio import keep_on_interrupt, write_jsonl_atomic
from recall_kit.types import DocId, JudgingContext, Qrels, RelevanceJudge

GRADES = (0, 1, 2, 3)

HELP = """Grades:
  0  not relevant: does not help answer the query
  1  partly relevant: on topic, or one piece of what is needed
  2  relevant: answers the query, or an essential part of it
  3  highly relevant: the memory the query is after
Other keys:
  s  skip this pair (asked again in a later session)
  q  quit (every answer so far is saved; run the same command to go on)
  ?  this help"""


#: What an interrupted `judge` says its journal holds.
JOURNAL_HOLDS = "every grade given so far (run the same command to go on)"


def journal_path(out: str | Path) -> Path:
    """The append-only judgments journal kept beside the qrels file."""
    out = Path(out)
    return out.with_name(out.name + ".journal")


def read_pool(path: str | Path) -> list[tuple[str, list[DocId]]]:
    """(query id, candidate ids) per line of a pool file, in file order."""
    rows: list[tuple[str, list[DocId]]] = []
    source = Path(path)
    for number, row in read_jsonl(source):
        if "query_id" not in row or not isinstance(row.get("doc_ids"), list):
            raise DatasetError(f'{source.name}:{number}: expected {{"query_id": ..., "doc_ids": [...]}}')
        query, docs = as_id(row["query_id"]), [as_id(doc) for doc in row["doc_ids"]]
        if query is None or None in docs:  # null, "", a list, 1.5, a line break: no id, never its str()
            bad = row["query_id"] if query is None else row["doc_ids"][docs.index(None)]
            raise DatasetError(f"{source.name}:{number}: {'query_id' if query is None else 'doc_ids'} holds "
                               f"{shown(bad)}, not an id (an integer, or text on one line of at most "
                               f"{MAX_ID_LENGTH} characters)")
        rows.append((query, [doc for doc in docs if doc is not None]))
    return rows


def read_qrels_file(path: Path) -> Qrels:
    """A recall-kit qrels.jsonl as {query: {id: grade}}; an absent file is empty."""
    qrels: Qrels = {}
    if not path.exists():
        return qrels
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{path.name}:{number}: not valid JSON ({error.msg})") from None
            judgments = qrels.setdefault(str(row.get("query_id")), {})
            if isinstance(row.get("relevance"), dict):
                for doc, grade in row["relevance"].items():
                    value = parse_grade(grade)
                    if value is None:  # int() also reads "1_0" as 10
                        raise DatasetError(f"{path.name}:{number}: grade {str(grade)[:40]!r} of id {str(doc)[:40]!r} "
                                           "is not a whole number")
                    judgments.setdefault(str(doc), value)
            for doc in row.get("relevant_ids") or ():
                judgments.setdefault(str(doc), 1)
    return qrels


def read_journal(path: Path) -> list[tuple[str, DocId, int]]:
    """The journal's (query, id, grade) entries. A torn last line (a crash mid-write) is ignored."""
    entries: list[tuple[str, DocId, int]] = []
    if not path.exists():
        return entries
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                row = json.loads(line)
                entries.append((str(row["query_id"]), str(row["doc_id"]), int(row["grade"])))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
    return entries


def repair_journal(path: Path) -> bool:
    """Cut a torn last line (a crash mid-append) so the next record starts on a line of its own.
    Returns True when something was cut."""
    if not path.is_file():
        return False
    with path.open("rb+") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size == 0:
            return False
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return False
        handle.seek(max(0, size - 65536))
        tail = handle.read()
        cut = tail.rfind(b"\n")
        keep = size - len(tail) + cut + 1 if cut >= 0 else (0 if size <= 65536 else None)
        if keep is None:  # one line longer than 64 KiB: find its start the slow way
            handle.seek(0)
            keep = handle.read().rfind(b"\n") + 1
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    return True


@dataclass
class JudgeSession:
    """The state of one judging session; `run` drives it with any input and output callables."""

    pool: list[tuple[str, list[DocId]]]
    dataset: Dataset
    out: Path
    #: Every judgment known: dataset qrels, then --out, then the journal (earlier ones win).
    judgments: Qrels = field(default_factory=dict)
    answered: int = 0
    skipped: int = 0

    @classmethod
    def open(cls, pool_path: str | Path, dataset_path: str | Path, out: str | Path) -> JudgeSession:
        from recall_kit.fileio import check_outputs

        # A read-only folder fails now, not after the first answer.
        check_outputs({"--out": out, "journal": journal_path(Path(out))}, inputs={"pool": pool_path})
        dataset = load_dataset(dataset_path)
        session = cls(pool=read_pool(pool_path), dataset=dataset, out=Path(out))
        repair_journal(journal_path(session.out))
        merged: Qrels = {qid: dict(grades) for qid, grades in dataset.qrels.items()}
        for qid, grades in read_qrels_file(session.out).items():
            for doc, grade in grades.items():
                merged.setdefault(qid, {}).setdefault(doc, grade)
        journal = read_journal(journal_path(session.out))
        for qid, doc, grade in journal:
            merged.setdefault(qid, {}).setdefault(doc, grade)
        session.judgments = merged
        if journal:
            session._write_qrels()  # a crash may have come between the journal and the qrels file
        return session

    def pairs(self) -> list[tuple[str, DocId]]:
        """Every (query, candidate) pair in the pool, in pool order, once."""
        seen: set[tuple[str, DocId]] = set()
        ordered = []
        for query_id, docs in self.pool:
            for doc in docs:
                if (query_id, doc) not in seen:
                    seen.add((query_id, doc))
                    ordered.append((query_id, doc))
        return ordered

    def is_judged(self, query_id: str, doc: DocId) -> bool:
        return doc in self.judgments.get(query_id, {})

    def record(self, query_id: str, doc: DocId, grade: int) -> None:
        """Save one answer: append it to the journal (fsynced), then rewrite the qrels atomically."""
        if grade not in GRADES:
            raise ValueError(f"grade must be one of {GRADES}")
        if self.is_judged(query_id, doc):
            return  # never overwrite a judgment
        path = journal_path(self.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        keep_on_interrupt(path, JOURNAL_HOLDS)
        with path.open("a", encoding="utf-8") as journal:
            journal.write(json.dumps({"query_id": query_id, "doc_id": doc, "grade": grade}) + "\n")
            journal.flush()
            os.fsync(journal.fileno())
        self.judgments.setdefault(query_id, {})[doc] = grade
        self.answered += 1
        self._write_qrels()

    def _write_qrels(self) -> None:
        order = [query.query_id for query in self.dataset.queries]
        order += sorted(set(self.judgments) - set(order))
        rows = [
            {"query_id": qid, "relevance": dict(self.judgments[qid])}
            for qid in order if qid in self.judgments
        ]
        write_jsonl_atomic(self.out, rows)

    def run(self, ask: Callable[[str], str] = input, show: Callable[[str], None] = print) -> dict[str, int]:
        """Ask for a grade for every unjudged pair; return counts (answered, skipped, left)."""
        pairs = self.pairs()
        total = len(pairs)
        texts = {query.query_id: query.text for query in self.dataset.queries}
        unknown = 0
        quit_early = False
        pending = [(i, qid, doc) for i, (qid, doc) in enumerate(pairs, start=1) if not self.is_judged(qid, doc)]
        show(f"{total - len(pending)} of {total} pairs already judged; {len(pending)} to go. "
             "Answer 0-3, s (skip), q (quit), ? (help).")
        for position, query_id, doc in pending:
            memory = self.dataset.corpus.get(doc)
            if memory is None or query_id not in texts:
                unknown += 1  # the dataset changed since the pool was made
                continue
            show("")
            show(f"[{position}/{total}] query {query_id}")
            show(f"  Q: {texts[query_id]}")
            details = ", ".join(part for part in (memory.category, ",".join(memory.tags)) if part)
            show(f"  memory {doc}" + (f" ({details})" if details else ""))
            show(f"  M: {memory.content}")
            while True:
                try:
                    answer = ask(f"grade {position}/{total} [0-3, s, q, ?]: ").strip().lower()
                except EOFError:
                    answer = "q"
                if answer in {str(g) for g in GRADES}:
                    self.record(query_id, doc, int(answer))
                    break
                if answer == "s":
                    self.skipped += 1
                    break
                if answer == "q":
                    quit_early = True
                    break
                if answer == "?":
                    show(HELP)
                else:
                    show("Please answer 0, 1, 2, 3, s, q or ?.")
            if quit_early:
                break
        left = sum(1 for qid, doc in pairs if not self.is_judged(qid, doc))
        counts = {"answered": self.answered, "skipped": self.skipped, "left": left,
                  "total": total, "not_in_dataset": unknown}
        show("")
        show(f"Saved {self.answered} new judgments to {self.out}; {left} of {total} pairs still unjudged"
             + (f" ({unknown} not in the dataset)" if unknown else "") + ".")
        return counts


def judge(pool_path: str | Path, dataset_path: str | Path, out: str | Path,
          ask: Callable[[str], str] = input, show: Callable[[str], None] = print) -> dict[str, int]:
    """`recall-kit judge`: open (or resume) a session over the pool and run it."""
    return JudgeSession.open(pool_path, dataset_path, out).run(ask=ask, show=show)


# -- judging with a registered judge (a model) ---------------------------------------------------


def build_judge(name: str | None, options: Mapping[str, Mapping[str, Any]] | None = None,
                model: str | None = None, allow_remote: bool = False,
                concurrency: int | None = None) -> RelevanceJudge:
    """The judge registered as `name` (None: the only one registered), its options from
    `options[name]` (strings, from `-o NAME.KEY=VALUE`), with `--model`, `--allow-remote` and
    `--concurrency` filled into its `model` / `allow_remote` / `concurrency` fields."""
    from recall_kit.registry import judges

    if name is None:
        name = _judge_for_model(judges.names(), model)
    others = sorted(set(options or {}) - {name})
    if others:
        raise OptionError(f"Options for {', '.join(others)} given, but the judge is {name!r} (-o {name}.KEY=VALUE).")
    raw = dict((options or {}).get(name) or {})
    fields = {item.name for item in dataclasses.fields(judges.get(name).obj.Options)} \
        if dataclasses.is_dataclass(judges.get(name).obj.Options) else set()
    for flag, key, value in (("--model", "model", model), ("--allow-remote", "allow_remote", allow_remote or None),
                             ("--concurrency", "concurrency", concurrency)):
        if value is None:
            continue
        if key not in fields:
            raise OptionError(f"Judge {name!r} takes no {flag}.")
        raw[key] = value
    return judges.create(name, raw)  # type: ignore[no-any-return]


def _judge_for_model(names: list[str], model: str | None) -> str:
    """The judge `--model` goes to when no `--judge` is named: the only registered one that takes a model."""
    from recall_kit.registry import judges

    def takes_model(name: str) -> bool:
        options = judges.get(name).obj.Options
        return dataclasses.is_dataclass(options) and "model" in {item.name for item in dataclasses.fields(options)}

    with_model = [name for name in names if takes_model(name)] if model is not None else names
    if not with_model:
        raise OptionError("No judge that takes --model is registered: install one (pip install recall-kit-llm, "
                          "or plugins/recall-kit-llm from a checkout), or name one with --judge NAME "
                          f"({', '.join(names) or 'none registered'}).")
    if len(with_model) > 1:
        raise OptionError(f"Several judges are registered ({', '.join(with_model)}): choose one with --judge NAME.")
    return with_model[0]


def _fit(judge: RelevanceJudge, context: JudgingContext | None) -> None:
    """Fit a judge that learns on `context`; refuse one without labels to learn from."""
    if not judge.learns:
        return
    if context is None:
        raise OptionError(f"The {judge.provenance().get('judge', 'chosen')} judge learns from labelled pairs: "
                          "measure it with --calibrate, or give it labels (a study's [judging]).")
    judge.fit(context)


def _grades_so_far(out: Path, journal: Path) -> tuple[Qrels, set[str]]:
    """The grades `out` and its journal hold (an interrupted run's included), and the queries the
    judge graded: its rows carry its provenance, others are kept as found."""
    repair_journal(journal)
    grades: Qrels = {qid: dict(found) for qid, found in read_qrels_file(out).items()}
    graded_here: set[str] = set()
    for qid, doc, grade in read_journal(journal):
        grades.setdefault(qid, {}).setdefault(doc, grade)
        graded_here.add(qid)
    return grades, graded_here


def judge_with(judge: RelevanceJudge, pool_path: str | Path, dataset_path: str | Path, out: str | Path,
               show: Callable[[str], None] = print, context: JudgingContext | None = None) -> dict[str, int]:
    """`recall-kit judge --model`: grade every pair of the pool that `out` (and its journal) does
    not hold yet with `judge`, each grade appended to the journal as it comes (fsynced at least
    once a second and at the end: a machine crash loses at most the last second's grades, which
    a rerun asks for again), the qrels file
    rewritten atomically (every 50 grades and at the end). `out` holds the judge's grades only
    (not the dataset's qrels), so `recall-kit agreement` compares judges on the pool alone.

    `judge.prepare()` runs before anything is written: an unknown model or a missing key leaves
    no file, and so does a judge that gives no usable answer at all (`PluginRunError`). A judge
    that learns (`judge.learns`) is fitted on `context` first, and refused without one. Returns
    counts: graded, skipped (no usable answer), left, total, not_in_dataset."""
    from recall_kit.fileio import check_outputs

    out = Path(out)
    check_outputs({"--out": out, "journal": journal_path(out)}, inputs={"pool": pool_path})
    judge.prepare()
    _fit(judge, context)
    dataset = load_dataset(dataset_path)
    pool = read_pool(pool_path)
    journal = journal_path(out)
    grades, graded_here = _grades_so_far(out, journal)
    provenance = {key if key.startswith("_") else f"_{key}": value for key, value in judge.provenance().items()}
    queries = {query.query_id: query for query in dataset.queries}
    pairs = list(dict.fromkeys((qid, doc) for qid, docs in pool for doc in docs))

    def write() -> None:
        order = [query.query_id for query in dataset.queries]
        order += sorted(set(grades) - set(order))
        write_jsonl_atomic(out, [{"query_id": qid, "relevance": dict(grades[qid]),
                                  **(provenance if qid in graded_here else {})}
                                 for qid in order if grades.get(qid)])

    counts = {"graded": 0, "skipped": 0, "left": 0, "total": len(pairs), "not_in_dataset": 0}
    pending = [(qid, doc) for qid, doc in pairs if doc not in grades.get(qid, {})]
    show(f"{len(pairs) - len(pending)} of {len(pairs)} pairs already judged; {len(pending)} to go.")
    journal.parent.mkdir(parents=True, exist_ok=True)  # check_outputs said it would be created
    keep_on_interrupt(journal, JOURNAL_HOLDS)
    memories = {doc: memory for _, doc in pending if (memory := dataset.corpus.get(doc)) is not None}
    known = [(qid, doc) for qid, doc in pending if qid in queries and doc in memories]
    counts["not_in_dataset"] = len(pending) - len(known)
    # The judge may grade concurrently; grades come back in pool order, so the files written are
    # the same at any concurrency.
    graded = judge.grade_many([(queries[qid], memories[doc]) for qid, doc in known])
    _record(zip(known, graded, strict=True), len(known), journal, grades, graded_here, counts, write)
    if counts["skipped"] and not counts["graded"]:  # a model that answers nothing usable is a failure
        if journal.exists() and journal.stat().st_size == 0:  # opened by this run, nothing in it
            journal.unlink()
        raise PluginRunError(f"The judge gave no usable answer for any of the {counts['skipped']} pairs it was "
                             f"asked (check the model); {out} was not written.")
    write()
    counts["left"] = sum(1 for qid, doc in pairs if doc not in grades.get(qid, {}))
    show(f"Saved {counts['graded']} new grades to {out}; {counts['left']} of {len(pairs)} pairs unjudged"
         + (f" ({counts['skipped']} without a usable answer: run again to retry them)" if counts["skipped"] else "")
         + ".")
    return counts


def _record(answers: Iterable[tuple[tuple[str, str], int | None]], total: int, journal: Path,
            grades: dict[str, dict[str, int]], graded_here: set[str], counts: dict[str, int],
            write: Callable[[], None]) -> None:
    """Each of `total` answers as it comes (not before: a judge may grade as it goes): appended to the journal (in the OS at once, on disk within a
    second), kept in `grades`, counted; the qrels file rewritten every 50 grades (`write`)."""
    from recall_kit.progress import progress_bar

    synced = time.monotonic()
    with progress_bar(total, "judge: grading pairs") as advance, journal.open("a", encoding="utf-8") as handle:
        for (qid, doc), answer in answers:
            advance(1)
            if answer is None:
                counts["skipped"] += 1
                continue
            if answer not in GRADES:
                raise PluginRunError(f"Judge returned grade {answer!r} for query {qid}, id {doc}; grades are 0-3.")
            handle.write(json.dumps({"query_id": qid, "doc_id": doc, "grade": answer}) + "\n")
            handle.flush()  # in the OS at once; on disk within a second (an fsync a grade would
            if time.monotonic() - synced >= 1.0:  # bound a fast judge to the disk's pace)
                os.fsync(handle.fileno())
                synced = time.monotonic()
            grades.setdefault(qid, {})[doc] = answer
            graded_here.add(qid)
            counts["graded"] += 1
            if counts["graded"] % 50 == 0:
                write()
        handle.flush()
        os.fsync(handle.fileno())

