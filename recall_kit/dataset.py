"""Loading, validating, fingerprinting and describing a dataset folder (corpus, queries, qrels)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError, OptionError
from recall_kit.fileio import is_special_file
from recall_kit.fingerprint import canonical_json
from recall_kit.types import Corpus, Memory, Qrels, Query

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FILE = "qrels.jsonl"
#: Optional: ids of sensitive memories a live system may hold (one a line, `#` comments), beside
#: those corpus.jsonl flags `is_sensitive`. Only ids: the text never enters the dataset.
SENSITIVE_IDS_FILE = "sensitive_ids.txt"

_MEMORY_FIELDS = {
    "id", "content", "category", "tags", "expanded_keywords", "importance", "scope",
    "parent_id", "created_at", "is_sensitive",
}
_QUERY_FIELDS = {"query_id", "text", "stratum", "scope"}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a dataset, located as `file:line` (line 0: the file as a whole)."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"


@dataclass
class Dataset:
    """A loaded, validated dataset. Sensitive memories are already gone."""

    path: Path
    corpus: Corpus
    queries: list[Query]
    qrels: Qrels
    dropped_sensitive: int = 0
    warnings: list[str] = field(default_factory=list)
    #: Ids of the sensitive memories: those dropped from corpus.jsonl and those listed in
    #: sensitive_ids.txt. A live system that returns one surfaces a sensitive memory.
    sensitive_ids: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def strata(self) -> list[str]:
        return sorted({query.stratum for query in self.queries})

    @property
    def has_scopes(self) -> bool:
        return any(memory.scope is not None for memory in self.corpus)

    @property
    def has_parents(self) -> bool:
        return any(memory.parent_id is not None for memory in self.corpus)

    @property
    def fingerprint(self) -> str:
        """sha256 over the corpus fingerprint, the queries and the qrels, canonically encoded."""
        digest = hashlib.sha256(self.corpus.fingerprint.encode())
        for query in sorted(self.queries, key=lambda q: q.query_id):
            digest.update(canonical_json([query.query_id, query.text, query.stratum, query.scope]))
        for query_id in sorted(self.qrels):
            digest.update(canonical_json([query_id, sorted(self.qrels[query_id].items())]))
        return digest.hexdigest()


def _read_jsonl(path: Path, problems: list[Problem]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; record malformed lines as problems."""
    name = path.name
    if is_special_file(path):  # a named pipe would block for ever
        problems.append(Problem(name, 0, "not a regular file (a named pipe or a device)"))
        return
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        if path.is_symlink():  # the name is there: what it points at is not
            problems.append(Problem(name, 0, f"a link to {path.readlink()}, which does not exist (a dangling "
                                             "link: remove it, or restore what it points at)"))
        else:
            problems.append(Problem(name, 0, f"missing (expected {path})"))
        return
    except OSError as error:
        problems.append(Problem(name, 0, f"cannot be read ({error.strerror})"))
        return
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as error:
                    problems.append(Problem(name, number, f"not valid JSON ({error.msg})"))
                    continue
                except RecursionError:
                    problems.append(Problem(name, number, "not valid JSON (nested too deeply)"))
                    continue
                except ValueError as error:  # an integer of more than 4300 digits
                    problems.append(Problem(name, number, f"not valid JSON ({str(error).split(';')[0]})"))
                    continue
                if not isinstance(value, dict):
                    problems.append(Problem(name, number, "expected a JSON object"))
                    continue
                if _SURROGATE_ESCAPE.search(line) and has_lone_surrogate(value):
                    problems.append(Problem(name, number, "holds a lone surrogate escape (\\ud800-\\udfff): not text"))
                    continue
                yield number, value
        except UnicodeDecodeError as error:
            problems.append(Problem(name, _line_of_byte(path, error), "not UTF-8 text"))


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def has_lone_surrogate(value: Any) -> bool:
    """True when a decoded JSON value holds a string that is not encodable text (a lone surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _line_of_byte(path: Path, error: UnicodeDecodeError) -> int:
    """The 1-based line of the first byte that is not UTF-8 (0 when it cannot be found)."""
    try:
        with path.open("rb") as stream:
            for number, raw in enumerate(stream, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return number
    except OSError:
        pass
    return 0


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line of a JSONL file; the first malformed line (or a
    missing file) raises DatasetError naming file and line."""
    problems: list[Problem] = []
    for number, row in _read_jsonl(Path(path), problems):
        if problems:
            raise DatasetError(str(problems[0]))
        yield number, row
    if problems:
        raise DatasetError(str(problems[0]))


