"""The SQLite database behind the fts5 retriever: schema, filling, on-disk reuse, atomic rebuild."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from recall_kit.plugin import Corpus, RecallKitError

#: Bumped whenever the schema or the way rows are written changes: old files are rebuilt.
#: 2: the file carries APPLICATION_ID.
SCHEMA_VERSION = 2
#: SQLite's header field `application_id` (PRAGMA application_id) in every index this plugin
#: writes, "RKF5": how it knows a file at fts5.path is its own, which it may rebuild, from a
#: database of the user's, which it must never touch. It sits in the first page, so a damaged
#: index whose first 100 bytes survive is still known as ours.
APPLICATION_ID = 0x524B4635
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Indexable columns, in table order; `keywords` holds Memory.expanded_keywords.
COLUMNS = ("content", "category", "tags", "keywords")
#: The FTS5 `tokenize=` argument for each tokenizer option.
TOKENIZE = {"unicode61": "unicode61", "porter": "porter unicode61", "trigram": "trigram"}


def fts5_unavailable(error: sqlite3.OperationalError, tokenizer: str) -> RecallKitError:
    """A one-line error for a Python whose SQLite lacks FTS5 (or lacks this tokenizer)."""
    message = str(error)
    version = sqlite3.sqlite_version
    if "no such module" in message:
        return RecallKitError(
            f"Retriever 'fts5' needs SQLite's FTS5 extension, but this Python's sqlite3 "
            f"(SQLite {version}) was built without it: use a Python whose sqlite3 has FTS5."
        )
    if "tokenizer" in message:
        return RecallKitError(
            f"Retriever 'fts5': SQLite {version} has no FTS5 tokenizer {tokenizer!r} "
            "(trigram needs SQLite 3.34 or later)."
        )
    return RecallKitError(f"Retriever 'fts5' cannot create an FTS5 table: {message}")


def index_key(fingerprint: str, tokenizer: str, columns: Sequence[str]) -> str:
    """What an on-disk index must match to be reused: the corpus and the options that shape it."""
    payload = json.dumps(
        {"schema": SCHEMA_VERSION, "corpus": fingerprint, "tokenizer": tokenizer,
         "columns": list(columns)},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def fill(connection: sqlite3.Connection, corpus: Corpus, tokenizer: str,
         columns: Sequence[str], key: str) -> None:
    """Create the tables in an empty database and index `corpus`.

    `memories` holds every row's id, importance and text (the LIKE fallback reads it);
    `memories_fts` is an external-content FTS5 table over the chosen columns of `memories`.
    """
    column_list = ", ".join(columns)
    connection.executescript(
        f"""
        PRAGMA application_id = {APPLICATION_ID};
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY, doc_id TEXT NOT NULL, importance REAL,
            content TEXT, category TEXT, tags TEXT, keywords TEXT
        );
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            {column_list}, content='memories', content_rowid='rowid',
            tokenize='{TOKENIZE[tokenizer]}'
        );
        """
    )
    connection.executemany(
        "INSERT INTO memories (rowid, doc_id, importance, content, category, tags, keywords)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            (rowid, memory.id, memory.importance, memory.content, memory.category,
             " ".join(memory.tags), memory.expanded_keywords)
            for rowid, memory in enumerate(corpus, start=1)
        ),
    )
    connection.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
    connection.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)",
        [("index_key", key), ("schema", str(SCHEMA_VERSION)), ("tokenizer", tokenizer),
         ("columns", ",".join(columns)), ("rows", str(len(corpus)))],
    )
    connection.commit()


def stored_key(path: Path) -> str | None:
    """The index key recorded in the database at `path`, or None if it is not one of ours."""
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = connection.execute("SELECT value FROM meta WHERE key = 'index_key'").fetchone()
        return str(row[0]) if row else None
    except sqlite3.Error:  # not a database, or some other file: rebuilt
        return None
    finally:
        connection.close()


def created_here(path: Path) -> bool:
    """Whether the file at `path` is one this plugin may rewrite: empty, or a SQLite database with
    its APPLICATION_ID, or one an earlier version wrote (no mark, but its `meta` table's key).
    Anything else (the user's own database, any other file) is never deleted or rewritten."""
    with path.open("rb") as file:
        header = file.read(100)
    if not header:
        return True
    if len(header) == 100 and header.startswith(_SQLITE_MAGIC):
        if int.from_bytes(header[68:72], "big") == APPLICATION_ID:
            return True
        return stored_key(path) is not None  # written before the mark (schema 1)
    return False


def content_digest(rows: Iterable[Sequence[object]]) -> str:
    """A digest of the indexed rows, in rowid order: what the file must still hold to be reused."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(list(row), ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()


def _corpus_rows(corpus: Corpus) -> Iterator[tuple[object, ...]]:
    for rowid, memory in enumerate(corpus, start=1):
        yield (rowid, memory.id, memory.importance, memory.content, memory.category,
               " ".join(memory.tags), memory.expanded_keywords)


def verify(connection: sqlite3.Connection, corpus: Corpus) -> str | None:
    """Why a persisted index must not be reused (None when it is sound): SQLite's own structural
    check, FTS5's check of its index against the rows, and the rows against the corpus."""
    try:
        status = connection.execute("PRAGMA quick_check").fetchone()
        if not status or status[0] != "ok":
            return f"PRAGMA quick_check: {status[0] if status else 'no answer'}"
        # rank 1: also check the index against the external content table (SQLite >= 3.44).
        connection.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
        # Every row must be in the index: FTS rows deleted (or 'delete-all') leave a sound but
        # empty index, which every older SQLite's integrity-check passes.
        indexed = connection.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0]
        if indexed != len(corpus):
            return f"it indexes {indexed} of {len(corpus)} rows"
        stored = connection.execute(
            "SELECT rowid, doc_id, importance, content, category, tags, keywords FROM memories ORDER BY rowid"
        )
        if content_digest(stored) != content_digest(_corpus_rows(corpus)):
            return "its rows differ from the corpus"
    except sqlite3.Error as error:
        return f"{type(error).__name__}: {error}"
    finally:
        # The integrity-check is an INSERT, so sqlite3 opened a write transaction for it; left
        # open it locks the file, and the next process to open the index waits 5 s and rebuilds.
        if connection.in_transaction:
            connection.rollback()
    return None


def open_on_disk(path: Path, corpus: Corpus, tokenizer: str, columns: Sequence[str],
                 key: str) -> tuple[sqlite3.Connection, bool]:
    """Open the index at `path`, reusing it when its key matches, else rebuilding it atomically.

    A rebuild writes a temporary file beside `path` and renames it over `path` only once it is
    complete, so a reader never sees a half-built index. Returns (connection, reused).
    """
    if path.is_dir() or (path.exists() and not path.is_file()):
        raise RecallKitError(f"fts5.path {path}: not a file (a folder or a device); give the index file's path.")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        ours = not path.exists() or created_here(path)
    except OSError as error:
        raise RecallKitError(f"fts5.path {path}: cannot read it ({error.strerror or error}).") from None
    if not ours:
        raise RecallKitError(
            f"fts5.path {path}: not an index recall-kit wrote (no recall-kit mark in its header); "
            "refusing to overwrite it: give a new path, or delete the file yourself."
        )
    found = stored_key(path) if path.exists() else None
    if path.exists() and found is None:  # ours by its mark, but truncated or damaged: say so
        print(f"recall-kit-fts5: the file at {path} is not a readable recall-kit index; rebuilding it.",
              file=sys.stderr)
    if found == key:
        connection = sqlite3.connect(str(path))
        problem = verify(connection, corpus)
        if problem is None:
            return connection, True
        connection.close()
        print(f"recall-kit-fts5: the index at {path} failed its check ({problem}); rebuilding it.",
              file=sys.stderr)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        return _rebuild(path, temporary, corpus, tokenizer, columns, key)
    except (OSError, sqlite3.Error) as error:  # a read-only folder, a full disk: name the index's path
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise RecallKitError(f"fts5.path {path}: cannot write the index ({reason}).") from None


def _rebuild(path: Path, temporary: Path, corpus: Corpus, tokenizer: str, columns: Sequence[str],
             key: str) -> tuple[sqlite3.Connection, bool]:
    try:
        # The index holds memory text: private (0600), as the embedding cache is.
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        connection = sqlite3.connect(str(temporary))
        try:
            fill(connection, corpus, tokenizer, columns, key)
        finally:
            connection.close()
        os.replace(temporary, path)
    finally:
        for leftover in (temporary, temporary.with_name(temporary.name + "-journal")):
            if leftover.exists():
                leftover.unlink()
    return sqlite3.connect(str(path)), False
