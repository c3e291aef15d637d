"""pg-fts against a real PostgreSQL server started by conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from recall_kit_postgres import PostgresFTS
from recall_kit_postgres.retriever import safe_dsn

from recall_kit import Corpus, Memory, RecallKitError, load_dataset, load_result, run_benchmark
from recall_kit.plugin import build_options

REPO = Path(__file__).resolve().parents[3]

SMALL = Corpus([
    Memory("1", "kestrel kestrel dashboard", importance=0.1),
    Memory("2", "dashboard", tags=("kestrel",), importance=0.9),
    Memory("3", "nothing here", expanded_keywords="kestrel", importance=0.5),
    Memory("4", "unrelated words", category="kestrel", importance=0.0),
    Memory("5", "the cats were running", importance=0.0),
])


def make(dsn: str, **options: object) -> PostgresFTS:
    return PostgresFTS(build_options("pg-fts", PostgresFTS.Options, {"dsn": dsn, **options}))


def tables(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {row[0] for row in rows}


def test_weighted_ranking_matches_hand_checked_order(pg_dsn):
    retriever = make(pg_dsn, allow_write=True, config="simple")
    retriever.build_index(SMALL)
    try:
        hits = retriever.search("kestrel", 10)
        # Field weights A (content) > B (category) > C (tags) > D (keywords); ts_rank_cd's default
        # weights are {D: 0.1, C: 0.2, B: 0.4, A: 1.0}: two A hits, then B, C, D.
        assert [hit.id for hit in hits] == ["1", "4", "2", "3"]
        scores = {hit.id: hit.score for hit in hits}
        assert scores["4"] == pytest.approx(0.4)
        assert scores["2"] == pytest.approx(0.2)
        assert scores["3"] == pytest.approx(0.1)
        assert scores["1"] > scores["4"]
        # websearch syntax: a quoted phrase needs adjacency, '-' excludes.
        assert [hit.id for hit in retriever.search('"kestrel dashboard"', 10)] == ["1"]
        assert retriever.search("dashboard -kestrel", 10) == []
        assert [hit.id for hit in retriever.search("kestrel", 2)] == ["1", "4"]
        assert retriever.search("zebra", 10) == []
        size = retriever.index_size_bytes()
        assert size is not None and size > 0
    finally:
        retriever.close()


def test_english_config_stems_and_simple_does_not(pg_dsn):
    for config, expected in (("english", ["5"]), ("simple", [])):
        retriever = make(pg_dsn, allow_write=True, config=config)
        retriever.build_index(SMALL)
        try:
            assert [hit.id for hit in retriever.search("cat runs", 5)] == expected
        finally:
            retriever.close()


def test_plain_parser_and_importance_blend(pg_dsn):
    plain = make(pg_dsn, allow_write=True, config="simple", parser="plain")
    plain.build_index(SMALL)
    try:
        # plainto_tsquery ANDs every word and ignores operators: "or" is just a word here.
        assert plain.search("kestrel or dashboard", 5) == []
        assert [h.id for h in plain.search("kestrel dashboard", 5)] == ["1", "2"]
    finally:
        plain.close()
    blended = make(pg_dsn, allow_write=True, config="simple", normalization=32, importance_weight=0.9)
    blended.build_index(SMALL)
    try:
        # With 90% of the score from importance, memory 2 (0.9) outranks memory 1 (0.1).
        assert [h.id for h in blended.search("kestrel", 2)] == ["2", "3"]
    finally:
        blended.close()


def test_own_table_is_temporary_on_an_external_server_and_dropped_on_close(pg_dsn):
    before = tables(pg_dsn)
    retriever = make(pg_dsn, allow_write=True)
    retriever.build_index(SMALL)
    # A temporary table: the server drops it when the session ends, even if recall-kit is killed.
    persistence = retriever.connection.execute(
        "SELECT relpersistence FROM pg_class WHERE oid = to_regclass(%s)", (retriever.table,)).fetchone()[0]
    assert persistence == "t"
    assert tables(pg_dsn) == before  # other sessions never see it
    assert [hit.id for hit in retriever.search("kestrel", 1)] == ["1"]
    retriever.close()
    kept = make(pg_dsn, allow_write=True, keep_table=True)
    kept.build_index(SMALL)
    kept.close()
    assert tables(pg_dsn) - before == {kept.table}
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        connection.execute(f'DROP TABLE "{kept.table}"')


def test_or_parser_matches_any_word_and_ands_do_not(pg_dsn):
    retriever = make(pg_dsn, allow_write=True, config="english", parser="or")
    retriever.build_index(SMALL)
    try:
        # "zebra" matches nothing: AND modes return nothing, OR ranks the kestrel rows.
        assert [hit.id for hit in retriever.search("zebra kestrel", 10)] == ["1", "4", "2", "3"]
        # Stemmed and stop words dropped, as to_tsvector does: "the cat ran" -> 'cat' | 'ran'.
        assert [hit.id for hit in retriever.search("the cat is running", 10)] == ["5"]
        assert retriever.search("the and of", 10) == []  # only stop words: no lexemes, no hits
        assert retriever.search("it's 'quoted' \\ & | !", 10) == []
    finally:
        retriever.close()
    for parser in ("websearch", "plain"):
        strict = make(pg_dsn, allow_write=True, parser=parser)
        strict.build_index(SMALL)
        try:
            assert strict.search("zebra kestrel", 10) == []
        finally:
            strict.close()


def test_existing_table_is_searched_read_only(pg_dsn):
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS prod_memories")
        connection.execute("CREATE TABLE prod_memories (mid integer, body text, weight real)")
        connection.execute("INSERT INTO prod_memories VALUES (1, 'kestrel uses clickhouse', 0.5), "
                           "(2, 'kestrel dashboard', 0.5), (99, 'kestrel secret row', 1)")
    corpus = Corpus([Memory("1", "kestrel uses clickhouse"), Memory("2", "kestrel dashboard")])
    retriever = make(pg_dsn, table="prod_memories", id_col="mid", text_col="body", category_col=None,
                     tags_col=None, keywords_col=None, importance_col="weight")
    retriever.build_index(corpus)
    try:
        # Row 99 is not in the dataset's corpus (e.g. a sensitive row): never returned.
        assert sorted(hit.id for hit in retriever.search("kestrel", 10)) == ["1", "2"]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            retriever.connection.execute("DELETE FROM prod_memories")
    finally:
        retriever.close()
    assert "prod_memories" in tables(pg_dsn)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "pg-fts would have to create a table of its own to load the corpus: pass -o pg-fts.allow_write=true"),
        ({"table": "no_such_table"}, "create table 'no_such_table', which does not exist"),
        ({"table": "prod_memories", "id_col": "mid", "text_col": "text"}, "Table 'prod_memories' has no column 'text'"),
    ],
)
def test_refusals_are_one_line(pg_dsn, options, message):
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS prod_memories (mid integer, body text, weight real)")
    retriever = make(pg_dsn, **options)
    with pytest.raises(RecallKitError) as error:
        retriever.build_index(SMALL)
    retriever.close()
    assert message in str(error.value) and "\n" not in str(error.value)


def test_connection_failures_are_one_line_and_never_show_a_password(tmp_path, pg_dsn):
    nowhere = make(f"postgresql://recall:hunter2@/postgres?host={tmp_path}")
    with pytest.raises(RecallKitError) as error:
        nowhere.build_index(SMALL)
    assert str(error.value).startswith("Cannot connect to PostgreSQL (postgresql://recall:***@/postgres")
    assert "hunter2" not in str(error.value) and "\n" not in str(error.value)
    keyword = make(f"host={tmp_path} port=5999 user=recall password=hunter2 dbname=postgres")
    with pytest.raises(RecallKitError) as error:
        keyword.build_index(SMALL)
    assert "password=***" in str(error.value) and "hunter2" not in str(error.value)
    malformed = make("host=x password=hunter2 nonsense")
    with pytest.raises(RecallKitError) as error:
        malformed.build_index(SMALL)
    assert "hunter2" not in str(error.value) and "\n" not in str(error.value)
    wrong_user = make(pg_dsn.replace("recall@", "mallory@"))
    with pytest.raises(RecallKitError, match='role "mallory" does not exist'):
        wrong_user.build_index(SMALL)
    assert safe_dsn("host=x password=secret user=y") == "host=x password=*** user=y"
    assert safe_dsn("host=x password='se cret' user=y") == "host=x password=*** user=y"
    assert safe_dsn("postgresql://u:p%40ss@h/db?password=zz") == "postgresql://u:***@h/db?password=***"


def test_no_dsn_starts_an_embedded_server_stopped_at_exit(monkeypatch):
    from recall_kit_postgres import server

    monkeypatch.delenv("RECALL_KIT_PG_DSN", raising=False)
    retriever = PostgresFTS()
    retriever.build_index(SMALL)
    try:
        assert retriever.embedded and retriever.index_stats()["embedded"] is True
        assert [hit.id for hit in retriever.search("kestrel", 1)] == ["1"]
        running = server.running_servers()
        assert len(running) == 1
        folder, pid = running[0].folder, running[0].pid
        assert folder is not None and folder.exists()
    finally:
        retriever.close()
    server.stop_embedded_servers()  # what atexit runs
    assert not folder.exists()
    assert not _alive(pid)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_strange_queries_never_raise(pg_dsn):
    retriever = make(pg_dsn, allow_write=True)
    retriever.build_index(SMALL)
    try:
        for query in ["", "   ", '"', "'", "a & b | !c", "kestrel:*", "(((", "NEAR(a b)", "\x00kestrel",
                      "😀 кестрел", "a" * 10000, "-", "OR", "<->", "\\"]:
            hits = retriever.search(query, 5)
            assert isinstance(hits, list) and len(hits) <= 5
    finally:
        retriever.close()


def test_runs_end_to_end_on_example_memories_without_writing_the_password(pg_dsn, tmp_path):
    out = tmp_path / "pg.json"
    env = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-postgres")
    # A key=value DSN with a password (trust authentication ignores it): never written anywhere.
    host = pg_dsn.partition("host=")[2]
    dsn = f"host={host} user=recall dbname=postgres password=hunter2"
    done = subprocess.run(
        [sys.executable, "-m", "recall_kit", "eval", "--dataset", "examples/memories", "--retriever", "pg-fts",
         "-o", f"pg-fts.dsn={dsn}", "-o", "pg-fts.allow_write=true", "--json", str(out)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "hunter2" not in text and "hunter2" not in done.stdout + done.stderr
    data = load_result(out)
    assert data.system.legs[0].options["dsn"].endswith("password=***")
    assert data.system.legs[0].plugin == "recall-kit-postgres"
    assert data.mean("recall@10", stratum="exact") > 0.5
    size = data.index.legs["pg-fts"].size_bytes
    assert size is not None and size > 0
    assert "paraphrase" in done.stdout
    assert not any(name.startswith("recall_kit_") for name in tables(pg_dsn))


def test_in_process_benchmark_with_registered_plugin(pg_dsn):
    import recall_kit_postgres

    from recall_kit.testing import registered_plugin

    with registered_plugin(recall_kit_postgres, name="recall-kit-postgres"):
        from recall_kit import SystemSpec

        spec = SystemSpec("pg-fts", options={"pg-fts": {"dsn": pg_dsn, "allow_write": "true"}})
        result = run_benchmark(spec, load_dataset(REPO / "examples" / "memories"), k=10, latency_sample=5)
    assert result.n_queries == 120
    assert result.latency.n == 5


def test_plugins_lists_it():
    env = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-postgres")
    done = subprocess.run([sys.executable, "-m", "recall_kit", "plugins"], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120)
    assert "recall-kit-postgres" in done.stdout
    for name in ("pg-fts", "pgvector", "pg-hybrid"):  # the last two as recall-kit-dense is installed
        assert name in done.stdout


def test_a_query_postgres_cannot_take_fails_that_query_not_the_run(pg_dsn, capsys):
    # Issue 32: a 100 KB query ("stack depth limit exceeded") failed the whole run.
    retriever = make(pg_dsn, allow_write=True)
    retriever.build_index(SMALL)
    try:
        assert retriever.search("kestrel " * 20_000, 5) == []
        assert "could not run a query (stack depth limit exceeded)" in capsys.readouterr().err
        assert [hit.id for hit in retriever.search("kestrel", 5)][:1] == ["1"]  # the session still works
    finally:
        retriever.close()
