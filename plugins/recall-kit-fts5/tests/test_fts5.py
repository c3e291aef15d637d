"""The fts5 retriever: bm25 scores by hand, production mode's AND/OR/blend/LIKE, disk reuse, options."""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path

import pytest
import recall_kit_fts5
from recall_kit_fts5 import FTS5Retriever
from recall_kit_fts5.database import APPLICATION_ID, fts5_unavailable

from recall_kit import Corpus, Hit, Memory, RecallKitError, SystemSpec, build_system
from recall_kit.plugin import OptionError
from recall_kit.testing import registered_plugin, registries

Options = FTS5Retriever.Options

FRUIT = Corpus([
    Memory(id="1", content="apple banana", importance=0.2),
    Memory(id="2", content="apple cherry cherry", importance=0.9),
    Memory(id="3", content="date", importance=None),
    Memory(id="4", content="elder fig"),
    Memory(id="5", content="grape", importance=0.4),
])


@pytest.fixture
def plugin():
    with registered_plugin(recall_kit_fts5, name="recall-kit-fts5-under-test"):
        yield


def built(corpus: Corpus = FRUIT, **options) -> FTS5Retriever:
    retriever = FTS5Retriever(Options(**options))
    retriever.build_index(corpus)
    return retriever


def fts5_bm25(f: float, doc_len: int, avgdl: float, n: int, docs_with_term: int) -> float:
    """FTS5's bm25() for one phrase, negated (k1 = 1.2, b = 0.75, idf floored at 1e-6)."""
    idf = math.log((n - docs_with_term + 0.5) / (docs_with_term + 0.5))
    idf = max(idf, 1e-6)
    return idf * (f * 2.2) / (f + 1.2 * (1 - 0.75 + 0.75 * doc_len / avgdl))


# -- mode=bm25 -----------------------------------------------------------------------------------

def test_bm25_scores_by_hand() -> None:
    retriever = built()
    avgdl = (2 + 3 + 1 + 2 + 1) / 5
    hits = retriever.search("cherry", 10)
    assert [hit.id for hit in hits] == ["2"]
    assert hits[0].score == pytest.approx(fts5_bm25(2, 3, avgdl, 5, 1), rel=1e-12)
    # OR over the words: "apple" (2 docs) and "grape" (1 doc), each scored on its own.
    hits = retriever.search("grape apple", 10)
    assert [hit.id for hit in hits] == ["5", "1", "2"]
    assert hits[0].score == pytest.approx(fts5_bm25(1, 1, avgdl, 5, 1), rel=1e-12)
    assert hits[1].score == pytest.approx(fts5_bm25(1, 2, avgdl, 5, 2), rel=1e-12)
    assert hits[2].score == pytest.approx(fts5_bm25(1, 3, avgdl, 5, 2), rel=1e-12)


def test_column_weights_change_the_ranking() -> None:
    corpus = Corpus([
        Memory(id="a", content="visa notes for the trip"),
        Memory(id="b", content="packing list", tags=("visa",)),
        Memory(id="c", content="unrelated"),
        Memory(id="d", content="other"),
    ])
    plain = built(corpus)
    # Same frequency; "b" is shorter (3 tokens against 5), so it leads with equal weights.
    assert [hit.id for hit in plain.search("visa", 5)] == ["b", "a"]
    content_first = built(corpus, content_weight=10.0)
    assert [hit.id for hit in content_first.search("visa", 5)] == ["a", "b"]
    tags_off = built(corpus, columns=("content", "category", "keywords"))
    assert [hit.id for hit in tags_off.search("visa", 5)] == ["a"]


def test_every_field_is_indexed() -> None:
    corpus = Corpus([
        Memory(id="1", content="alpha", category="finance"),
        Memory(id="2", content="beta", tags=("travel", "visa")),
        Memory(id="3", content="gamma", expanded_keywords="passport renewal"),
        Memory(id="4", content="delta"),
    ])
    retriever = built(corpus)
    assert [hit.id for hit in retriever.search("finance", 5)] == ["1"]
    assert [hit.id for hit in retriever.search("visa", 5)] == ["2"]
    assert [hit.id for hit in retriever.search("passport", 5)] == ["3"]


def test_tokenizers() -> None:
    corpus = Corpus([Memory(id="1", content="running meetings"),
                     Memory(id="2", content="a fast runner"),
                     Memory(id="3", content="nothing"), Memory(id="4", content="else")])
    assert built(corpus).search("meeting", 5) == []
    assert [hit.id for hit in built(corpus, tokenizer="porter").search("meeting", 5)] == ["1"]
    # trigram matches substrings: "unn" is inside "running" and "runner".
    assert {hit.id for hit in built(corpus, tokenizer="trigram").search("unn", 5)} == {"1", "2"}
    # Words under three characters give the trigram tokenizer nothing: no hits, no error.
    assert built(corpus, tokenizer="trigram").search("ru", 5) == []


