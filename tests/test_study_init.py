"""`recall-kit study init`: a study file from an SQLite table, a dataset folder or a JSONL corpus;
and no sensitive row's text in any artefact of a study of an SQLite store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from study_support import LEXICAL_PAIR, plugins

from recall_kit.study import run_study
from recall_kit.study.config import load_study
from recall_kit.testing import invoke_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "memories"
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
    result = invoke_cli(["study", "init", str(tmp_path / "a.toml"), "--dataset", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    config = load_study(tmp_path / "a.toml")
    assert (config.store.kind, config.queries, config.decision_metrics) == ("dataset", "dataset", ["recall@5", "mrr@5"])
    result = invoke_cli(["study", "init", str(tmp_path / "b.toml"), "--jsonl", str(EXAMPLE / "corpus.jsonl")])
    assert result.exit_code == 0, result.output
    assert load_study(tmp_path / "b.toml").store.kind == "jsonl"
    again = invoke_cli(["study", "init", str(tmp_path / "b.toml"), "--jsonl", str(EXAMPLE / "corpus.jsonl")])
    assert again.exit_code == 2 and "exists" in again.output


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
    from recall_kit.study.steps import make_corpus, make_evaluation_set

    path = tmp_path / "study.toml"
    path.write_text(f'[store]\ndataset = "{EXAMPLE.as_posix()}"\n[evaluation_set]\nexact = 12\n'
                    '[[systems]]\nname = "a"\nretriever = "fts5"\n[[systems]]\nname = "b"\nretriever = "bm25"\n')
    config = load_study(path)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "set").mkdir()
    make_corpus(config, tmp_path / "corpus")
    make_evaluation_set(config, tmp_path / "corpus", tmp_path / "set")
    strata = json.loads((tmp_path / "set" / "strata.json").read_text())
    assert set(strata) == {"exact", "paraphrase", "multihop", "exact-generated"}
    assert strata["exact-generated"]["generated"] and not strata["exact"]["generated"]
    rows = [json.loads(line) for line in (tmp_path / "set" / "queries.jsonl").read_text().splitlines()]
    assert sum(1 for row in rows if row["stratum"] == "exact-generated") == 12
    assert sum(1 for row in rows if row["stratum"] == "exact") == 40


def test_a_jsonl_stores_sensitive_rows_are_dropped_before_the_corpus_is_written(tmp_path: Path) -> None:
    from recall_kit.study.steps import make_corpus

    rows = [json.loads(line) for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines()]
    rows.append({"id": 9999, "content": f"The {CANARY} is here.", "is_sensitive": "yes"})
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "study.toml").write_text('[store]\njsonl = "corpus.jsonl"\n[evaluation_set]\nqueries = "generated"\n'
                                         'exact = 5\n' + LEXICAL_PAIR)
    (tmp_path / "corpus").mkdir()
    make_corpus(load_study(tmp_path / "study.toml"), tmp_path / "corpus")
    written = (tmp_path / "corpus" / "corpus.jsonl").read_text()
    assert CANARY not in written and "Brightmoor" in written
    assert json.loads((tmp_path / "corpus" / "corpus.json").read_text())["sensitive_dropped"] == 4
