"""`study init --sqlite` reads the store before it writes: the tables and their columns (as
sqlite-utils and datasette introspect a database), then the memory table and its id, text,
created-at and sensitive columns chosen by name and declared type, each choice said with the
alternatives and the flag that names another. An ambiguous choice is one line naming the
candidates and that flag; a file that is missing, a folder, unreadable or no SQLite database is one
line naming the path. Names and counts only: no memory text is read here (a flag column's few
distinct values are, to tell a 0/1 flag from anything else)."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from recall_kit.curate.importers.sqlite import looks_sensitive, quote_identifier, sensitive_column
from recall_kit.errors import DatasetError

#: Words of a table's name that say it holds memories: the first set before the second.
MEMORY_TABLE_WORDS = ({"memory", "mem"},
                      {"note", "fact", "document", "doc", "chunk", "entry", "item", "record", "passage",
                       "observation", "knowledge", "message"})
#: Names of a memory's text, best first (a column's words are compared, plural or singular).
TEXT_WORDS = ["content", "text", "body", "memory", "note", "message", "document", "chunk", "passage", "fact",
              "value", "summary"]
#: Words of a column's name that say it holds when a row was made (`created`, `inserted_at`) before
#: those that say a time (`ts`, `timestamp`); and those that say another time (`updated_at`).
CREATED_WORDS = frozenset({"created", "creation", "inserted", "added"})
TIME_WORDS = frozenset({"timestamp", "date", "datetime", "time", "ts"})
OTHER_TIME_WORDS = frozenset({"updated", "modified", "deleted", "expires", "expiry", "expired", "accessed",
                              "last", "due", "seen", "edited"})
#: The declared types a time is kept in (SQLite keeps times as text, numbers or DATE/TIMESTAMP).
TIME_TYPES = frozenset({"", "TEXT", "INTEGER", "INT", "REAL", "NUMERIC", "FLOAT", "DOUBLE", "VARCHAR"})
#: Tables named in a one-line message, at most.
SHOWN = 8


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # the declared type, upper case, without its size ("VARCHAR(64)" -> "VARCHAR")
    primary_key: bool

    @property
    def words(self) -> set[str]:
        """The name's words, each singular: `noteId` -> {note, id}, `created_at` -> {created, at}."""
        split = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", self.name).lower())
        return {_singular(word) for word in split if word}

    @property
    def textual(self) -> bool:
        """SQLite's text affinity (CHAR, CLOB, TEXT in the type), or no declared type at all."""
        return not self.type or any(word in self.type for word in ("CHAR", "CLOB", "TEXT"))


@dataclass(frozen=True)
class Table:
    name: str
    columns: list[Column]
    rows: int
    virtual: bool = False

    @property
    def words(self) -> set[str]:
        return Column(self.name, "", False).words