def test_no_match_empty_query_and_k() -> None:
    retriever = built()
    assert retriever.search("kiwi", 5) == []
    assert retriever.search("", 5) == []
    assert retriever.search("apple", 0) == []
    assert len(retriever.search("apple banana cherry date elder fig grape", 3)) == 3


def test_ties_are_ordered_by_id_descending() -> None:
    corpus = Corpus([Memory(id=i, content="same words") for i in ["10", "7", "9", "8"]]
                    + [Memory(id=f"x{i}", content="filler") for i in range(6)])
    hits = built(corpus).search("words", 3)
    assert [hit.id for hit in hits] == ["9", "8", "7"]
    assert len({hit.score for hit in hits}) == 1


# -- mode=production -----------------------------------------------------------------------------

def test_production_and_first() -> None:
    retriever = built(mode="production")
    hits = retriever.search("apple cherry", 5)
    # AND finds only "2"; one candidate scales to 1: 0.7 * 1 + 0.3 * 0.9.
    assert hits == [Hit("2", pytest.approx(0.7 + 0.3 * 0.9))]


def test_production_or_only_when_and_finds_nothing() -> None:
    production = built(mode="production")
    raw = {hit.id: hit.score for hit in built().search("apple date", 5)}  # -bm25() of the OR
    assert set(raw) == {"1", "2", "3"}
    low, high = min(raw.values()), max(raw.values())
    importance = {"1": 0.2, "2": 0.9, "3": 0.5}  # "3" has none: default_importance 0.5
    expected = {doc: 0.7 * (score - low) / (high - low) + 0.3 * importance[doc]
                for doc, score in raw.items()}
    hits = production.search("apple date", 5)
    assert [hit.id for hit in hits] == sorted(expected, key=expected.__getitem__, reverse=True)
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.id], abs=1e-12)


def test_production_weights_and_candidates() -> None:
    by_importance = built(mode="production", bm25_weight=0.0, importance_weight=1.0)
    assert [hit.id for hit in by_importance.search("apple", 5)] == ["2", "1"]
    by_text = built(mode="production", bm25_weight=1.0, importance_weight=0.0)
    assert [hit.id for hit in by_text.search("apple", 5)] == ["1", "2"]  # shorter row first
    # Only the best bm25() match is a candidate: "2" never gets its importance boost.
    one = built(mode="production", candidates=1)
    assert [hit.id for hit in one.search("apple", 5)] == ["1"]


def test_production_like_fallback_when_fts5_raises() -> None:
    retriever = built(mode="production")
    # FTS5 works: "1" (shorter, scaled 1) 0.7 + 0.3 * 0.2 over "2" (scaled 0) 0.3 * 0.9.
    assert [hit.id for hit in retriever.search("apple", 5)] == ["1", "2"]

    # A real FTS5 failure: SQLite refuses to read the FTS table, as a damaged or locked-down
    # store would. The retriever falls back to a LIKE scan of the memories table.
    def deny_fts(action, table, column, database, source):
        return sqlite3.SQLITE_DENY if table == "memories_fts" else sqlite3.SQLITE_OK

    retriever._connection.set_authorizer(deny_fts)
    with pytest.raises(sqlite3.DatabaseError):
        retriever._connection.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'x'")
    hits = retriever.search("APPLE chErry kiwi", 5)
    # Substring matches, ASCII case-insensitive: "2" has apple and cherry, "1" apple only.
    assert [hit.id for hit in hits] == ["2", "1"]
    assert hits[0].score == pytest.approx(0.7 * 2 / 3 + 0.3 * 0.9)
    assert hits[1].score == pytest.approx(0.7 * 1 / 3 + 0.3 * 0.2)
    # LIKE wildcards in a word are literal: "%" and "_" are not word characters anyway, and the
    # escape keeps them literal should a word ever contain one.
    assert retriever._like(retriever._connection, ["a%"], 5) == []
    # bm25 mode has no fallback: the failure surfaces (the runner reports it as one line).
    # (ranking=numpy reads FTS5 only while building, so the SQLite ranking is the one denied.)
    plain = built(ranking="sqlite")
    plain._connection.set_authorizer(deny_fts)
    with pytest.raises(sqlite3.DatabaseError):
        plain.search("apple", 5)


