"""`study init --sqlite` (recall_kit.study.init.sqlite) reads the store first (issue 70): a table whose names match none of the
defaults is studied in one `init` and one `run`; an ambiguous choice is one line naming the
candidates and the flag; a missing, unreadable or foreign file is one line naming the path."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from study_support import LEXICAL_PAIR, plugins

from recall_kit.study.config import load_study
from recall_kit.testing import invoke_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"
CANARY = "quillmarrow canary 51c2"


def notes_store(path: Path) -> tuple[Path, int]:
    """The example corpus as `notes (note_id, body, ts, private)`, none of the importer's default
    names, one private row holding CANARY; and how many rows are private."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (note_id TEXT, body TEXT, ts INTEGER, private INTEGER)")
    private = 0
    for number, line in enumerate((EXAMPLE / "corpus.jsonl").read_text().splitlines()):
        row = json.loads(line)
        private += bool(row.get("is_sensitive"))
        db.execute("INSERT INTO notes VALUES (?, ?, ?, ?)",
                   (f"n{row['id']}", row["content"], 1_700_000_000 + number, int(bool(row.get("is_sensitive")))))
    db.execute("INSERT INTO notes VALUES ('n9999', ?, 1800000000, 1)", (f"The {CANARY} is under the mat.",))
    # rows a study cannot read, left out and counted: one without an id, two without a text
    db.execute("INSERT INTO notes VALUES (NULL, 'a note nobody can name', 1800000001, 0)")
    db.executemany("INSERT INTO notes VALUES (?, NULL, 1800000002, 0)", [("n9990",), ("n9991",)])
    db.commit()
    db.close()
    return path, private + 1


def init(args: list[str]):  # type: ignore[no-untyped-def]
    with plugins("recall-kit-fts5"):  # init writes only what run accepts: the baseline is looked up
        return invoke_cli(["study", "init", *args])


def test_a_store_named_unlike_the_defaults_is_studied_in_one_init_and_one_run(tmp_path: Path) -> None:
    store, private = notes_store(tmp_path / "store.db")
    result = init([str(tmp_path / "study.toml"), "--sqlite", str(store)])
    assert result.exit_code == 0, result.output
    printed = result.output
    for role, column in (("table", "notes"), ("id", "note_id"), ("text", "body"), ("created-at", "ts"),
                         ("sensitive", "private")):
        assert any(line.split()[:2] == [role, column] for line in printed.splitlines()), (role, printed)
    assert "--text-col" in printed and "--no-sensitive-col" in printed  # the flags that choose otherwise
    config = load_study(tmp_path / "study.toml")
    assert config.store.columns == {"table": "notes", "id_col": "note_id", "text_col": "body",
                                    "sensitive_col": "private", "created_at_col": "ts"}
    text = (tmp_path / "study.toml").read_text()
    assert f"({private} sensitive rows left out; 3 rows left out: no readable id 1, no text 2)" in text
    assert CANARY not in text
    # lighter systems and resamples for the test's time; the store's mapping is init's, untouched
    (tmp_path / "study.toml").write_text(text.replace("resamples = 2000", "resamples = 50")
                                         .split("\n[[systems]]")[0] + "\n" + LEXICAL_PAIR)
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        run = invoke_cli(["study", "run", str(tmp_path / "study.toml")])
    assert run.exit_code == 0, run.output
    out = tmp_path / "study-out"
    corpus = json.loads((out / "study.json").read_text())["corpus"]
    assert corpus["sensitive_dropped"] == private and corpus["rows_left_out"] == {"no readable id": 1, "no text": 2}
    assert "3 rows left out: no readable id 1, no text 2" in (out / "study.md").read_text()
    written = [path for path in out.rglob("*") if path.is_file()]
    assert [path for path in written if CANARY.encode() in path.read_bytes()] == []
    assert any(b"Brightmoor" in path.read_bytes() for path in written)  # the check can see text


def _db(path: Path, *statements: str) -> Path:
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path


def test_two_tables_that_could_hold_the_memories_are_one_line_naming_both_and_the_flag(tmp_path: Path) -> None:
    store = _db(tmp_path / "two.db", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
                "CREATE TABLE facts (id INTEGER PRIMARY KEY, content TEXT)",
                "INSERT INTO notes VALUES (1, 'the kestrel project')",
                "INSERT INTO facts VALUES (1, 'the heron project')")
    result = init([str(tmp_path / "s.toml"), "--sqlite", str(store)])
    assert result.exit_code == 2 and result.output.strip().count("\n") == 0, result.output
    assert "facts, notes" in result.output and "--table facts" in result.output
    assert not (tmp_path / "s.toml").exists()
    settled = init([str(tmp_path / "s.toml"), "--sqlite", str(store), "--table", "notes"])
    assert settled.exit_code == 0, settled.output
    assert load_study(tmp_path / "s.toml").store.columns["text_col"] == "body"