@dataclass
class Choice:
    """One role's column: the name, why it was chosen, the other candidates and the flag that names one."""

    role: str
    column: str
    why: str
    flag: str
    others: list[str] = field(default_factory=list)

    def line(self) -> str:
        others = f"; also {', '.join(self.others)}" if self.others else ""
        flag = f" ({self.flag})" if self.flag else ""
        return f"  {self.role:<11}{self.column or '(none)':<16}{self.why}{others}{flag}".rstrip()


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def read_tables(source: Path) -> list[Table]:
    """The database's tables and views with their columns and row counts (sqlite's own tables and the
    shadow tables of a virtual table, such as an FTS5 index's, left out); one line naming the path
    when the file is missing, a folder, unreadable or not an SQLite database."""
    if not source.exists():
        raise DatasetError(f"{source}: no such file (--sqlite names the store's SQLite database file).")
    if source.is_dir():
        raise DatasetError(f"{source}: a folder, not an SQLite file (--sqlite names the store's database file).")
    try:
        with source.open("rb") as handle:
            header = handle.read(16)
    except OSError as error:
        raise DatasetError(f"{source}: cannot be read ({error.strerror or type(error).__name__}).") from None
    if header and header != b"SQLite format 3\x00":
        raise DatasetError(f"{source}: not an SQLite database (its first bytes are not SQLite's header).")
    try:
        connection = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise DatasetError(f"{source}: cannot be opened as SQLite ({error}).") from None
    try:
        try:
            listed = connection.execute("SELECT name, type, coalesce(sql, '') FROM sqlite_master "
                                        "WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
                                        "ORDER BY name").fetchall()
        except sqlite3.DatabaseError as error:
            raise DatasetError(f"{source}: not an SQLite database ({error}).") from None
        virtual = {name for name, _, sql in listed if sql.lstrip().upper().startswith("CREATE VIRTUAL")}
        tables = []
        for name, _, _ in listed:
            if any(name.startswith(f"{parent}_") for parent in virtual):
                continue  # an FTS index's _data, _idx, _content ... tables
            try:
                described = connection.execute(f"PRAGMA table_info({quote_identifier(name)})").fetchall()
                rows = connection.execute(f"SELECT count(*) FROM {quote_identifier(name)}").fetchone()[0]
            except sqlite3.Error:  # a view over a dropped table, a virtual table whose module is missing
                continue
            columns = [Column(column, re.sub(r"\(.*", "", str(declared or "")).strip().upper(), bool(pk))
                       for _, column, declared, _, _, pk in described]
            tables.append(Table(name, columns, int(rows), name in virtual))
        return tables
    finally:
        connection.close()


def _ranked(candidates: list[tuple[int, str]]) -> tuple[list[str], list[str]]:
    """The candidates of the best rank, and the others, each in the table's order."""
    if not candidates:
        return [], []
    best = min(rank for rank, _ in candidates)
    return ([name for rank, name in candidates if rank == best], [name for rank, name in candidates if rank != best])


def _id_candidates(table: Table) -> list[tuple[int, str]]:
    """The columns that could be the memory id, ranked: the primary key (one column), `id`, the
    table's own (`note_id` in `notes`, `memory_id`, `uuid`), any other `..._id`."""
    keys = [column for column in table.columns if column.primary_key]
    own = {f"{_singular(word)}" for word in table.words} | {"memory", "mem", "doc"}
    ranked = []
    for column in table.columns:
        words = column.words
        if len(keys) == 1 and column is keys[0]:
            ranked.append((0, column.name))
        elif column.name.lower() == "id":
            ranked.append((1, column.name))
        elif words & {"id", "uuid"} and words - {"id", "uuid"} <= own:  # note_id, uuid, memory_id
            ranked.append((2, column.name))
        elif words & {"id", "uuid"}:  # another table's id (user_id): the last resort
            ranked.append((3, column.name))
    return ranked


def _text_candidates(table: Table, taken: set[str]) -> list[tuple[int, str]]:
    """The columns that could be the memory text: text-typed (or untyped) ones not taken by another
    role and not a flag or a time, ranked by their name's place in TEXT_WORDS (unnamed ones last)."""
    ranked = []
    for column in table.columns:
        if column.name in taken or not column.textual or looks_sensitive(column.name) or _time_rank(column) is not None:
            continue
        places = [TEXT_WORDS.index(word) for word in column.words if word in TEXT_WORDS]
        ranked.append((min(places) if places else len(TEXT_WORDS), column.name))
    return ranked


def _time_rank(column: Column) -> int | None:
    """0 for a creation time by name and type (`created_at TIMESTAMP`), 1 for a time (`ts INTEGER`),
    2 for such a name with another type (a BLOB named created); None for anything else."""
    words = column.words
    if not words & (CREATED_WORDS | TIME_WORDS) or (words & OTHER_TIME_WORDS and not words & CREATED_WORDS):
        return None
    if not (any(word in column.type for word in ("DATE", "TIME")) or column.type in TIME_TYPES):
        return 2
    return 0 if words & CREATED_WORDS else 1