#: Grades are integers in this range: wider ones overflow the metrics' integer arrays.
MIN_GRADE, MAX_GRADE = -1000, 1000
#: Ids are at most this many characters: an id is a key, not a document.
MAX_ID_LENGTH = 512
_ID_INT_BOUND = 10**MAX_ID_LENGTH


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_SENSITIVE_TRUE = {"1", "true", "yes", "y", "t", "on"}
_SENSITIVE_FALSE = {"0", "false", "no", "n", "f", "off", ""}


def sensitive_flag(value: Any) -> bool | None:
    """`is_sensitive` in any spelling a store writes (JSON true, SQLite's 1, "true", "yes", "on",
    any case), or None when it cannot be read (the row must then not be indexed)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return value != 0
    if isinstance(value, float):
        return None if math.isnan(value) else value != 0
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _SENSITIVE_TRUE:
            return True
        if text in _SENSITIVE_FALSE:
            return False
    return None


def shown_flag(value: Any) -> str:
    """A sensitive flag that cannot be read, as an error shows it: a short value itself ('maybe'),
    anything longer (it may be text) by its type alone."""
    short = isinstance(value, (int, float)) or (isinstance(value, str) and len(value) <= 12)
    return repr(value) if short else type(value).__name__


def as_id(value: Any) -> str | None:
    """An id as a string, or None when it is not an integer or a non-empty one-line string of at
    most MAX_ID_LENGTH characters (a bool is not an id; a line break, tab or NUL would break TREC
    files and reports)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value) if -_ID_INT_BOUND < value < _ID_INT_BOUND else None
    if isinstance(value, str) and value.strip() and len(value) <= MAX_ID_LENGTH and value.isprintable():
        return value
    return None


def _optional_text(row: dict[str, Any], key: str, where: Problem, problems: list[Problem]) -> str | None:
    value = row.get(key)
    if value is None:
        return None
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    problems.append(Problem(where.file, where.line, f'"{key}" must be text'))
    return None


def _finite_number(value: Any) -> float | None:
    """`value` as a finite float, or None (a bool, text, NaN, ±inf, or an int like 10**400 that
    no float holds: math.isfinite raised OverflowError on it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def parse_memory(number: int, row: dict[str, Any], problems: list[Problem]) -> Memory | None:
    """corpus.jsonl's line `number` as a Memory; None, with each fault added to `problems`, when the
    row is not one (the loader's own row check, which `study` runs on the user's file too)."""
    here = Problem(CORPUS_FILE, number, "")
    memory_id = as_id(row.get("id"))
    if memory_id is None:
        problems.append(Problem(CORPUS_FILE, number, f'missing or bad "id" (an integer, or text on one line of at most {MAX_ID_LENGTH} characters)'))
        return None
    content = row.get("content")
    if not isinstance(content, str):
        what = "missing" if content is None else "must be text"
        problems.append(Problem(CORPUS_FILE, number, f'"content" {what} (memory {memory_id})'))
        return None
    tags_value = row.get("tags") or ""
    if isinstance(tags_value, str):
        tags = tuple(tag.strip() for tag in tags_value.split(",") if tag.strip())
    elif isinstance(tags_value, list) and all(isinstance(tag, str) for tag in tags_value):
        tags = tuple(tag.strip() for tag in tags_value if tag.strip())
    else:
        problems.append(Problem(CORPUS_FILE, number, '"tags" must be "a,b" text or a list of text'))
        tags = ()
    importance = row.get("importance")
    if importance is not None and _finite_number(importance) is None:
        problems.append(Problem(CORPUS_FILE, number, '"importance" must be a finite number'))
        importance = None
    parent = row.get("parent_id")
    parent_id = as_id(parent) if parent is not None else None
    if parent is not None and parent_id is None:
        problems.append(Problem(CORPUS_FILE, number, '"parent_id" must be an integer or text'))
    extra = {k: v for k, v in row.items() if k not in _MEMORY_FIELDS and not k.startswith("_")}
    return Memory(
        id=memory_id,
        content=content,
        category=_optional_text(row, "category", here, problems) or "",
        tags=tags,
        expanded_keywords=_optional_text(row, "expanded_keywords", here, problems) or "",
        importance=float(importance) if importance is not None else None,
        scope=_optional_text(row, "scope", here, problems),
        parent_id=parent_id,
        created_at=_optional_text(row, "created_at", here, problems),
        extra=extra,
    )


def parse_grade(value: Any) -> int | None:
    """A JSON grade as an int: a JSON number that is whole (2, 2.0); else None. `true` and
    `"2"` are not grades: a bool or a string in a grade's place is a mistake in the file (a
    column shifted, a label written for a number), never read as a number (issue 37)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _shown_grade(written: Any, parsed: int) -> str:
    """A grade out of range as the file wrote it: 1e300 as "1e+300", never as its 301 digits; a long
    integer by its length."""
    if isinstance(written, float):
        return repr(written)
    text = str(parsed)
    return text if len(text) <= 12 else f"of {len(text.lstrip('-'))} digits"


