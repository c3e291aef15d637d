"""Importer for a memory store's SQLite database, with queries and qrels in recall-kit JSONL."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from recall_kit.curate.importers._writer import Counts, as_id, qrels_row, write_dataset_files
from recall_kit.dataset import MAX_GRADE, MIN_GRADE, SENSITIVE_IDS_FILE, read_jsonl, sensitive_flag, shown_flag
from recall_kit.errors import DatasetError, OptionError
from recall_kit.types import Importer

#: Words that make a column look like a sensitivity flag (`is_sensitive`, `private`, `secret_flag`).
SENSITIVE_WORDS = {"sensitive", "sensitivity", "private", "privacy", "secret", "confidential", "pii",
                   "redact", "redacted", "restricted"}
#: Look-alikes taken as the sensitivity flag without being named: recall-kit's own field name.
SENSITIVE_NAMES = {"is_sensitive", "sensitive"}


def quote_identifier(name: str) -> str:
    """`name` as an SQLite identifier: in double quotes, inner quotes doubled."""
    if "\x00" in name:
        raise OptionError(f"Bad SQL identifier {name!r}.")
    return '"' + name.replace('"', '""') + '"'


def looks_sensitive(column: str) -> bool:
    """Whether a column's name looks like a sensitivity flag (a word of SENSITIVE_WORDS in it)."""
    return any(word in SENSITIVE_WORDS for word in re.split(r"[^a-z0-9]+", column.lower()))


def sensitive_column(source: Path, table: str, columns: list[str], named: str, none: bool) -> tuple[str, str]:
    """The column whose true rows never leave the store, and how it was chosen ("named",
    "detected", "none"). A table with a column that looks sensitive, when the user named none and
    did not say there is none, maps it when it is the only one and is named `is_sensitive` or
    `sensitive`, or holds only values that read as true or false (a `private` of 0s and 1s: taking
    it drops rows, never keeps one); it is otherwise refused in one line naming the columns and the
    two ways on."""
    if named:
        return named, "named"
    if none:
        return "", "none"
    looking = [column for column in columns if looks_sensitive(column)]
    if len(looking) == 1 and (looking[0].lower() in SENSITIVE_NAMES or holds_flags(source, table, looking[0])):
        return looking[0], "detected"
    if looking:
        shown = ", ".join(repr(column) for column in looking)
        what = "columns that look" if len(looking) > 1 else "a column that looks"
        holds = "" if len(looking) > 1 else " and holds values other than true and false"
        raise OptionError(
            f"{source}: table {table!r} has {what} sensitive ({shown}){holds}, and none is named: "
            f"give --sensitive-col {looking[0]} (rows true there never leave the store) or --no-sensitive-col "
            "(in study.toml: sensitive_col = \"COL\" or sensitive_col = \"\")."
        )
    return "", "none"


#: A column with more distinct values than this is no flag.
FLAG_VALUES = 8


def holds_flags(source: Path, table: str, column: str) -> bool:
    """Whether every value of `column` reads as true or false (0/1, "yes", NULL): at most
    FLAG_VALUES distinct values, each one `sensitive_flag` reads (the values of a flag are read,
    never a memory's text)."""
    import sqlite3

    connection = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    try:
        values = connection.execute(f"SELECT DISTINCT {quote_identifier(column)} FROM {quote_identifier(table)} "
                                    f"LIMIT {FLAG_VALUES + 1}").fetchall()
    except sqlite3.Error:
        return False
    finally:
        connection.close()
    return len(values) <= FLAG_VALUES and all(
        sensitive_flag(value.decode("utf-8", "replace") if isinstance(value, bytes) else value) is not None
        for (value,) in values)