def _ambiguous(source: Path, table: str, what: str, names: list[str], flag: str) -> DatasetError:
    return DatasetError(f"{source}: table {table!r} has {len(names)} columns that could be the {what} "
                        f"({', '.join(names)}); name one: {flag} {names[0]}.")


def choose_table(source: Path, tables: list[Table], named: str | None) -> tuple[Table, Choice]:
    """The memory table: the one named; else, of the tables with an id and a text column, the one
    whose name says memories (`memories`, `notes`, `documents`), a plain table before a virtual one."""
    shown = ", ".join(table.name for table in tables[:SHOWN]) + (f" and {len(tables) - SHOWN} more"
                                                                  if len(tables) > SHOWN else "")
    if named:
        for table in tables:
            if table.name == named:
                return table, Choice("table", named, "named", "")
        raise DatasetError(f"{source}: no table {named!r} (tables: {shown or 'none'}).")
    if not tables:
        raise DatasetError(f"{source}: no tables; is it the store's database?")
    fitting = [table for table in tables if _id_candidates(table) and _text_candidates(table, set())]
    if not fitting:
        raise DatasetError(f"{source}: no table has both an id and a text column (tables: {shown}); name them: "
                           "--table T --id-col C --text-col C.")

    def rank(table: Table) -> int:
        words = table.words
        by_name = 0 if words & MEMORY_TABLE_WORDS[0] else 1 if words & MEMORY_TABLE_WORDS[1] else 2
        return by_name + (3 if table.virtual else 0)

    best, others = _ranked([(rank(table), table.name) for table in fitting])
    if len(best) > 1:
        raise DatasetError(f"{source}: {len(best)} tables could hold the memories ({', '.join(best)}); "
                           f"name one: --table {best[0]}.")
    chosen = next(table for table in fitting if table.name == best[0])
    why = ("the only table with an id and a text column" if len(fitting) == 1 else
           "named like a memory table" if rank(chosen) < 2 else "a plain table beside virtual ones")
    return chosen, Choice("table", chosen.name, why, "--table names another", others)


@dataclass
class Mapping:
    """What `study init` read and chose: [store]'s columns, each role's choice, the tables read."""

    columns: dict[str, str]
    choices: list[Choice]
    tables: list[Table]

    def lines(self, source: Path) -> list[str]:
        """What `study init` prints: the tables read, then one line per role (the column, why, the
        alternatives and the flag that names another)."""
        shown = ", ".join(f"{table.name} ({len(table.columns)} columns, {table.rows} rows)"
                          for table in self.tables[:SHOWN])
        more = f" and {len(self.tables) - SHOWN} more" if len(self.tables) > SHOWN else ""
        return [f"Read {source}: {shown}{more}. The mapping chosen (study.toml's [store] keeps it):",
                *(choice.line() for choice in self.choices)]

    def said(self, role: str) -> str:
        """The role's column and how it was chosen, for study.toml's comment (`private (detected)`)."""
        choice = next(choice for choice in self.choices if choice.role == role)
        if not choice.column:
            return "none"
        return f"{choice.column} ({'named' if choice.why == 'named' else 'detected'})"


