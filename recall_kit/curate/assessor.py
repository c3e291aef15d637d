"""One assessor's grades: a qrels JSONL file (one row per query) with the assessor and the time of
each grade, rewritten atomically after every grade, so a closed tab or a Ctrl-C loses nothing.

A file opened for writing (`AssessorFile.open_for_writing`) is locked (`.NAME.lock` beside it) so
that two label servers never write one file; inside a study folder it is never written through a
link (the study folder's rule)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError, OptionError, OutputError
from recall_kit.locking import HeldLock, take_lock

#: Grades an assessor gives (0 not relevant ... 3 highly relevant), as the qrels read them.
GRADES = (0, 1, 2, 3)
_ASSESSOR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_assessor(name: str) -> str:
    """An assessor's name: letters, digits, '.', '_', '-' (it names their file)."""
    if not _ASSESSOR.match(name or ""):
        raise OptionError(f"--assessor {name!r}: use letters, digits, '.', '_' or '-' (it names the file).")
    return name


def screen_grades(path: Path, grades: dict[str, dict[str, int]], known: Collection[str],
                  sensitive: Collection[str], where: str = "the study's corpus") -> int:
    """A grades file's grades checked against the memories they may name, in place: a grade of a
    memory dropped as sensitive is dropped (how many is returned, for one line saying so); an id
    neither known nor sensitive is refused, naming the file and the line of its query's row."""
    dropped = 0
    for query, judged in list(grades.items()):
        unknown = sorted(doc for doc in judged if doc not in known and doc not in sensitive)
        if unknown:
            raise DatasetError(f"{path}:{_line_of(path, query)}: id {unknown[0][:40]!r} (query {query[:40]!r}) is "
                               f"not in {where}; remove the grade, or label with this study's `recall-kit label`.")
        gone = [doc for doc in judged if doc in sensitive]
        for doc in gone:
            del judged[doc]
        dropped += len(gone)
        if not judged:
            del grades[query]
    return dropped


def outside_queries(grades: dict[str, dict[str, int]], queries: Collection[str]) -> int:
    """How many of a grades file's grades are of queries not in `queries` (they weigh in nothing)."""
    return sum(len(judged) for query, judged in grades.items() if query not in queries)


def doubts(name: str, regraded: int, outside: int, where: str = "the study") -> str | None:
    """One line saying what a grades file holds that is not used as written (None when nothing):
    pairs graded in two of its rows (the later row's grade is used) and grades of queries not in
    `where`. Counts only: no id, no text."""
    parts = []
    if regraded:
        parts.append(f"{regraded} pair(s) graded twice (in two rows of the file: the later row's grade is used)")
    if outside:
        parts.append(f"{outside} grade(s) of queries not in {where} (left out)")
    return f"{name}: " + "; ".join(parts) + "." if parts else None


def _line_of(path: Path, query: str) -> int:
    """The line of a grades file that holds `query`'s row (0 when none does)."""
    from recall_kit.dataset import read_jsonl

    return next((number for number, row in read_jsonl(path)
                 if isinstance(row, dict) and str(row.get("query_id")) == query), 0)