def _parse_judgments(number: int, row: dict[str, Any], problems: list[Problem],
                     file: str = QRELS_FILE) -> dict[str, int] | None:
    """A qrels row's judgments {id: grade}, or None with a problem on line `number` of `file`."""
    if "relevance" in row:
        relevance = row["relevance"]
        if not isinstance(relevance, dict):
            problems.append(Problem(file, number, '"relevance" must be an object {"id": grade}'))
            return None
        judgments = {}
        for doc_id, grade in relevance.items():
            if as_id(doc_id) is None:
                problems.append(Problem(file, number, f"bad id {_short(doc_id)} in relevance"))
                return None
            parsed = parse_grade(grade)
            if parsed is None:
                problems.append(Problem(file, number, f"grade for id {doc_id} must be an integer"))
                return None
            if not MIN_GRADE <= parsed <= MAX_GRADE:
                problems.append(Problem(file, number, f"grade {_shown_grade(grade, parsed)} for id {doc_id} "
                                        f"is outside {MIN_GRADE}..{MAX_GRADE}"))
                return None
            judgments[str(doc_id)] = parsed
        return judgments
    if "relevant_ids" in row:
        ids = row["relevant_ids"]
        if not isinstance(ids, list):
            problems.append(Problem(file, number, '"relevant_ids" must be a list of ids'))
            return None
        judgments = {}
        for value in ids:
            doc_id = as_id(value)
            if doc_id is None:
                problems.append(Problem(file, number, f"bad id {_short(value)} in relevant_ids"))
                return None
            judgments[doc_id] = 1
        return judgments
    problems.append(Problem(file, number, 'missing "relevant_ids" or "relevance"'))
    return None


#: `--dataset example:NAME` names a dataset shipped inside the package (recall_kit/examples/NAME).
EXAMPLE_PREFIX = "example:"


def example_datasets() -> dict[str, Path]:
    """The example datasets shipped with recall-kit, by name (`memories`)."""
    root = Path(__file__).resolve().parent / "examples"
    if not root.is_dir():
        return {}
    return {folder.name: folder for folder in sorted(root.iterdir()) if (folder / CORPUS_FILE).is_file()}


def dataset_folder(path: str | Path) -> Path:
    """The folder a dataset argument names: a path, or `example:NAME` for a shipped example
    (a folder that exists under that very name wins). An unknown example raises DatasetError."""
    text = str(path)
    if not text.startswith(EXAMPLE_PREFIX) or Path(text).exists():
        return Path(path)
    name = text.removeprefix(EXAMPLE_PREFIX)
    examples = example_datasets()
    if name not in examples:
        listing = ", ".join(EXAMPLE_PREFIX + known for known in examples) or "(none shipped)"
        raise DatasetError(f"{text}: no such example dataset (available: {listing}).")
    return examples[name]


def is_example(path: str | Path) -> bool:
    """True when `path` is a shipped example (read-only: copy it with `recall-kit dataset example`)."""
    try:
        folder = dataset_folder(path).resolve()
    except DatasetError:
        return False
    return folder in {example.resolve() for example in example_datasets().values()}