def test_a_memory_table_beside_its_fts_index_and_other_tables_is_chosen_by_name(tmp_path: Path) -> None:
    store = _db(tmp_path / "app.db", "CREATE TABLE users (user_id INTEGER PRIMARY KEY, name TEXT)",
                "CREATE TABLE memories (uuid TEXT, user_id INTEGER, memory TEXT, created_at TIMESTAMP, "
                "updated_at TIMESTAMP)",
                "CREATE VIRTUAL TABLE memories_fts USING fts5(memory)",
                "INSERT INTO memories VALUES ('a', 1, 'the kestrel project', '2026-01-02', '2026-01-03')")
    result = init([str(tmp_path / "s.toml"), "--sqlite", str(store)])
    assert result.exit_code == 0, result.output
    columns = load_study(tmp_path / "s.toml").store.columns
    assert (columns["table"], columns["id_col"], columns["text_col"], columns["created_at_col"]) == (
        "memories", "uuid", "memory", "created_at")
    assert "memories_fts_data" not in result.output  # an FTS index's shadow tables are not offered


def test_two_unnamed_text_columns_are_one_line_naming_both_and_the_flag(tmp_path: Path) -> None:
    store = _db(tmp_path / "t.db", "CREATE TABLE memories (id INTEGER PRIMARY KEY, a TEXT, b TEXT)",
                "INSERT INTO memories VALUES (1, 'x', 'y')")
    result = init([str(tmp_path / "s.toml"), "--sqlite", str(store)])
    assert result.exit_code == 2 and result.output.strip().count("\n") == 0, result.output
    assert "(a, b)" in result.output and "--text-col a" in result.output


def test_a_flag_like_column_holding_other_values_is_refused_naming_it_and_the_two_flags(tmp_path: Path) -> None:
    store = _db(tmp_path / "p.db", "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, privacy TEXT)",
                "INSERT INTO memories VALUES (1, 'x', 'team')", "INSERT INTO memories VALUES (2, 'y', 'public')")
    result = init([str(tmp_path / "s.toml"), "--sqlite", str(store)])
    assert result.exit_code == 2 and result.output.strip().count("\n") == 0, result.output
    assert "'privacy'" in result.output and "--sensitive-col privacy" in result.output
    assert "--no-sensitive-col" in result.output


@pytest.mark.parametrize("kind", ["missing", "folder", "text", "unreadable"])
def test_a_store_that_is_no_sqlite_file_is_one_line_naming_the_path(tmp_path: Path, kind: str) -> None:
    import os

    path = tmp_path / "nope.db"
    if kind == "folder":
        path.mkdir()
    elif kind in ("text", "unreadable"):
        path.write_text("id,content\n1,hello\n")
    if kind == "unreadable":
        path.chmod(0)
        if os.access(path, os.R_OK):
            pytest.skip("running as a user who reads every file")
    result = init([str(tmp_path / "s.toml"), "--sqlite", str(path)])
    assert result.exit_code == 2 and result.output.strip().count("\n") == 0, result.output
    assert result.output.startswith(f"Error: {path}: ") and "unexpected" not in result.output
    assert not (tmp_path / "s.toml").exists()


def test_a_store_whose_rows_repeat_ids_or_hold_none_is_one_line_at_init_and_at_run(tmp_path: Path) -> None:
    """Rows that repeat an id were dropped silently (30 rows read as 10 memories): which row is the
    memory a label names? Refused, naming the table and the column. A table with no row a study
    can read is said at init, not at the first step; generators that make no query say so."""
    repeated = _db(tmp_path / "r.db", "CREATE TABLE memories (id TEXT, content TEXT)",
                   *(f"INSERT INTO memories VALUES ('{n % 10}', 'memory {n} about the garden shed')" for n in range(30)))
    said = init([str(tmp_path / "r.toml"), "--sqlite", str(repeated)])
    assert said.exit_code == 2 and said.output.strip() == (
        "Error: r.db: table 'memories': 20 rows repeat the id of an earlier row in column 'id'; a memory's id names "
        "one row: choose a column of unique ids (study init --id-col, [store] id_col).")
    assert not (tmp_path / "r.toml").exists()
    unreadable = _db(tmp_path / "u.db", "CREATE TABLE memories (id TEXT, content TEXT)",
                     "INSERT INTO memories VALUES (NULL, 'a memory without its id')",
                     "INSERT INTO memories VALUES ('2', NULL)")
    said = init([str(tmp_path / "u.toml"), "--sqlite", str(unreadable)])
    assert said.exit_code == 2 and said.output.strip() == (
        f"Error: {unreadable}: holds no memories that may be studied (2 rows left out: no readable id 1, no text 1).")
    assert not (tmp_path / "u.toml").exists()
    short = _db(tmp_path / "s.db", "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT)",
                *(f"INSERT INTO memories VALUES ({n}, 'note {n}')" for n in range(20)))
    assert init([str(tmp_path / "s.toml"), "--sqlite", str(short)]).exit_code == 0
    text = (tmp_path / "s.toml").read_text()
    (tmp_path / "s.toml").write_text(text.split("\n[[systems]]")[0] + "\n" + LEXICAL_PAIR)
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        run = invoke_cli(["study", "run", str(tmp_path / "s.toml")])
    assert run.exit_code == 2 and run.output.strip().splitlines()[-1].startswith(
        "Error: the query generators asked (exact 20) made no query from the 20 memories")