@dataclass
class AssessorFile:
    """The grades one assessor gave: query id -> id -> grade, and when each was given."""

    path: Path
    assessor: str
    grades: dict[str, dict[str, int]] = field(default_factory=dict)
    times: dict[str, dict[str, str]] = field(default_factory=dict)
    #: The assessor's own words on a pair, and the pairs they flagged (a doubt, a broken memory).
    notes: dict[str, dict[str, str]] = field(default_factory=dict)
    flagged: dict[str, list[str]] = field(default_factory=dict)
    #: Pairs graded in two rows of the file (the later row's grade kept): counted, said by the callers.
    regraded: int = 0
    #: Whether a link at `path` is written through (a path the user typed) or replaced (a study's own).
    follow_links: bool = True
    lock: HeldLock | None = None

    @classmethod
    def open(cls, path: str | Path, assessor: str) -> AssessorFile:
        """Read the file when it exists (resuming), else start empty; a file of another assessor is refused."""
        from recall_kit.dataset import read_jsonl

        found = cls(Path(path), check_assessor(assessor))
        if not found.path.exists():
            return found
        for number, row in read_jsonl(found.path):
            found._take(f"{found.path.name}:{number}", row)
        return found

    def _take(self, where: str, row: object) -> None:
        """One row of the file, checked: this assessor's, a relevance map of grades 0-3, its times."""
        if not isinstance(row, dict):
            raise DatasetError(f'{where}: expected {{"query_id": ..., "relevance": {{...}}}}')
        owner = row.get("assessor")
        if owner != self.assessor:
            raise DatasetError(f"{where}: graded by {str(owner)[:64]!r}, not {self.assessor!r}; "
                               "each assessor has a file of their own.")
        relevance = row.get("relevance")
        if not isinstance(relevance, dict) or "query_id" not in row:
            raise DatasetError(f'{where}: expected {{"query_id": ..., "relevance": {{...}}}}')
        if isinstance(row["query_id"], bool) or not isinstance(row["query_id"], (str, int)):
            raise DatasetError(f'{where}: "query_id" is {type(row["query_id"]).__name__}, not an id (text or a whole number)')
        times = row.get("judged_at") or {}
        if not isinstance(times, dict):
            raise DatasetError(f'{where}: "judged_at" is not an object of id -> time')
        query = str(row["query_id"])
        for doc, grade in relevance.items():
            if isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES:
                shown = "a number" if isinstance(grade, int) and abs(grade) > 10**6 else repr(grade)[:20]
                raise DatasetError(f"{where}: grade of id {str(doc)[:40]!r} is {shown}, not one of "
                                   f"{', '.join(map(str, GRADES))}")
            judged = self.grades.setdefault(query, {})
            self.regraded += str(doc) in judged
            judged[str(doc)] = grade
        self.times[query] = {str(doc): str(value)[:64] for doc, value in times.items()}
        notes, flagged = row.get("notes") or {}, row.get("flagged") or []
        if not isinstance(notes, dict) or not isinstance(flagged, list):
            raise DatasetError(f'{where}: "notes" is not an object of id -> text, or "flagged" not a list of ids')
        self.notes[query] = {str(doc): str(value) for doc, value in notes.items()}
        self.flagged[query] = [str(doc) for doc in flagged]

    @classmethod
    def open_for_writing(cls, path: str | Path, assessor: str, inside: Path | None = None) -> AssessorFile:
        """`open`, holding the file's lock until `close` (a second writer is refused, naming the
        holder); with `inside` (the study folder it lies in) a link on its way is refused and the
        file, when written, replaces a link rather than writing through it."""
        target = Path(path)
        if inside is not None:
            _refuse_links(target, inside)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise OutputError(f"{target}: cannot write ({error.strerror or type(error).__name__}).") from None
        lock = take_lock(target.with_name(f".{target.name}.lock"), lambda holder: OutputError(
            f"{target}: another label server ({holder}) is writing this assessor's grades; use its page, "
            "or stop it first." if holder != "a link" else f"{target}: its lock file is a link; remove it."))
        try:
            found = cls.open(target, assessor)
        except BaseException:
            lock.release()
            raise
        found.lock, found.follow_links = lock, inside is None
        return found

    def close(self) -> None:
        """Release the lock `open_for_writing` took (nothing when there is none)."""
        if self.lock is not None:
            self.lock.release()

    def grade(self, query: str, doc: str, grade: int) -> None:
        """Record one grade (replacing an earlier one of the same pair) and write the file whole."""
        with self._kept_only_when_written(query):
            self.grades.setdefault(query, {})[doc] = int(grade)
            self.times.setdefault(query, {})[doc] = datetime.now(UTC).isoformat(timespec="seconds")

    def note(self, query: str, doc: str, text: str, flagged: bool) -> None:
        """Keep the assessor's note on a pair (an empty one removes it) and whether it is flagged; a
        note that is not text (a lone surrogate, which UTF-8 cannot hold) is refused."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise OptionError("the note is not text: it holds a lone surrogate (\\ud800-\\udfff)") from None
        with self._kept_only_when_written(query):
            notes = self.notes.setdefault(query, {})
            if text:
                notes[doc] = text
            else:
                notes.pop(doc, None)
            marks = [d for d in self.flagged.get(query, []) if d != doc]
            self.flagged[query] = marks + [doc] if flagged else marks

    @contextmanager
    def _kept_only_when_written(self, query: str) -> Iterator[None]:
        """Change `query`'s row in the block, then write the file; when the write fails the row is put
        back as it was, so what the page counts is what the file holds."""
        tables: tuple[dict[str, Any], ...] = (self.grades, self.times, self.notes, self.flagged)
        before = [deepcopy(table.get(query)) for table in tables]
        try:
            yield
            self.save()
        except BaseException:
            for table, kept in zip(tables, before, strict=True):
                if kept is None:
                    table.pop(query, None)
                else:
                    table[query] = kept
            raise

    def save(self) -> None:
        from recall_kit.fileio import write_jsonl_atomic

        queries = dict.fromkeys([*self.grades, *(q for q, n in self.notes.items() if n),
                                 *(q for q, f in self.flagged.items() if f)])
        write_jsonl_atomic(self.path, follow_links=self.follow_links, rows=(self._row(query) for query in queries))

    def _row(self, query: str) -> dict[str, object]:
        row: dict[str, object] = {"query_id": query, "relevance": self.grades.get(query, {}),
                                  "assessor": self.assessor, "judged_at": self.times.get(query, {})}
        if self.notes.get(query):
            row["notes"] = self.notes[query]
        if self.flagged.get(query):
            row["flagged"] = self.flagged[query]
        return row

    def __len__(self) -> int:
        return sum(len(grades) for grades in self.grades.values())

    def has(self, query: str, doc: str) -> bool:
        return doc in self.grades.get(query, {})


def _refuse_links(path: Path, inside: Path) -> None:
    """Refuse `path` (under the study folder `inside`) when it, or a folder between, is a link:
    nothing is written through a link out of a study folder."""
    relative = path.relative_to(inside) if path.is_relative_to(inside) else Path(path.name)
    step = inside
    for part in relative.parts:
        step = step / part
        if step.is_symlink():
            raise OutputError(f"{step}: is a link; a study folder's files are never written through a link: "
                              "remove it (or give --out PATH).")