def _read_corpus(root: Path, problems: list[Problem]) -> tuple[list[Memory], set[str]]:
    """corpus.jsonl's memories (in file order, duplicates and bad lines left out, each a problem) and
    the ids of the sensitive ones, which are never indexed."""
    memories: list[Memory] = []
    memory_lines: dict[str, int] = {}
    sensitive: set[str] = set()
    for number, row in _read_jsonl(root / CORPUS_FILE, problems):
        flag = sensitive_flag(row.get("is_sensitive"))
        if flag is not False:  # sensitive, or a flag that cannot be read: never indexed
            memory_id = as_id(row.get("id"))
            if memory_id is not None:
                sensitive.add(memory_id)
            if flag is None:
                problems.append(Problem(CORPUS_FILE, number,
                                        f"is_sensitive {shown_flag(row.get('is_sensitive'))} is not true or false"))
            continue
        memory = parse_memory(number, row, problems)
        if memory is None:
            continue
        if memory.id in memory_lines:
            problems.append(
                Problem(CORPUS_FILE, number, f"duplicate id {memory.id} (first on line {memory_lines[memory.id]})")
            )
            continue
        memory_lines[memory.id] = number
        memories.append(memory)
    return memories, sensitive


def read_queries(root: Path, problems: list[Problem]) -> tuple[list[Query], dict[str, int]]:
    """queries.jsonl's queries (bad lines and duplicates left out, each a problem) and each one's line."""
    queries: list[Query] = []
    query_lines: dict[str, int] = {}
    for number, row in _read_jsonl(root / QUERIES_FILE, problems):
        query_id = as_id(row.get("query_id"))
        if query_id is None:
            problems.append(Problem(QUERIES_FILE, number, 'missing or bad "query_id"'))
            continue
        text = row.get("text")
        if not isinstance(text, str):
            what = "missing" if text is None else "must be text"
            problems.append(Problem(QUERIES_FILE, number, f'"text" {what} (query {query_id})'))
            continue
        if query_id in query_lines:
            problems.append(
                Problem(QUERIES_FILE, number, f"duplicate query_id {query_id} (first on line {query_lines[query_id]})")
            )
            continue
        here = Problem(QUERIES_FILE, number, "")
        stratum = _optional_text(row, "stratum", here, problems) or "all"
        query_lines[query_id] = number
        queries.append(Query(query_id, text, stratum, _optional_text(row, "scope", here, problems),
                             _optional_text(row, "answer", here, problems)))
    return queries, query_lines


def read_qrels_jsonl(path: Path) -> Qrels:
    """A qrels.jsonl file on its own, read by the rules a dataset's qrels.jsonl is read by (ids,
    grades as whole JSON numbers in MIN_GRADE..MAX_GRADE, one row per query), without a corpus to
    check the ids against (`recall-kit agreement`). The first problem raises DatasetError naming
    the file and line."""
    problems: list[Problem] = []
    qrels: Qrels = {}
    lines: dict[str, int] = {}
    for number, row in _read_jsonl(path, problems):
        query_id = as_id(row.get("query_id"))
        if query_id is None:
            problems.append(Problem(path.name, number, 'missing or bad "query_id"'))
        elif query_id in lines:
            problems.append(Problem(path.name, number, f"duplicate qrels for {query_id} (first on line {lines[query_id]})"))
        else:
            judgments = _parse_judgments(number, row, problems, path.name)
            if judgments is not None:
                lines[query_id] = number
                qrels[query_id] = judgments
        if problems:
            break
    if problems:
        raise DatasetError(str(problems[0]))
    return qrels


