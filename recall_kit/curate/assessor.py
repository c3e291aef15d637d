"""One assessor's grades: a qrels JSONL file (one row per query) with the assessor and the time of
each grade, rewritten atomically after every grade, so a closed tab or a Ctrl-C loses nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from recall_kit.errors import DatasetError, OptionError

_ASSESSOR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_assessor(name: str) -> str:
    """An assessor's name: letters, digits, '.', '_', '-' (it names their file)."""
    if not _ASSESSOR.match(name or ""):
        raise OptionError(f"--assessor {name!r}: use letters, digits, '.', '_' or '-' (it names the file).")
    return name


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

    @classmethod
    def open(cls, path: str | Path, assessor: str) -> AssessorFile:
        """Read the file when it exists (resuming), else start empty; a file of another assessor is refused."""
        from recall_kit.dataset import read_jsonl

        found = cls(Path(path), check_assessor(assessor))
        if not found.path.exists():
            return found
        for number, row in read_jsonl(found.path):
            owner = row.get("assessor")
            if owner != assessor:
                raise DatasetError(f"{found.path.name}:{number}: graded by {owner!r}, not {assessor!r}; "
                                   "each assessor has a file of their own.")
            relevance = row.get("relevance")
            if not isinstance(relevance, dict) or "query_id" not in row:
                raise DatasetError(f'{found.path.name}:{number}: expected {{"query_id": ..., "relevance": {{...}}}}')
            query = str(row["query_id"])
            for doc, grade in relevance.items():
                if isinstance(grade, bool) or not isinstance(grade, int):
                    raise DatasetError(f"{found.path.name}:{number}: grade of id {str(doc)[:40]!r} is not a whole number")
                found.grades.setdefault(query, {})[str(doc)] = grade
            times = row.get("judged_at") or {}
            found.times[query] = {str(doc): str(value) for doc, value in times.items()}
            found.notes[query] = {str(doc): str(value) for doc, value in (row.get("notes") or {}).items()}
            found.flagged[query] = [str(doc) for doc in row.get("flagged") or []]
        return found

    def grade(self, query: str, doc: str, grade: int) -> None:
        """Record one grade (replacing an earlier one of the same pair) and write the file whole."""
        self.grades.setdefault(query, {})[doc] = int(grade)
        self.times.setdefault(query, {})[doc] = datetime.now(UTC).isoformat(timespec="seconds")
        self.save()

    def note(self, query: str, doc: str, text: str, flagged: bool) -> None:
        """Keep the assessor's note on a pair (an empty one removes it) and whether it is flagged."""
        notes = self.notes.setdefault(query, {})
        if text:
            notes[doc] = text
        else:
            notes.pop(doc, None)
        marks = [d for d in self.flagged.get(query, []) if d != doc]
        self.flagged[query] = marks + [doc] if flagged else marks
        self.save()

    def save(self) -> None:
        from recall_kit.fileio import write_jsonl_atomic

        self.path.parent.mkdir(parents=True, exist_ok=True)
        queries = dict.fromkeys([*self.grades, *(q for q, n in self.notes.items() if n),
                                 *(q for q, f in self.flagged.items() if f)])
        write_jsonl_atomic(self.path, (self._row(query) for query in queries))

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