def _sensitive(value: Any, column: str, doc_id: str, source: str, table: str) -> bool:
    """A row's sensitivity flag: NULL, 0 and "false" are not sensitive, 1 and "true" are; anything
    else ('maybe') refuses the store, naming the row: an unreadable flag never passes as "not sensitive"."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    flag = sensitive_flag(value)
    if flag is None:
        raise DatasetError(f"{source}: table {table!r} row id {doc_id}: {column} {shown_flag(value)} is not true "
                           "or false; a flag recall-kit cannot read is never taken as \"not sensitive\".")
    return flag


def _tags(value: Any) -> list[str]:
    if value is None:
        return []
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError:
            items = None
        if isinstance(items, list):
            return [str(item).strip() for item in items if str(item).strip()]
    return [tag.strip() for tag in text.split(",") if tag.strip()]


class SqliteImporter(Importer):
    """A memory store's SQLite table, plus queries.jsonl and qrels.jsonl that judge its rows."""

    description = "SQLite memory table (--table, --id-col, --text-col, ...) + --queries/--qrels JSONL"

    @dataclass(frozen=True)
    class Options:
        #: The table holding one memory per row.
        table: str = "memories"
        #: Column of the memory id.
        id_col: str = "id"
        #: Column of the memory text.
        text_col: str = "content"
        #: Column of the category (empty: none).
        category_col: str = ""
        #: Column of the tags, comma-separated or a JSON list (empty: none).
        tags_col: str = ""
        #: Column of the importance, a number (empty: none).
        importance_col: str = ""
        #: Column of the scope, a user or conversation (empty: none).
        scope_col: str = ""
        #: Column of the creation time (empty: none).
        created_at_col: str = ""
        #: Column of the parent document id, for chunks (empty: none).
        parent_col: str = ""
        #: Rows where this column is true (1, "true", "yes") are never exported (empty: detected, see
        #: `sensitive_column`).
        sensitive_col: str = ""
        #: The table has no sensitivity flag, though a column's name looks like one.
        no_sensitive_col: bool = False
        #: recall-kit queries.jsonl for this store (required).
        queries: str = ""
        #: recall-kit qrels.jsonl judging this store's ids (required).
        qrels: str = ""

    def run(self, source: Path, destination: Path) -> dict[str, Any]:
        options = self.options
        if not options.queries or not options.qrels:
            raise OptionError(
                "The sqlite importer needs --queries FILE and --qrels FILE (recall-kit JSONL): "
                "a dataset without queries cannot be scored."
            )
        counts = Counts()
        self._sensitive_ids: set[str] = set()
        memories = self._memories(source, counts)
        mapping = self.mapping
        by_id = {memory["id"]: memory for memory in memories}
        parents = {memory["parent_id"] for memory in memories if "parent_id" in memory}
        sensitive = self._sensitive_ids
        queries: dict[str, dict[str, Any]] = {}
        for number, row in read_jsonl(Path(options.queries)):
            query_id = as_id(row.get("query_id"))
            if query_id is None or not isinstance(row.get("text"), str):
                raise DatasetError(f"{Path(options.queries).name}:{number}: needs \"query_id\" and \"text\"")
            if query_id in queries:
                counts.drop("queries_duplicate_id")
                continue
            query = {"query_id": query_id, "text": row["text"], "stratum": str(row.get("stratum") or "all")}
            if row.get("scope") is not None:
                query["scope"] = str(row["scope"])
            queries[query_id] = query

        kept_queries: list[dict[str, Any]] = []
        qrels: list[dict[str, Any]] = []
        judged: set[str] = set()
        for number, row in read_jsonl(Path(options.qrels)):
            query_id = as_id(row.get("query_id"))
            judgments = _judgments(row)
            if query_id is None or judgments is None:
                raise DatasetError(
                    f"{Path(options.qrels).name}:{number}: needs \"query_id\" and "
                    "\"relevant_ids\" or \"relevance\""
                )
            if query_id not in queries:
                counts.drop("qrels_unknown_query")
                continue
            if query_id in judged:
                counts.drop("qrels_duplicate_query")
                continue
            judged.add(query_id)
            scope = queries[query_id].get("scope")
            known: dict[str, int] = {}
            for doc_id, grade in judgments.items():
                if doc_id in sensitive:
                    counts.drop("judgments_sensitive")
                elif doc_id not in by_id and doc_id not in parents:
                    counts.drop("judgments_unknown_id")
                elif scope is not None and doc_id in by_id and by_id[doc_id].get("scope") != scope:
                    counts.drop("judgments_out_of_scope")
                else:
                    known[doc_id] = grade
            if not known:
                counts.drop("queries_without_judgments")
                continue
            kept_queries.append(queries[query_id])
            qrels.append(qrels_row(query_id, known, graded="relevance" in row))
        counts.drop("queries_without_qrels", len(set(queries) - judged))
        write_dataset_files(destination, memories, kept_queries, qrels)
        if sensitive:  # the ids, never the text: a live system that returns one is a privacy finding
            (destination / SENSITIVE_IDS_FILE).write_text("".join(f"{doc}\n" for doc in sorted(sensitive)),
                                                          encoding="utf-8")
        return counts.result(
            memories=len(memories), queries=len(kept_queries),
            judgments=sum(len(row.get("relevance") or row.get("relevant_ids") or ()) for row in qrels),
            **mapping,
        )

    def read_memories(self, source: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The table's memories alone (sensitive rows dropped, never read into the result) and the
        counts (rows without an id or a text left out, and counted): a corpus with no queries, for
        `recall-kit study` (same column mapping as `run`). Rows that repeat an id are refused: a
        study cannot tell which of them is the memory its labels name."""
        counts = Counts()
        self._sensitive_ids = set()
        memories = self._memories(source, counts)
        repeated = counts.dropped.get("rows_duplicate_id", 0)
        if repeated:  # which of the rows is the memory? A study does not guess (a JSONL corpus is refused so too).
            raise DatasetError(f"{source.name}: table {self.options.table!r}: {repeated} rows repeat the id of an "
                               f"earlier row in column {self.options.id_col!r}; a memory's id names one row: choose a "
                               "column of unique ids (study init --id-col, [store] id_col).")
        return memories, counts.result(memories=len(memories), queries=0, judgments=0, **self.mapping)

    @property
    def sensitive_ids(self) -> frozenset[str]:
        """The ids of the rows the last read dropped as sensitive (ids only, never their text)."""
        return frozenset(getattr(self, "_sensitive_ids", ()))

    @property
    def mapping(self) -> dict[str, str]:
        """What the last read said about its columns: the sensitive column and how it was chosen,
        and the table's columns no option maps (names only)."""
        return dict(getattr(self, "_mapping", {}))

    def _memories(self, source: Path, counts: Counts) -> list[dict[str, Any]]:
        import sqlite3

        options = self.options
        if not source.is_file():
            raise DatasetError(f"{source}: not found")
        try:
            connection = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as error:
            raise DatasetError(f"{source.name}: cannot open as SQLite ({error})") from None
        try:
            try:
                tables = {row[0] for row in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
            except sqlite3.DatabaseError as error:
                raise DatasetError(f"{source.name}: not an SQLite database ({error})") from None
            if options.table not in tables:
                raise DatasetError(
                    f"{source.name}: no table {options.table!r} (tables: {', '.join(sorted(tables)) or 'none'})"
                )
            table = quote_identifier(options.table)
            try:
                columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
            except sqlite3.Error as error:  # a view over a dropped table, a corrupt schema
                raise DatasetError(f"{source.name}: table {options.table!r} cannot be read ({error})") from None
            wanted = {
                field.name[: -len("_col")]: getattr(options, field.name)
                for field in fields(options)
                if field.name.endswith("_col") and field.name != "no_sensitive_col" and getattr(options, field.name)
            }
            for role, column in wanted.items():
                if column not in columns:
                    raise DatasetError(
                        f"{source.name}: table {options.table!r} has no column {column!r} "
                        f"(--{role.replace('_', '-')}-col; columns: {', '.join(columns)})"
                    )
            sensitive, chosen = sensitive_column(source, options.table, columns, options.sensitive_col,
                                                 options.no_sensitive_col)
            wanted.pop("sensitive", None)
            if sensitive:
                wanted["sensitive"] = sensitive
            roles = list(wanted)
            unmapped = [column for column in columns if column not in wanted.values()]
            self._mapping = {"sensitive_column": f"{sensitive} ({chosen})" if sensitive else "none",
                             "unmapped_columns": ", ".join(unmapped) or "none"}
            self._where = (source.name, options.table, sensitive)
            sql = f"SELECT {', '.join(quote_identifier(wanted[r]) for r in roles)} FROM {table}"
            memories: list[dict[str, Any]] = []
            seen: set[str] = set()
            try:
                for values in connection.execute(sql):
                    record = dict(zip(roles, values, strict=True))
                    memory = self._memory(record, seen, counts)
                    if memory is not None:
                        memories.append(memory)
            except sqlite3.Error as error:
                raise DatasetError(f"{source.name}: table {options.table!r} cannot be read ({error})") from None
            return memories
        finally:
            connection.close()

    def _memory(self, record: dict[str, Any], seen: set[str], counts: Counts) -> dict[str, Any] | None:
        doc_id = _row_id(record["id"])
        if doc_id is None:
            counts.drop("rows_missing_id")
            return None
        if "sensitive" in record and _sensitive(record["sensitive"], self._where[2], doc_id, *self._where[:2]):
            self._sensitive_ids.add(doc_id)
            counts.drop("rows_sensitive")
            return None
        if doc_id in seen:
            counts.drop("rows_duplicate_id")
            return None
        text = record["text"]
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if text is None:
            counts.drop("rows_missing_text")
            return None
        seen.add(doc_id)
        memory: dict[str, Any] = {"id": doc_id, "content": str(text)}
        for role in ("category", "scope", "created_at"):
            if record.get(role) is not None:
                memory[role] = str(record[role])
        if record.get("parent") is not None:
            memory["parent_id"] = str(record["parent"])
        if "tags" in record:
            tags = _tags(record["tags"])
            if tags:
                memory["tags"] = tags
        if record.get("importance") is not None:
            try:
                importance = float(record["importance"])
            except (TypeError, ValueError):
                importance = math.nan
            if math.isfinite(importance):
                memory["importance"] = importance
            else:
                counts.note("importance_not_a_number")
        return memory


def _row_id(value: Any) -> str | None:
    """A row's id as text: integers (and whole REALs) as digits, text as itself, a BLOB as its text
    where it is UTF-8 that makes an id, else as its bytes in hex (a 16-byte UUID: 32 hex digits).
    Decoding a BLOB with replacement characters, as before, made different ids one (and most UUIDs,
    holding a control byte, none)."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, bytes):
        try:
            text = as_id(value.decode("utf-8"))
        except UnicodeDecodeError:
            text = None
        return text if text is not None else (value.hex() if value else None)
    return as_id(value)


def _judgments(row: dict[str, Any]) -> dict[str, int] | None:
    if isinstance(row.get("relevance"), dict):
        grades: dict[str, int] = {}
        for doc_id, grade in row["relevance"].items():
            if (isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade)
                    or int(grade) != grade or not MIN_GRADE <= grade <= MAX_GRADE or as_id(doc_id) is None):
                return None
            grades[str(doc_id)] = int(grade)
        return grades
    if isinstance(row.get("relevant_ids"), list):
        ids = [as_id(value) for value in row["relevant_ids"]]
        if any(doc_id is None for doc_id in ids):
            return None
        return dict.fromkeys((doc_id for doc_id in ids if doc_id is not None), 1)
    return None