def _read_qrels(
    root: Path,
    problems: list[Problem],
    memories: list[Memory],
    sensitive: set[str],
    queries: list[Query],
    query_lines: dict[str, int],
) -> Qrels:
    """qrels.jsonl's judgments by query id, each checked against the corpus and the queries."""
    qrels: Qrels = {}
    qrels_lines: dict[str, int] = {}
    by_id = {memory.id: memory for memory in memories}
    parents = {memory.parent_id for memory in memories if memory.parent_id is not None}
    query_scope = {query.query_id: query.scope for query in queries}
    for number, row in _read_jsonl(root / QRELS_FILE, problems):
        query_id = as_id(row.get("query_id"))
        if query_id is None:
            problems.append(Problem(QRELS_FILE, number, 'missing or bad "query_id"'))
            continue
        if query_id in qrels_lines:
            problems.append(
                Problem(QRELS_FILE, number, f"duplicate qrels for {query_id} (first on line {qrels_lines[query_id]})")
            )
            continue
        judgments = _parse_judgments(number, row, problems)
        if judgments is None:
            continue
        qrels_lines[query_id] = number
        if query_id not in query_lines:
            problems.append(Problem(QRELS_FILE, number, f"query {query_id} is not in {QUERIES_FILE}"))
        _check_judged_ids(number, query_id, judgments, sensitive, by_id, parents, query_scope, problems)
        qrels[query_id] = judgments
    return qrels


def _check_judged_ids(
    number: int,
    query_id: str,
    judgments: dict[str, int],
    sensitive: set[str],
    by_id: dict[str, Memory],
    parents: set[str],
    query_scope: dict[str, str | None],
    problems: list[Problem],
) -> None:
    """A problem for each id judged on qrels line `number` that is sensitive, not in the corpus,
    or in another scope than the query searches."""
    for doc_id in judgments:
        if doc_id in sensitive:
            problems.append(
                Problem(QRELS_FILE, number, f"id {doc_id} (query {query_id}) is a sensitive memory, dropped at load")
            )
        elif doc_id not in by_id and doc_id not in parents:
            problems.append(Problem(QRELS_FILE, number, f"id {doc_id} (query {query_id}) is not in {CORPUS_FILE}"))
        elif doc_id in by_id and query_scope.get(query_id) is not None:
            scope = by_id[doc_id].scope
            if scope != query_scope[query_id]:
                problems.append(
                    Problem(
                        QRELS_FILE, number,
                        f"id {doc_id} is in scope {scope!r} but query {query_id} searches scope {query_scope[query_id]!r}",
                    )
                )


def _unjudgeable_warnings(queries: list[Query], qrels: Qrels) -> list[str]:
    """A warning naming the queries whose judgments hold no relevant id (they score 0 everywhere)."""
    warnings = []
    unjudgeable = [q.query_id for q in queries if q.query_id in qrels and not any(g >= 1 for g in qrels[q.query_id].values())]
    if unjudgeable:
        warnings.append(
            f"{len(unjudgeable)} queries have no relevant id (grade >= 1) and score 0 on every metric: "
            + ", ".join(unjudgeable[:10]) + (" ..." if len(unjudgeable) > 10 else "")
        )
    return warnings


def _read_sensitive_ids(root: Path, problems: list[Problem]) -> set[str]:
    """The ids in sensitive_ids.txt (absent: none); a line that is not an id is a problem."""
    path = root / SENSITIVE_IDS_FILE
    if not path.exists():
        return set()
    if is_special_file(path):
        problems.append(Problem(SENSITIVE_IDS_FILE, 0, "not a regular file (a named pipe or a device)"))
        return set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        problems.append(Problem(SENSITIVE_IDS_FILE, 0, f"cannot be read ({reason})"))
        return set()
    ids: set[str] = set()
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        memory_id = as_id(text)
        if memory_id is None:
            problems.append(Problem(SENSITIVE_IDS_FILE, number, "not an id"))
            continue
        ids.add(memory_id)
    return ids


