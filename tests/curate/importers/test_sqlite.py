"""The sqlite importer: a memory table with safe identifiers, sensitive rows never exported."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from recall_kit.curate.importers import import_dataset
from recall_kit.curate.importers.sqlite import quote_identifier
from recall_kit.dataset import read_dataset
from recall_kit.errors import DatasetError, OptionError

ROOT = Path(__file__).resolve().parents[3]
TABLE = 'my "mem" table'


def write_store(folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True)
    database = folder / "store.db"
    connection = sqlite3.connect(database)
    connection.execute(
        f"CREATE TABLE {quote_identifier(TABLE)} (id INTEGER, body TEXT, kind TEXT, labels TEXT, "
        "weight, owner TEXT, secret INTEGER, made TEXT)"
    )
    connection.executemany(
        f"INSERT INTO {quote_identifier(TABLE)} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (1, "alpha fact", "note", "a,b", 0.5, "u1", 0, "2024-01-01"),
            (2, "beta fact", None, '["x", "y"]', "high", "u1", 0, None),
            (3, "PRIVATE-DIAGNOSIS", "health", "", 0.9, "u1", 1, None),
            (4, None, "note", "", None, "u1", 0, None),
            (None, "row without id", "note", "", None, "u1", 0, None),
            (1, "a second row 1", "note", "", None, "u1", 0, None),
            (5, "gamma fact", "note", "", None, "u2", None, None),
        ],
    )
    connection.commit()
    connection.close()
    queries = [
        {"query_id": "s1", "text": "alpha?", "stratum": "exact", "scope": "u1"},
        {"query_id": "s2", "text": "secret?"},
        {"query_id": "s3", "text": "gamma?", "scope": "u1"},
        {"query_id": "s4", "text": "never judged"},
    ]
    qrels = [
        {"query_id": "s1", "relevant_ids": [1, 2]},
        {"query_id": "s2", "relevant_ids": [3, 99]},
        {"query_id": "s3", "relevant_ids": [5]},
        {"query_id": "zz", "relevant_ids": [1]},
    ]
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries), encoding="utf-8")
    (folder / "qrels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in qrels), encoding="utf-8")
    return {
        "table": TABLE, "id_col": "id", "text_col": "body", "category_col": "kind", "tags_col": "labels",
        "importance_col": "weight", "scope_col": "owner", "created_at_col": "made", "sensitive_col": "secret",
        "queries": str(folder / "queries.jsonl"), "qrels": str(folder / "qrels.jsonl"),
    }


def test_sqlite_counts_validates_and_drops_sensitive(tmp_path: Path) -> None:
    options = write_store(tmp_path / "store")
    counts = import_dataset("sqlite", tmp_path / "store" / "store.db", tmp_path / "out", options)
    assert counts == {
        "memories": 3,
        "queries": 1,
        "judgments": 2,
        "sensitive_column": "secret (named)",
        "unmapped_columns": "none",
        "dropped": {
            "judgments_out_of_scope": 1,
            "judgments_sensitive": 1,
            "judgments_unknown_id": 1,
            "qrels_unknown_query": 1,
            "queries_without_judgments": 2,
            "queries_without_qrels": 1,
            "rows_duplicate_id": 1,
            "rows_missing_id": 1,
            "rows_missing_text": 1,
            "rows_sensitive": 1,
        },
        "notes": {"importance_not_a_number": 1},
    }
    dataset, problems = read_dataset(tmp_path / "out")
    assert problems == []
    first = dataset.corpus.get("1")
    assert (first.content, first.category, first.tags, first.importance, first.scope, first.created_at) == (
        "alpha fact", "note", ("a", "b"), 0.5, "u1", "2024-01-01")
    assert dataset.corpus.get("2").tags == ("x", "y") and dataset.corpus.get("2").importance is None
    assert dataset.qrels == {"s1": {"1": 1, "2": 1}}
    assert dataset.sensitive_ids == {"3"}  # the id is kept (sensitive_ids.txt), the text is not
    for name in ("corpus.jsonl", "queries.jsonl", "qrels.jsonl", "sensitive_ids.txt"):
        assert "PRIVATE-DIAGNOSIS" not in (tmp_path / "out" / name).read_text(encoding="utf-8")


def test_missing_table_column_and_queries_are_one_line(tmp_path: Path) -> None:
    options = write_store(tmp_path / "store")
    database = tmp_path / "store" / "store.db"
    with pytest.raises(DatasetError, match=r"^store\.db: no table 'memories' \(tables: my \"mem\" table\)$"):
        import_dataset("sqlite", database, tmp_path / "a", {**options, "table": "memories"})
    with pytest.raises(DatasetError, match=r"^store\.db: table 'my \"mem\" table' has no column 'content' "
                                           r"\(--text-col; columns: id, body, kind"):
        import_dataset("sqlite", database, tmp_path / "b", {**options, "text_col": "content"})
    with pytest.raises(OptionError, match="needs --queries FILE and --qrels FILE"):
        import_dataset("sqlite", database, tmp_path / "c", {"table": TABLE, "text_col": "body"})
    not_sqlite = tmp_path / "plain.db"
    not_sqlite.write_text("this is not a database " * 100, encoding="utf-8")
    with pytest.raises(DatasetError, match=r"^plain\.db: not an SQLite database"):
        import_dataset("sqlite", not_sqlite, tmp_path / "d", options)
    assert not any((tmp_path / name).exists() for name in "abcd")


def test_injection_shaped_identifier_is_only_a_name(tmp_path: Path) -> None:
    options = write_store(tmp_path / "store")
    database = tmp_path / "store" / "store.db"
    evil = 'body" FROM sqlite_master; --'
    with pytest.raises(DatasetError, match="has no column"):
        import_dataset("sqlite", database, tmp_path / "e", {**options, "text_col": evil})
    assert quote_identifier('a"b') == '"a""b"'


def test_cli_sqlite_flags(tmp_path: Path) -> None:
    options = write_store(tmp_path / "store")
    out = tmp_path / "out"
    args = [sys.executable, "-m", "recall_kit", "dataset", "import", "sqlite",
            str(tmp_path / "store" / "store.db"), str(out),
            "--table", TABLE, "--id-col", "id", "--text-col", "body", "--scope-col", "owner",
            "--sensitive-col", "secret", "--queries", options["queries"], "--qrels", options["qrels"]]
    done = subprocess.run(args, check=False, cwd=ROOT, env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "memories: 3" in done.stdout.splitlines()
    assert "dropped.rows_sensitive: 1" in done.stdout.splitlines()
    assert "PRIVATE" not in done.stdout + done.stderr
    assert read_dataset(out)[1] == []


def test_blob_ids_are_their_text_where_it_is_one_else_their_hex(tmp_path: Path) -> None:
    """A store keyed by 16-byte UUIDs: before, each BLOB was decoded with replacement characters, so
    most (holding a control byte) had no id and the rest could merge into one."""
    import uuid

    keys = [uuid.UUID(int=n * 0x0101010101010101).bytes for n in range(1, 6)] + [b"note-7", b"", b"\xff\x00"]
    db = sqlite3.connect(tmp_path / "store.db")
    db.execute("CREATE TABLE memories (id BLOB, content TEXT)")
    db.executemany("INSERT INTO memories VALUES (?, ?)", [(key, f"memory {n}") for n, key in enumerate(keys)])
    db.commit()
    db.close()
    import recall_kit.registry as registry

    importer = registry.importers.create("sqlite", {})
    memories, counts = importer.read_memories(tmp_path / "store.db")
    assert [m["id"] for m in memories] == [key.hex() for key in keys[:5]] + ["note-7", "ff00"]
    assert counts["dropped"] == {"rows_missing_id": 1}  # the empty BLOB: no id at all
