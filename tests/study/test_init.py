"""`recall-kit study init` (recall_kit.study.init): a study file from an SQLite table, a dataset folder
or a JSONL corpus; and no sensitive row's text in any artefact of a study of an SQLite store."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from study_support import LEXICAL_PAIR, plugins

from recall_kit.errors import DatasetError
from recall_kit.study import run_study
from recall_kit.study.config import load_study
from recall_kit.testing import invoke_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"
CANARY = "zephyrine canary ledger 7f3a"


def write_store(path: Path) -> Path:
    """The example corpus as a table (id, body, kind, labels, weight, private), one private row holding CANARY."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, body TEXT, kind TEXT, labels TEXT, weight REAL, "
               "private INTEGER)")
    for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        db.execute("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?)",
                   (row["id"], row["content"], row.get("category"), row.get("tags"), row.get("importance"),
                    int(bool(row.get("is_sensitive")))))
    db.execute("INSERT INTO memories VALUES (9999, ?, 'note', 'secret', 0.9, 1)",
               (f"The {CANARY} opens the drawer under the stairs.",))
    db.commit()
    db.close()
    return path


COLUMNS = ["--table", "memories", "--id-col", "id", "--text-col", "body", "--sensitive-col", "private",
           "--category-col", "kind", "--tags-col", "labels", "--importance-col", "weight"]


def test_init_from_sqlite_writes_a_study_that_loads(tmp_path: Path) -> None:
    store = write_store(tmp_path / "memories.db")
    with plugins("recall-kit-fts5"):  # init writes only what run accepts: the baseline's retriever is looked up
        result = invoke_cli(["study", "init", str(tmp_path / "study.toml"), "--sqlite", str(store), *COLUMNS,
                             "--hook-k", "3"])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "study.toml").read_text()
    assert "# 337 memories (4 sensitive rows left out)." in text and CANARY not in text
    config = load_study(tmp_path / "study.toml")
    assert config.store.kind == "sqlite" and config.store.columns["text_col"] == "body"
    assert config.decision_metrics == ["recall@3", "mrr@3"] and config.hook_k == 3
    assert config.queries == "generated" and config.exact == 50
    assert [s.name for s in config.systems][0] == config.baseline == "fts5"


def test_init_from_a_dataset_folder_and_a_jsonl_corpus(tmp_path: Path) -> None:
    with plugins("recall-kit-fts5"):
        result = invoke_cli(["study", "init", str(tmp_path / "a.toml"), "--dataset", str(EXAMPLE)])
        assert result.exit_code == 0, result.output
        config = load_study(tmp_path / "a.toml")
        assert (config.store.kind, config.queries, config.decision_metrics) == ("dataset", "dataset",
                                                                                ["recall@5", "mrr@5"])
        result = invoke_cli(["study", "init", str(tmp_path / "b.toml"), "--jsonl", str(EXAMPLE / "corpus.jsonl")])
        assert result.exit_code == 0, result.output
    assert load_study(tmp_path / "b.toml").store.kind == "jsonl"
    again = invoke_cli(["study", "init", str(tmp_path / "b.toml"), "--jsonl", str(EXAMPLE / "corpus.jsonl")])
    assert again.exit_code == 2 and "exists" in again.output


@pytest.mark.parametrize(("rows", "said"), [
    ([{"id": 1, "content": "a memory"}, {"id": 1, "content": "another"}], "c.jsonl:2: duplicate id 1 (first on line 1)"),
    ([{"id": 1, "content": None}], 'c.jsonl:1: "content" missing (memory 1)'),
], ids=["repeated id", "no content"])
def test_init_refuses_a_jsonl_corpus_the_run_would_refuse_naming_its_line(tmp_path: Path, rows: list[Any],
                                                                        said: str) -> None:
    """Before: init wrote a study of it and the run's first step refused the corpus."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with plugins("recall-kit-fts5"):
        result = invoke_cli(["study", "init", str(tmp_path / "s.toml"), "--jsonl", str(corpus)])
    assert result.exit_code == 2 and result.output.strip() == f"Error: {tmp_path}/{said}", result.output
    assert not (tmp_path / "s.toml").exists()


def test_init_names_a_missing_column_in_one_line(tmp_path: Path) -> None:
    store = write_store(tmp_path / "memories.db")
    result = invoke_cli(["study", "init", str(tmp_path / "s.toml"), "--sqlite", str(store), "--text-col", "text"])
    assert result.exit_code == 2
    assert "no column 'text'" in result.output and result.output.strip().count("\n") == 0
    assert not (tmp_path / "s.toml").exists()


STUDY = """
[study]
name = "private store"
folder = "out"
hook_k = 5
resamples = 200

