"""Standard formats out: an eval run scores the same in pytrec_eval and `recall-kit score`, and
`dataset export` writes TREC and BEIR files that import back to the same dataset."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall_kit import Corpus, Hit, Retriever, hookimpl, load_result
from recall_kit.cli import app
from recall_kit.curate.export import export_dataset
from recall_kit.curate.importers import import_dataset
from recall_kit.dataset import load_dataset, read_dataset
from recall_kit.errors import RecallKitError
from recall_kit.testing import registered_plugin

pytrec_eval = pytest.importorskip("pytrec_eval")


class WordOverlapRetriever(Retriever):
    """Score = number of distinct query words in the memory; many ties on purpose."""

    @dataclass(frozen=True)
    class Options:
        pass

    def build_index(self, corpus: Corpus) -> None:
        self.index = [(m.id, set(re.findall(r"\w+", m.content.lower()))) for m in corpus]

    def search(self, query: str, k: int) -> list[Hit]:
        terms = set(re.findall(r"\w+", query.lower()))
        hits = [Hit(doc, float(len(terms & words))) for doc, words in self.index if terms & words]
        hits.sort(key=lambda hit: -hit.score)  # ties left in corpus order: the runner orders them
        return hits[:k]


class _Plugin:
    @hookimpl
    def register_retrievers(self, register):  # type: ignore[no-untyped-def]
        register("export-overlap", WordOverlapRetriever)


CORPUS = [
    {"id": "a1", "content": "red apple pie recipe"},
    {"id": "a2", "content": "green apple tart"},
    {"id": "a3", "content": "apple orchard visit"},
    {"id": "b1", "content": "banana bread recipe"},
    {"id": "b2", "content": "banana split"},
    {"id": "c1", "content": "cherry pie"},
]
QUERIES = [
    {"query_id": "q1", "text": "apple pie", "stratum": "s"},
    {"query_id": "q2", "text": "banana recipe", "stratum": "s"},
    {"query_id": "q3", "text": "green tart", "stratum": "t"},
    {"query_id": "q4", "text": "plum", "stratum": "t"},
]
QRELS = [
    {"query_id": "q1", "relevance": {"a1": 2, "a3": 1, "c1": 0, "b1": 0}},
    {"query_id": "q2", "relevant_ids": ["b2", "a2"]},
    {"query_id": "q3", "relevant_ids": ["a2"]},
    {"query_id": "q4", "relevant_ids": ["c1"]},
]
# recall-kit name -> pytrec_eval measure
MEASURES = {
    "map": "map", "mrr": "recip_rank", "precision@5": "P_5", "recall@5": "recall_5",
    "ndcg@5": "ndcg_cut_5", "r_precision": "Rprec", "hit@5": "success_5", "ndcg@10": "ndcg_cut_10",
}


def write_tiny(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name, rows in (("corpus", CORPUS), ("queries", QUERIES), ("qrels", QRELS)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.fixture
def overlap_registered():
    with registered_plugin(_Plugin(), name="test-export-overlap") as plugin:
        yield plugin


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


def test_eval_run_scores_the_same_in_pytrec_eval_and_score(tmp_path: Path, overlap_registered) -> None:
    data = write_tiny(tmp_path / "tiny")
    run_file, result_file = tmp_path / "run.trec", tmp_path / "result.json"
    names = ",".join(MEASURES)
    invoke("eval", "-d", str(data), "-r", "export-overlap", "-k", "10", "-m", names,
           "--run", str(run_file), "--json", str(result_file), "--latency-sample", "0", "--no-progress")
    # Ties are written in trec_eval's order: score descending, then document id descending.
    lines = run_file.read_text(encoding="utf-8").splitlines()
    assert [line.split()[2] for line in lines if line.startswith("q1 ")] == ["a1", "c1", "a3", "a2"]
    assert [line.split()[2] for line in lines if line.startswith("q2 ")] == ["b1", "b2", "a1"]
    assert not any(line.startswith("q4 ") for line in lines)

    invoke("dataset", "export", "--format", "trec", str(data), str(tmp_path / "trec"))
    qrels_file = tmp_path / "trec" / "qrels.txt"
    score_file = tmp_path / "score.json"
    invoke("score", "--qrels", str(qrels_file), "--run", str(run_file), "-m", names, "--json", str(score_file))
    scored = json.loads(score_file.read_text(encoding="utf-8"))

    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_file.read_text(encoding="utf-8").splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()))
    reference = evaluator.evaluate(read_run(run_file))
    assert sorted(reference) == sorted(scored["queries"]) == ["q1", "q2", "q3"]
    result = load_result(result_file)
    ours = {query.query_id: query.metrics for query in result.queries}
    for qid, measures in reference.items():
        for name, measure in MEASURES.items():
            assert scored["queries"][qid][name] == pytest.approx(measures[measure], abs=1e-9), (qid, name)
            assert ours[qid][name] == pytest.approx(measures[measure], abs=1e-6), (qid, name)
    # By hand, q1: a1 (2) c1 (0) a3 (1) a2: AP = (1/1 + 2/3) / 2; P@5 = 2/5.
    assert scored["queries"]["q1"]["map"] == pytest.approx((1 + 2 / 3) / 2)
    assert scored["queries"]["q1"]["precision@5"] == pytest.approx(0.4)
    # q2: b1 (unjudged) b2 (1) a1: AP = (1/2) / 2 (a2 never found); RR = 1/2.
    assert scored["queries"]["q2"]["map"] == pytest.approx(0.25)
    assert scored["queries"]["q2"]["mrr"] == pytest.approx(0.5)
    assert scored["overall"]["map"] == pytest.approx(((1 + 2 / 3) / 2 + 0.25 + 1.0) / 3)
    # eval averages over every query (q4 scores 0); score -c does the same.
    complete_file = tmp_path / "complete.json"
    invoke("score", "--qrels", str(qrels_file), "--run", str(run_file), "-m", "map", "--complete", "--json", str(complete_file))
    complete = json.loads(complete_file.read_text(encoding="utf-8"))
    assert complete["overall"]["map"] == pytest.approx(result.mean("map"), abs=1e-6)
    assert complete["overall"]["map"] == pytest.approx(((1 + 2 / 3) / 2 + 0.25 + 1.0 + 0.0) / 4)


def test_trec_export_round_trips(tmp_path: Path) -> None:
    data = write_tiny(tmp_path / "tiny")
    original = load_dataset(data)
    counts = export_dataset(original, tmp_path / "trec", "trec")
    # Only the strata are set in the tiny dataset beyond ids and texts: 4 queries' strata left out.
    assert counts == {"format": "trec", "documents": 6, "queries": 4, "judgments": 8,
                      "not_representable": {"query_stratum": 4}}
    assert sorted(p.name for p in (tmp_path / "trec").iterdir()) == ["corpus.jsonl", "qrels.txt", "topics.tsv"]
    assert (tmp_path / "trec" / "topics.tsv").read_text(encoding="utf-8").splitlines()[0] == "q1\tapple pie"
    imported = import_dataset("trec", tmp_path / "trec", tmp_path / "back")
    assert imported["dropped"] == {}
    back = load_dataset(tmp_path / "back")
    assert back.qrels == original.qrels
    assert [(q.query_id, q.text) for q in back.queries] == [(q.query_id, q.text) for q in original.queries]
    assert [(m.id, m.content) for m in back.corpus] == [(m.id, m.content) for m in original.corpus]


def test_beir_export_round_trips_and_refuses_non_empty(tmp_path: Path) -> None:
    data = write_tiny(tmp_path / "tiny")
    original = load_dataset(data)
    export_dataset(original, tmp_path / "beir", "beir", split="dev")
    assert (tmp_path / "beir" / "qrels" / "dev.tsv").read_text(encoding="utf-8").splitlines()[:2] == [
        "query-id\tcorpus-id\tscore", "q1\ta1\t2"]
    counts = import_dataset("beir", tmp_path / "beir", tmp_path / "back", {"split": "dev"})
    assert (counts["memories"], counts["queries"], counts["judgments"], counts["dropped"]) == (6, 4, 8, {})
    back, problems = read_dataset(tmp_path / "back")
    assert problems == [] and back.qrels == original.qrels
    with pytest.raises(RecallKitError, match="not empty; pass --force"):
        export_dataset(original, tmp_path / "beir", "beir")
    export_dataset(original, tmp_path / "beir", "trec", force=True)
    assert not (tmp_path / "beir" / "qrels").exists()
    with pytest.raises(RecallKitError, match="Unknown export format 'csv'"):
        export_dataset(original, tmp_path / "x", "csv")


def test_ids_with_spaces_cannot_be_exported(tmp_path: Path) -> None:
    folder = tmp_path / "spaced"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"id": "a b", "content": "x"}\n', encoding="utf-8")
    (folder / "queries.jsonl").write_text('{"query_id": "q", "text": "x"}\n', encoding="utf-8")
    (folder / "qrels.jsonl").write_text('{"query_id": "q", "relevant_ids": ["a b"]}\n', encoding="utf-8")
    with pytest.raises(RecallKitError, match="document id 'a b' is empty or has whitespace"):
        export_dataset(load_dataset(folder), tmp_path / "out", "trec")
    assert not (tmp_path / "out").exists()


def test_beir_export_keeps_every_memory_field_and_stratum_in_its_metadata(tmp_path: Path) -> None:
    # Before, a round trip lost category, tags, keywords and importance (fts5 recall@10 on the
    # example 0.6826 -> 0.5708) and every stratum became "test".
    from recall_kit.dataset import example_datasets

    original = load_dataset(example_datasets()["memories"])
    counts = export_dataset(original, tmp_path / "beir", "beir")
    assert counts["not_representable"] == {}
    import_dataset("beir", tmp_path / "beir", tmp_path / "back")
    back = load_dataset(tmp_path / "back")
    assert list(back.corpus) == list(original.corpus)
    assert [(q.query_id, q.text, q.stratum, q.scope) for q in back.queries] == [
        (q.query_id, q.text, q.stratum, q.scope) for q in original.queries]
    assert back.qrels == original.qrels


def test_trec_export_says_on_stderr_what_it_left_out(tmp_path: Path) -> None:
    from recall_kit.dataset import example_datasets

    result = CliRunner().invoke(app, ["dataset", "export", str(example_datasets()["memories"]), str(tmp_path / "t")])
    assert result.exit_code == 0, result.output
    assert ("warning: trec cannot hold these fields, left out: memory_category (337 rows), memory_tags (337 rows), "
            "memory_expanded_keywords (337 rows), memory_importance (337 rows), memory_created_at (337 rows), "
            "query_stratum (120 rows); --format beir keeps them in its metadata.") in result.stderr
    assert "not_representable.memory_category: 337" in result.stdout


def test_beir_metadata_of_other_datasets_is_left_alone_and_a_bad_value_counted(tmp_path: Path) -> None:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "text": "t", "metadata": {"url": "u", "pubmed_id": 5, "importance": "high"}}) + "\n"
        + json.dumps({"_id": "d2", "text": "u", "metadata": {"category": "c", "tags": ["a"]}}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "t"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    counts = import_dataset("beir", folder, tmp_path / "back")
    assert counts["dropped"] == {"metadata_values_ignored": 1}
    back = load_dataset(tmp_path / "back")
    assert [(m.id, m.category, m.tags, m.importance) for m in back.corpus] == [
        ("d1", "", (), None), ("d2", "c", ("a",), None)]
    assert [q.stratum for q in back.queries] == ["test"]