def read_dataset(path: str | Path) -> tuple[Dataset | None, list[Problem]]:
    """Read and check a dataset folder (or `example:NAME`); return it (None when unusable) and
    every problem found."""
    problems: list[Problem] = []
    try:
        root = dataset_folder(path)
    except DatasetError as error:
        return None, [Problem(str(path), 0, str(error).removeprefix(f"{path}: "))]
    if not root.is_dir():
        return None, [Problem(str(root), 0, "not a dataset folder (expected corpus.jsonl, queries.jsonl, qrels.jsonl)")]

    memories, sensitive = _read_corpus(root, problems)
    listed = _read_sensitive_ids(root, problems)
    queries, query_lines = read_queries(root, problems)
    qrels = _read_qrels(root, problems, memories, sensitive, queries, query_lines)
    for query in queries:
        if query.query_id not in qrels and (root / QRELS_FILE).exists():
            problems.append(
                Problem(QUERIES_FILE, query_lines[query.query_id], f"query {query.query_id} has no qrels in {QRELS_FILE}")
            )
    if not problems and not memories:
        problems.append(Problem(CORPUS_FILE, 0, "holds no memories"))
    if not problems and not queries:
        problems.append(Problem(QUERIES_FILE, 0, "holds no queries"))

    warnings = _unjudgeable_warnings(queries, qrels)
    dataset = Dataset(
        path=root.resolve(),
        corpus=Corpus(memories),
        queries=queries,
        qrels=qrels,
        dropped_sensitive=len(sensitive),
        warnings=warnings,
        sensitive_ids=frozenset(sensitive | listed),
    )
    return dataset, problems


def load_dataset(path: str | Path) -> Dataset:
    """Load a dataset folder; raise DatasetError (naming file and line) on the first problem."""
    dataset, problems = read_dataset(path)
    if problems:
        more = f" (and {len(problems) - 1} more; see 'recall-kit dataset validate')" if len(problems) > 1 else ""
        raise DatasetError(f"{problems[0]}{more}")
    assert dataset is not None
    return dataset


def summarise(values: Sequence[float], keys: Sequence[str] = ("min", "p50", "mean", "p95", "max")) -> dict[str, float | int]:
    """Named statistics of `values`, each rounded to 4 decimals: `n`, `min`, `max`, `mean`, and
    `pNN` (the NN-th percentile, numpy's linear interpolation). Every value is 0 when `values` is empty."""
    import numpy as np  # here: the plugins that read JSONL through this module load for `--help`

    array = np.asarray(values, dtype=float)
    ordered: list[float] | None = None
    out: dict[str, float | int] = {}
    for key in keys:
        if key == "n":
            out[key] = int(array.size)
        elif not array.size:
            out[key] = 0.0
        elif key.startswith("p"):
            ordered = ordered if ordered is not None else np.sort(array).tolist()
            out[key] = round(percentile(ordered, float(key[1:])), 4)
        else:
            out[key] = round(float(getattr(array, key)()), 4)
    return out


def percentile(ordered: Sequence[float], q: float) -> float:
    """`numpy.percentile(values, q)` (its default, linear interpolation), of `ordered` (the values
    sorted, at least one): the same float64 arithmetic, step for step, so the same number. Not
    numpy's own: its first call imports numpy.ma (15 ms of every command that reports a latency)."""
    import math

    last = len(ordered) - 1
    virtual = last * (q / 100)
    if math.isnan(ordered[last]):  # sorted last: numpy's answer is NaN
        return math.nan
    if virtual >= last:
        return float(ordered[last])
    below = math.floor(virtual)
    gamma = virtual - below
    low, high = float(ordered[below]), float(ordered[below + 1])
    difference = high - low
    return high - difference * (1 - gamma) if gamma >= 0.5 else low + difference * gamma


def split_queries(dataset: Dataset, holdout: float, seed: int) -> tuple[list[str], list[str]]:
    """A seeded split, stratified by stratum: (tuning ids, test ids); `holdout` is the test share.

    Each stratum keeps at least one query on each side when it has two or more.
    """
    if not 0.0 < holdout < 1.0:
        raise OptionError(f"--holdout is the share of queries held out for testing, in (0, 1); got {holdout}.")
    import numpy as np

    rng = np.random.default_rng(seed)
    by_stratum: dict[str, list[str]] = {}
    for query in dataset.queries:
        by_stratum.setdefault(query.stratum, []).append(query.query_id)
    test: set[str] = set()
    for stratum in sorted(by_stratum):
        ids = by_stratum[stratum]
        count = round(len(ids) * holdout)
        if len(ids) >= 2:
            count = min(max(count, 1), len(ids) - 1)
        order = rng.permutation(len(ids))
        test.update(ids[i] for i in order[:count])
    tuning = [q.query_id for q in dataset.queries if q.query_id not in test]
    return tuning, [q.query_id for q in dataset.queries if q.query_id in test]