def choose_columns(source: Path, named: dict[str, str]) -> Mapping:
    """The [store] columns for the SQLite store at `source`: those `named` (the flags) kept, the rest
    chosen from the table (table, id_col, text_col, created_at_col, sensitive_col); and the choices,
    to print. An ambiguous role is one DatasetError naming the candidates and the flag."""
    tables = read_tables(source)
    table, table_choice = choose_table(source, tables, named.get("table"))
    names = [column.name for column in table.columns]
    for key, column in named.items():
        if key.endswith("_col") and column and column not in names:
            raise DatasetError(f"{source}: table {table.name!r} has no column {column!r} "
                               f"(--{key[:-4].replace('_', '-')}-col; columns: {', '.join(names)})")
    columns = {**named, "table": table.name}
    choices = [table_choice]

    if named.get("id_col"):
        choices.append(Choice("id", named["id_col"], "named", ""))
    else:
        best, others = _ranked(_id_candidates(table))
        if not best:
            raise DatasetError(f"{source}: table {table.name!r} has no id column (a primary key, id or "
                               f"{_singular(table.name)}_id; columns: {', '.join(names)}); name one: --id-col COL.")
        if len(best) > 1:
            raise _ambiguous(source, table.name, "memory id", best, "--id-col")
        primary = next(column for column in table.columns if column.name == best[0]).primary_key
        why = "the primary key" if primary else "named like an id"
        columns["id_col"] = best[0]
        choices.append(Choice("id", best[0], why, "--id-col names another", others))

    sensitive = _sensitive_choice(source, table, named)
    if sensitive.column:
        columns["sensitive_col"] = sensitive.column

    taken = {value for key, value in columns.items() if key.endswith("_col") and value}
    if named.get("text_col"):
        choices.append(Choice("text", named["text_col"], "named", ""))
    else:
        best, others = _ranked(_text_candidates(table, taken))
        if not best:
            raise DatasetError(f"{source}: table {table.name!r} has no text column beside {columns['id_col']} "
                               f"(columns: {', '.join(names)}); name one: --text-col COL.")
        if len(best) > 1:
            raise _ambiguous(source, table.name, "memory text", best, "--text-col")
        named_like = any(word in TEXT_WORDS for word in Column(best[0], "", False).words)
        columns["text_col"] = best[0]
        choices.append(Choice("text", best[0], "named like memory text" if named_like else "the only text column",
                              "--text-col names another", others))

    if named.get("created_at_col"):
        choices.append(Choice("created-at", named["created_at_col"], "named", ""))
    else:
        timed = [(rank, column.name) for column in table.columns
                 if column.name not in taken | {columns["text_col"]} and (rank := _time_rank(column)) is not None]
        best, others = _ranked([(rank, name) for rank, name in timed if rank < 2])
        odd = [name for rank, name in timed if rank == 2]
        if len(best) == 1:
            columns["created_at_col"] = best[0]
            choices.append(Choice("created-at", best[0], "a time by its name and type", "--created-at-col names another",
                                  others + odd))
        else:
            looking = best + odd
            choices.append(Choice("created-at", "", "not mapped, though it looks like one" if looking else "none found",
                                  f"--created-at-col {looking[0]} maps it" if looking else "--created-at-col names one",
                                  looking))
    choices.append(sensitive)
    mapped = {value for key, value in columns.items() if key.endswith("_col")}
    unmapped = [name for name in names if name not in mapped]
    choices.append(Choice("not mapped", ", ".join(unmapped) or "none", "", "--category-col, --tags-col, "
                          "--importance-col, --scope-col map one" if unmapped else ""))
    order = ["table", "id_col", "text_col", "created_at_col", "sensitive_col"]
    ordered = {key: columns[key] for key in order if key in columns} | columns
    return Mapping(ordered, choices, tables)


def _sensitive_choice(source: Path, table: Table, named: dict[str, str]) -> Choice:
    """The sensitivity flag: the one named, none (--no-sensitive-col), or the one the importer
    detects (`is_sensitive`, or the only column named like a flag whose values all read as true or
    false); anything else that looks like one is refused, naming it and the two flags."""
    if "sensitive_col" in named:
        column = named["sensitive_col"]
        return Choice("sensitive", column, "named" if column else "none: --no-sensitive-col", "")
    column, _ = sensitive_column(source, table.name, [column.name for column in table.columns], "", False)
    if not column:
        return Choice("sensitive", "", "no column looks like a flag", "--sensitive-col names one")
    return Choice("sensitive", column, "a flag by its name and values: rows true there never leave the store",
                  "--no-sensitive-col if it is not one")