# -- on disk -------------------------------------------------------------------------------------

def test_disk_index_is_reused_while_the_key_matches(tmp_path: Path) -> None:
    path = tmp_path / "idx" / "fts5.sqlite"
    first = built(path=str(path))
    assert first.index_stats()["reused_from_disk"] is False
    assert path.exists()
    expected = first.search("apple cherry", 5)
    assert first.index_size_bytes() == path.stat().st_size
    first.close()
    mtime = path.stat().st_mtime_ns

    again = built(path=str(path), mode="production", content_weight=2.0)  # query-time options
    assert again.index_stats()["reused_from_disk"] is True
    assert path.stat().st_mtime_ns == mtime
    again.close()
    assert built(path=str(path)).search("apple cherry", 5) == expected

    changed = Corpus([*FRUIT, Memory(id="6", content="kiwi")])
    rebuilt = built(changed, path=str(path))
    assert rebuilt.index_stats()["reused_from_disk"] is False
    assert [hit.id for hit in rebuilt.search("kiwi", 5)] == ["6"]
    rebuilt.close()
    porter = built(changed, path=str(path), tokenizer="porter")
    assert porter.index_stats()["reused_from_disk"] is False
    porter.close()
    assert sorted(p.name for p in path.parent.iterdir()) == ["fts5.sqlite"]  # no temporaries


@pytest.mark.parametrize("foreign", ["text", "random", "user database"])
def test_a_file_recall_kit_did_not_write_is_refused_and_left_alone(tmp_path: Path, foreign: str) -> None:
    # Issue 37: a user's own SQLite database at fts5.path was "not a readable recall-kit index;
    # rebuilding it", and its table was gone. Only an empty file or one with the plugin's mark is
    # ever rewritten.
    path = tmp_path / "user.db"
    if foreign == "text":
        path.write_bytes(b"not a database at all")
    elif foreign == "random":
        path.write_bytes(os.urandom(8192))
    else:
        connection = sqlite3.connect(str(path))
        connection.execute("CREATE TABLE notes (x)")
        connection.executemany("INSERT INTO notes VALUES (?)", [(i,) for i in range(100)])
        connection.commit()
        connection.close()
    before = path.read_bytes()
    with pytest.raises(RecallKitError) as caught:
        built(path=str(path))
    message = str(caught.value)
    assert message.startswith(f"fts5.path {path}: not an index recall-kit wrote") and "\n" not in message
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["user.db"]


def test_an_empty_file_at_the_path_is_filled(tmp_path: Path) -> None:
    path = tmp_path / "fts5.sqlite"
    path.touch()
    retriever = built(path=str(path))
    assert retriever.index_stats()["reused_from_disk"] is False
    assert [hit.id for hit in retriever.search("grape", 5)] == ["5"]
    retriever.close()
    header = path.read_bytes()[:100]
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID


# -- stats, errors, registration -----------------------------------------------------------------

def test_index_size_and_stats() -> None:
    retriever = built(tokenizer="porter", mode="production")
    connection = sqlite3.connect(":memory:")
    assert retriever.index_size_bytes() % connection.execute("PRAGMA page_size").fetchone()[0] == 0
    assert retriever.index_size_bytes() > 0
    assert retriever.index_stats() == {"tokenizer": "porter", "mode": "production", "rows": 5,
                                       "columns": 4}
    retriever.close()
    assert retriever.index_size_bytes() is None
    with pytest.raises(RuntimeError):
        retriever.search("apple", 1)


def test_missing_fts5_or_tokenizer_is_a_one_line_error() -> None:
    connection = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError) as no_module:
        connection.execute("CREATE VIRTUAL TABLE t USING fts5_not_built_in(x)")
    message = str(fts5_unavailable(no_module.value, "unicode61"))
    assert "FTS5" in message and "\n" not in message
    with pytest.raises(sqlite3.OperationalError) as no_tokenizer:
        connection.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='nonesuch')")
    error = fts5_unavailable(no_tokenizer.value, "nonesuch")
    assert isinstance(error, RecallKitError) and "'nonesuch'" in str(error)


def test_registered_and_options_from_strings(plugin) -> None:
    assert registries()["retrievers"].get("fts5").obj is FTS5Retriever
    system = build_system(SystemSpec(retriever="fts5", options={"fts5": {
        "mode": "production", "tokenizer": "trigram", "columns": "content,tags",
        "tags_weight": "3", "candidates": "50", "path": "none"}}))
    assert system.legs[0].options == Options(mode="production", tokenizer="trigram",
                                             columns=("content", "tags"), tags_weight=3.0,
                                             candidates=50, path=None)