[store]
sqlite = "memories.db"
table = "memories"
id_col = "id"
text_col = "body"
sensitive_col = "private"
importance_col = "weight"

[evaluation_set]
queries = "generated"
exact = 30
""" + LEXICAL_PAIR


def test_no_sensitive_text_reaches_any_artefact(tmp_path: Path) -> None:
    write_store(tmp_path / "memories.db")
    (tmp_path / "study.toml").write_text(STUDY)
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        study, _ = run_study(tmp_path / "study.toml")
    from recall_kit.study.result import CorpusSummary

    assert study.corpus == CorpusSummary("sqlite", 337, 4, 1.0)
    assert study.strata[0].built.startswith("generated from the corpus alone")
    files = [path for path in (tmp_path / "out").rglob("*") if path.is_file()]
    corpus = (tmp_path / "out" / "steps" / "corpus" / "corpus.jsonl").read_text()
    assert "Brightmoor" in corpus  # the check can see text: the store's other rows are there
    assert [path for path in files if CANARY.encode() in path.read_bytes()] == []
    assert [path for path in files if b"zephyrine" in path.read_bytes()] == []


def test_generated_exact_queries_stay_apart_from_the_stores_own_exact_stratum(tmp_path: Path) -> None:
    from recall_kit.study.pipeline.declare import Artefacts
    from recall_kit.study.pipeline.graph import StudyGraph
    from recall_kit.study.steps.corpus import corpus_reads, make_corpus
    from recall_kit.study.steps.evaluation_set import evaluation_set_reads, make_evaluation_set

    path = tmp_path / "study.toml"
    path.write_text(f'[store]\ndataset = "{EXAMPLE.as_posix()}"\n[evaluation_set]\nexact = 12\n'
                    '[[systems]]\nname = "a"\nretriever = "fts5"\n[[systems]]\nname = "b"\nretriever = "bm25"\n')
    config = load_study(path)
    graph = StudyGraph(tmp_path, [])
    graph.path("corpus").mkdir(parents=True)
    (tmp_path / "set").mkdir()
    make_corpus(corpus_reads(config), Artefacts(lambda: graph, "corpus", []), graph.path("corpus"))
    make_evaluation_set(evaluation_set_reads(config), Artefacts(lambda: graph, "evaluation-set", ["corpus"]),
                        tmp_path / "set")
    strata = json.loads((tmp_path / "set" / "strata.json").read_text())
    assert set(strata) == {"exact", "paraphrase", "multihop", "exact-generated"}
    assert strata["exact-generated"]["generated"] and not strata["exact"]["generated"]
    rows = [json.loads(line) for line in (tmp_path / "set" / "queries.jsonl").read_text().splitlines()]
    assert sum(1 for row in rows if row["stratum"] == "exact-generated") == 12
    assert sum(1 for row in rows if row["stratum"] == "exact") == 40


def test_a_jsonl_stores_sensitive_rows_are_dropped_before_the_corpus_is_written(tmp_path: Path) -> None:
    from recall_kit.study.steps.corpus import corpus_reads, make_corpus

    rows = [json.loads(line) for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines()]
    rows.append({"id": 9999, "content": f"The {CANARY} is here.", "is_sensitive": "yes"})
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "study.toml").write_text('[store]\njsonl = "corpus.jsonl"\n[evaluation_set]\nqueries = "generated"\n'
                                         'exact = 5\n' + LEXICAL_PAIR)
    (tmp_path / "corpus").mkdir()
    make_corpus(corpus_reads(load_study(tmp_path / "study.toml")), None, tmp_path / "corpus")  # type: ignore[arg-type]
    written = (tmp_path / "corpus" / "corpus.jsonl").read_text()
    assert CANARY not in written and "Brightmoor" in written
    assert json.loads((tmp_path / "corpus" / "corpus.json").read_text())["sensitive_dropped"] == 4


# -- issue 47's privacy first, issue 46's unreadable flags --------------------------------------------


def init_cli(args: list[str]) -> Any:
    """`study init` as the CLI runs it, with the baseline's retriever (fts5) registered: init writes
    only what run accepts, so the baseline is looked up."""
    with plugins("recall-kit-fts5"):
        return invoke_cli(args)


def write_flagged_store(path: Path, column: str = "is_sensitive", canary_flag: object = 1) -> Path:
    """The example corpus as a table (id, content, COLUMN, conversation) whose sensitivity flag is
    `column`, plus one row holding CANARY flagged `canary_flag`."""
    db = sqlite3.connect(path)
    db.execute(f"CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, {column} NUMERIC, conversation TEXT)")
    for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        db.execute("INSERT INTO memories VALUES (?, ?, ?, 'c1')",
                   (row["id"], row["content"], int(bool(row.get("is_sensitive")))))
    db.execute("INSERT INTO memories VALUES (9999, ?, ?, 'c1')",
               (f"The {CANARY} opens the drawer under the stairs.", canary_flag))
    db.commit()
    db.close()
    return path


def every_file_holding(root: Path, needle: str, skip: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and path != skip
            and needle.encode() in path.read_bytes()]


def test_init_maps_an_is_sensitive_column_it_finds_and_no_sensitive_text_reaches_any_artefact(tmp_path: Path) -> None:
    store = write_flagged_store(tmp_path / "store.db")
    result = init_cli(["study", "init", str(tmp_path / "study.toml"), "--sqlite", str(store),
                         "--table", "memories", "--id-col", "id"])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "study.toml").read_text()
    assert 'sensitive_col = "is_sensitive"' in text and "Sensitive column: is_sensitive (detected)" in text
    assert "(4 sensitive rows left out)" in text
    config = load_study(tmp_path / "study.toml")
    assert config.store.columns["sensitive_col"] == "is_sensitive"
    (tmp_path / "study.toml").write_text(text.replace("exact = 50", "exact = 20").replace(
        "resamples = 2000", "resamples = 50").split("\n[[systems]]")[0] + "\n" + LEXICAL_PAIR)
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        study, _ = run_study(tmp_path / "study.toml")
    assert study.corpus.sensitive_dropped == 4
    assert every_file_holding(tmp_path, CANARY, skip=store) == []
    assert every_file_holding(tmp_path, "Brightmoor", skip=store)  # the check can see text


def test_init_on_a_store_of_20_memories_writes_an_exact_count_the_run_accepts(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines()]
    small = [row for row in rows if not row.get("is_sensitive")][:20]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in small))
    result = init_cli(["study", "init", str(tmp_path / "study.toml"), "--jsonl", str(tmp_path / "corpus.jsonl")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "study.toml").read_text()
    assert re.search(r"^exact = 20 ", text, re.MULTILINE)  # not 50: at most one exact query per memory
    (tmp_path / "study.toml").write_text(text.replace("resamples = 2000", "resamples = 50").split("\n[[systems]]")[0]
                                         + "\n" + LEXICAL_PAIR)
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        study, _ = run_study(tmp_path / "study.toml")  # study run does not refuse what init wrote
    assert study.corpus.memories == 20 and 0 < sum(s.queries for s in study.strata) <= 20


def test_an_unnamed_look_alike_flag_of_0s_and_1s_is_mapped_and_one_of_other_values_refused(tmp_path: Path) -> None:
    # issue 70: `private` holding 0 and 1 is the flag (taking it drops rows, never keeps one): init
    # and the importer map it; a look-alike holding other values is refused, naming the two ways on.
    store = write_flagged_store(tmp_path / "store.db", column="private")
    result = init_cli(["study", "init", str(tmp_path / "s.toml"), "--sqlite", str(store)])
    assert result.exit_code == 0, result.output
    assert "Sensitive column: private (detected)" in (tmp_path / "s.toml").read_text()
    imported = invoke_cli(["dataset", "import", "sqlite", str(store), str(tmp_path / "ds"),
                           "--queries", str(EXAMPLE / "queries.jsonl"), "--qrels", str(EXAMPLE / "qrels.jsonl")])
    assert imported.exit_code == 0 and "sensitive_column: private (detected)" in imported.output
    assert CANARY not in (tmp_path / "ds" / "corpus.jsonl").read_text()
    levels = write_flagged_store(tmp_path / "levels.db", column="private", canary_flag="team-only")
    refused = init_cli(["study", "init", str(tmp_path / "t.toml"), "--sqlite", str(levels)])
    assert refused.exit_code == 2 and refused.output.strip().count("\n") == 0
    assert "'private'" in refused.output and "--sensitive-col private" in refused.output
    assert "--no-sensitive-col" in refused.output and not (tmp_path / "t.toml").exists()
    imported = invoke_cli(["dataset", "import", "sqlite", str(levels), str(tmp_path / "ds2"),
                           "--queries", str(EXAMPLE / "queries.jsonl"), "--qrels", str(EXAMPLE / "qrels.jsonl")])
    assert imported.exit_code == 2 and "--sensitive-col private" in imported.output
    assert not (tmp_path / "ds2").exists()
    named = init_cli(["study", "init", str(tmp_path / "t.toml"), "--sqlite", str(levels), "--sensitive-col",
                      "private"])
    assert named.exit_code == 2 and "row id 9999" in named.output  # named, its unreadable value still refused


def test_no_sensitive_col_says_the_table_has_none_and_unmapped_columns_are_reported(tmp_path: Path) -> None:
    store = write_flagged_store(tmp_path / "store.db", column="private")
    result = init_cli(["study", "init", str(tmp_path / "s.toml"), "--sqlite", str(store), "--no-sensitive-col"])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "s.toml").read_text()
    assert 'sensitive_col = ""' in text and "Columns not mapped: private, conversation." in text
    assert "(0 sensitive rows left out)" in text
    from recall_kit.study.steps.corpus import corpus_reads, make_corpus

    (tmp_path / "corpus").mkdir()
    make_corpus(corpus_reads(load_study(tmp_path / "s.toml")), None, tmp_path / "corpus")  # type: ignore[arg-type]  # the run does not refuse it either
    imported = invoke_cli(["dataset", "import", "sqlite", str(store), str(tmp_path / "ds"), "--no-sensitive-col",
                           "--queries", str(EXAMPLE / "queries.jsonl"), "--qrels", str(EXAMPLE / "qrels.jsonl")])
    assert imported.exit_code == 0, imported.output
    assert "sensitive_column: none" in imported.output
    assert "unmapped_columns: private, conversation" in imported.output
    both = init_cli(["study", "init", str(tmp_path / "t.toml"), "--sqlite", str(store), "--no-sensitive-col",
                       "--sensitive-col", "private"])
    assert both.exit_code == 2 and "contradict" in both.output


def test_init_takes_queries_qrels_and_scope_col_as_the_importer_does(tmp_path: Path) -> None:
    store = write_flagged_store(tmp_path / "store.db")
    result = init_cli(["study", "init", str(tmp_path / "s.toml"), "--sqlite", str(store), "--scope-col",
                         "conversation", "--queries", str(EXAMPLE / "queries.jsonl"), "--qrels",
                         str(EXAMPLE / "qrels.jsonl")])
    assert result.exit_code == 0, result.output
    config = load_study(tmp_path / "s.toml")
    assert config.store.columns["scope_col"] == "conversation"
    assert config.queries != "generated" and config.qrels == (EXAMPLE / "qrels.jsonl").resolve()
    assert config.exact == 0
    half = init_cli(["study", "init", str(tmp_path / "t.toml"), "--sqlite", str(store), "--queries",
                       str(EXAMPLE / "queries.jsonl")])
    assert half.exit_code == 2 and "go together" in half.output


@pytest.mark.parametrize("flag", ["maybe", "2x"])
def test_an_unreadable_sqlite_flag_is_refused_naming_the_row(tmp_path: Path, flag: str) -> None:
    store = write_flagged_store(tmp_path / "store.db", canary_flag=flag)
    result = init_cli(["study", "init", str(tmp_path / "s.toml"), "--sqlite", str(store)])
    assert result.exit_code == 2 and "row id 9999" in result.output and repr(flag) in result.output
    assert result.output.strip().count("\n") == 0 and not (tmp_path / "s.toml").exists()
    imported = invoke_cli(["dataset", "import", "sqlite", str(store), str(tmp_path / "ds"),
                           "--queries", str(EXAMPLE / "queries.jsonl"), "--qrels", str(EXAMPLE / "qrels.jsonl")])
    assert imported.exit_code == 2 and "row id 9999" in imported.output and not (tmp_path / "ds").exists()
    (tmp_path / "study.toml").write_text(STUDY.replace('sensitive_col = "private"', 'sensitive_col = "is_sensitive"')
                                         .replace('text_col = "body"', 'text_col = "content"')
                                         .replace('importance_col = "weight"\n', "").replace("memories.db", "store.db"))
    with plugins("recall-kit-fts5", "recall-kit-bm25"), pytest.raises(DatasetError, match="row id 9999"):
        run_study(tmp_path / "study.toml")
    assert every_file_holding(tmp_path, CANARY, skip=store) == []


@pytest.mark.parametrize("flag", ["maybe", [1], {"x": 1}])
def test_an_unreadable_jsonl_flag_is_refused_naming_the_line_before_anything_is_written(tmp_path: Path,
                                                                                       flag: object) -> None:
    rows = [json.loads(line) for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines()]
    rows.append({"id": 9999, "content": f"The {CANARY} is here.", "is_sensitive": flag})
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "study.toml").write_text('[study]\nfolder = "out"\n[store]\njsonl = "corpus.jsonl"\n'
                                         '[evaluation_set]\nqueries = "generated"\nexact = 5\n' + LEXICAL_PAIR)
    with plugins("recall-kit-fts5", "recall-kit-bm25"), pytest.raises(DatasetError) as caught:
        run_study(tmp_path / "study.toml")
    assert f"corpus.jsonl:{len(rows)}: is_sensitive" in str(caught.value) and "\n" not in str(caught.value)
    assert every_file_holding(tmp_path / "out", CANARY, skip=tmp_path) == []
    assert not (tmp_path / "out" / "steps" / "corpus").exists()


def test_labels_of_sensitive_memories_are_dropped_and_counted(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import shutil

    store = tmp_path / "store"
    shutil.copytree(EXAMPLE, store)
    rows = [json.loads(line) for line in (store / "corpus.jsonl").read_text().splitlines()]
    sensitive = [str(row["id"]) for row in rows if row.get("is_sensitive")]
    qrels = [json.loads(line) for line in (store / "qrels.jsonl").read_text().splitlines()]
    qrels[0]["relevant_ids"] = [*qrels[0]["relevant_ids"], int(sensitive[0])]  # one label of a sensitive memory
    qrels[1]["relevant_ids"] = [int(sensitive[1])]  # a query whose only label is sensitive
    (store / "qrels.jsonl").write_text("".join(json.dumps(row) + "\n" for row in qrels))
    (tmp_path / "study.toml").write_text('[study]\nfolder = "out"\nresamples = 50\n[store]\ndataset = "store"\n'
                                         '[evaluation_set]\nqueries = "dataset"\n' + LEXICAL_PAIR)
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        run_study(tmp_path / "study.toml")
    evaluation = tmp_path / "out" / "steps" / "evaluation-set"
    assert json.loads((evaluation / "sensitive.json").read_text()) == {"labels_dropped": 2, "queries_dropped": 1,
                                                                       "file": "qrels.jsonl"}
    assert "2 judgment(s) dropped because their memory is sensitive" in capfd.readouterr().err
    # the document says it too (issue 60: "n=119 unexplained"), and from whose file
    assert ("2 labels naming sensitive memories dropped (2 from qrels.jsonl), 1 query left without labels "
            "dropped with them") in (tmp_path / "out" / "study.md").read_text()
    judged = (evaluation / "qrels.jsonl").read_text()
    assert all(f"{doc}" not in json.dumps([json.loads(line).get("relevant_ids") for line in judged.splitlines()])
               for doc in sensitive[:2])
    assert str(qrels[1]["query_id"]) not in (evaluation / "queries.jsonl").read_text()


def _store_with(path: Path, created: str) -> Path:
    """A store whose table has a creation-time column declared `created` ("created_at TIMESTAMP")."""
    db = sqlite3.connect(path)
    db.execute(f"CREATE TABLE memories (id INTEGER, content TEXT, {created})")
    db.execute("INSERT INTO memories VALUES (1, 'the kestrel project', '2026-01-02 10:00:00')")
    db.commit()
    db.close()
    return path


def test_init_maps_a_creation_time_column_it_recognises_or_names_the_flag(tmp_path: Path) -> None:
    # "Columns not mapped: created_at" though the importer has --created-at-col.
    store = _store_with(tmp_path / "store.db", "created_at TIMESTAMP")
    assert init_cli(["study", "init", str(tmp_path / "s.toml"), "--sqlite", str(store)]).exit_code == 0
    text = (tmp_path / "s.toml").read_text()
    assert 'created_at_col = "created_at"' in text and "Created-at column: created_at (detected" in text
    assert "Columns not mapped: none." in text
    assert load_study(tmp_path / "s.toml").store.columns["created_at_col"] == "created_at"
    odd = _store_with(tmp_path / "odd.db", "createdAt BLOB")
    assert init_cli(["study", "init", str(tmp_path / "o.toml"), "--sqlite", str(odd)]).exit_code == 0
    text = (tmp_path / "o.toml").read_text()
    assert "created_at_col" not in text.split("Columns not mapped")[1]
    assert "--created-at-col createdAt" in text and "Columns not mapped: createdAt." in text


def test_baseline_names_a_system_one_of_the_candidates_or_a_retriever(tmp_path: Path) -> None:
    # issue 70: `study init --baseline` took a retriever only; `--baseline hybrid` named none.
    with plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-dense", "recall-kit-fusion"):
        result = invoke_cli(["study", "init", str(tmp_path / "h.toml"), "--dataset", str(EXAMPLE),
                             "--baseline", "hybrid"])
        assert result.exit_code == 0, result.output
        config = load_study(tmp_path / "h.toml")
        assert config.baseline == "hybrid" and config.systems[0].name == "hybrid"
        assert config.systems[0].retriever == "bm25+dense" and config.systems[0].fusions == ["convex"]
        assert [s.name for s in config.systems].count("hybrid") == 1 and "fts5" in [s.name for s in config.systems]
        bad = invoke_cli(["study", "init", str(tmp_path / "x.toml"), "--dataset", str(EXAMPLE),
                          "--baseline", "no-such-thing"])
    assert bad.exit_code == 2 and "--baseline 'no-such-thing'" in bad.output and not (tmp_path / "x.toml").exists()


@pytest.mark.parametrize("where", ["/dev/null", "folder"])
def test_init_refuses_a_target_that_is_no_regular_file_even_with_force(tmp_path: Path, where: str) -> None:
    """Issue 72: `study init /dev/null --force` printed "Wrote /dev/null; next: recall-kit study run
    /dev/null" and exited 0."""
    target = where if where.startswith("/") else str(tmp_path / where)
    if not where.startswith("/"):
        (tmp_path / where).mkdir()
    with plugins("recall-kit-fts5"):
        result = invoke_cli(["study", "init", target, "--dataset", str(EXAMPLE), "--force"])
    assert result.exit_code == 2 and "Wrote" not in result.output
    assert f"{target}: is not a regular file" in result.stderr and len(result.stderr.strip().splitlines()) == 1