@pytest.mark.parametrize(
    ("key", "value"),
    [("mode", "fuzzy"), ("tokenizer", "icu"), ("columns", "content,body"), ("columns", ""),
     ("columns", "tags,tags"), ("bm25_weight", "-1"), ("candidates", "0"), ("colour", "x")],
)
def test_bad_options_are_one_line_errors(plugin, key: str, value: str) -> None:
    with pytest.raises(OptionError) as error:
        build_system(SystemSpec(retriever="fts5", options={"fts5": {key: value}}))
    assert "\n" not in str(error.value)


def _flip_bytes(path: Path, count: int, start: int) -> None:
    data = bytearray(path.read_bytes())
    for offset in range(start, min(start + count, len(data))):
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_corrupt_index_on_disk_is_detected_and_rebuilt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 64 flipped bytes at the end of a page (where SQLite keeps cell content) or a changed row:
    # the file keeps its index key, so only a check of its content can tell it must not be reused.
    # Every page in turn: a corrupt file is either rebuilt, or (the bytes were unused) answers the same.
    path = tmp_path / "fts5.sqlite"
    queries = ["apple cherry", "banana", "cherry pie"]
    first = built(path=str(path))
    expected = [first.search(q, 5) for q in queries]
    first.close()
    pristine = path.read_bytes()
    page = 4096
    rebuilt, checked = 0, 0
    for start in range(page, len(pristine), page):
        path.write_bytes(pristine)
        _flip_bytes(path, 64, start + page - 64)
        again = built(path=str(path))
        assert [again.search(q, 5) for q in queries] == expected, f"page at {start}"
        if again.index_stats()["reused_from_disk"] is False:
            rebuilt += 1  # its key was unreadable, or (counted below) its check failed
            checked += "failed its check" in capsys.readouterr().err
            sound = built(path=str(path))
            assert sound.index_stats()["reused_from_disk"] is True  # now sound
            sound.close()
        again.close()
    assert rebuilt >= 1 and checked >= 1
    capsys.readouterr()
    connection = sqlite3.connect(str(path))
    connection.execute("UPDATE memories SET doc_id = 'swapped' WHERE rowid = 1")
    connection.commit()
    connection.close()
    assert built(path=str(path)).index_stats()["reused_from_disk"] is False
    assert "rows differ from the corpus" in capsys.readouterr().err


def test_an_index_whose_fts_rows_were_deleted_is_rebuilt_with_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 32: with every FTS row deleted the file passes quick_check and integrity-check (its
    # index is empty but sound) and every ranking came back empty.
    path = tmp_path / "fts5.sqlite"
    expected = built(path=str(path)).search("banana", 5)
    assert expected
    connection = sqlite3.connect(str(path))
    connection.execute("INSERT INTO memories_fts (memories_fts) VALUES ('delete-all')")
    connection.commit()
    connection.close()
    again = built(path=str(path))
    assert again.index_stats()["reused_from_disk"] is False
    assert f"the index at {path} failed its check" in capsys.readouterr().err
    assert again.search("banana", 5) == expected


def test_a_truncated_index_file_is_named_when_rebuilt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Its first page, with the plugin's mark, survives: the file is known as an index and rebuilt.
    path = tmp_path / "fts5.sqlite"
    built(path=str(path)).close()
    path.write_bytes(path.read_bytes()[:1500])
    capsys.readouterr()
    again = built(path=str(path))
    assert again.index_stats()["reused_from_disk"] is False
    assert f"the file at {path} is not a readable recall-kit index; rebuilding it" in capsys.readouterr().err
    assert again.search("banana", 5)


def test_a_persisted_index_is_private(tmp_path: Path) -> None:
    path = tmp_path / "fts5.sqlite"
    built(path=str(path)).close()
    assert (path.stat().st_mode & 0o777) == 0o600


def test_a_path_that_is_a_folder_is_named(tmp_path: Path) -> None:
    # Issue 32: the error named a temporary file (IsADirectoryError: x.123.ab.tmp), or nothing.
    with pytest.raises(RecallKitError, match=f"fts5.path {tmp_path}: not a file"):
        built(path=str(tmp_path))


def test_an_index_that_cannot_be_written_names_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    def refuse(*args: object, **kwargs: object) -> int:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / "x.tmp"))

    monkeypatch.setattr(os, "open", refuse)
    target = tmp_path / "fts5.sqlite"
    with pytest.raises(RecallKitError, match=f"fts5.path {target}: cannot write the index \\(Permission denied\\)"):
        built(path=str(target))
