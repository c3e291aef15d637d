"""A live store holds more than the snapshot (the sensitive memories recall-kit leaves out, newer
ones): its hits outside the corpus are counted as unjudged, non-relevant hits, the sensitive ones
are a privacy finding (ids only), `--fail-on-sensitive` makes them exit 1, and `pool` offers them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from http_server import SearchServer
from memory_store import MemoryStore
from remote_helpers import EXAMPLE, run_cli

from recall_kit import load_dataset, load_result, run_benchmark

CANARY = "CANARY-71c2-never-printed"


@pytest.fixture
def store_folder(tmp_path: Path) -> Path:
    """The example store with a canary in every sensitive memory's text."""
    folder = tmp_path / "memories"
    shutil.copytree(EXAMPLE, folder)
    rows = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        if row.get("is_sensitive"):
            row["content"] += f" {CANARY}"
    (folder / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def expected_outside(store: MemoryStore, folder: Path, depth: int) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Per query, the server's own top `depth` ids the dataset does not hold, and the sensitive ones."""
    dataset = load_dataset(str(folder))
    outside, sensitive = {}, {}
    for query in dataset.queries:
        ids = [hit["id"] for hit in store.search(query.text, depth)]
        foreign = [doc for doc in ids if doc not in dataset.corpus]
        if foreign:
            outside[query.query_id] = len(foreign)
        if [doc for doc in foreign if doc in dataset.sensitive_ids]:
            sensitive[query.query_id] = [doc for doc in foreign if doc in dataset.sensitive_ids]
    return outside, sensitive


def test_a_plain_service_holding_everything_evaluates_to_completion(tmp_path: Path, store_folder: Path) -> None:
    store = MemoryStore.from_store(str(store_folder))
    out = tmp_path / "http.json"
    with SearchServer(store) as server:
        done = run_cli("eval", "--dataset", str(store_folder), "-r", "http", "-o", f"http.url={server.url}",
                       "--json", str(out))
    assert done.returncode == 0, done.stderr
    result = load_result(out)
    outside, sensitive = expected_outside(store, store_folder, result.depth)
    found = result.outside_corpus["http"]
    assert sensitive and found.queries == outside and found.sensitive == sensitive
    assert found.hits == sum(outside.values())
    assert result.sensitive_hits == sum(len(ids) for ids in sensitive.values())
    assert result.warnings[0].startswith(f"PRIVACY: leg 'http' returned {result.sensitive_hits} sensitive memor")
    assert f"PRIVACY: {result.sensitive_hits} sensitive memor" in done.stderr
    assert (done.stdout + done.stderr).count("PRIVACY") == 1  # once, not in the report's notes and table too
    assert "Hits outside the corpus" in done.stdout
    # Unknown ids keep their rank as unjudged, non-relevant hits: recall@10 worked out by hand on
    # the rankings as returned (unknown ids included) is the result's.
    dataset = load_dataset(str(store_folder))
    assert any(doc not in dataset.corpus for ranking in result.rankings().values() for doc in ranking)
    for query_id, ranking in result.rankings().items():
        relevant = {doc for doc, grade in dataset.qrels[query_id].items() if grade >= 1}
        by_hand = len(relevant & set(ranking[:10])) / len(relevant)
        assert result.per_query("recall@10")[query_id] == pytest.approx(by_hand, abs=1e-6)
    for text in (done.stdout, done.stderr, out.read_text()):
        assert CANARY not in text


def test_fail_on_sensitive_exits_1_with_one_line(tmp_path: Path, store_folder: Path) -> None:
    store = MemoryStore.from_store(str(store_folder))
    out = tmp_path / "http.json"
    with SearchServer(store) as server:
        done = run_cli("eval", "--dataset", str(store_folder), "-r", "http", "-o", f"http.url={server.url}",
                       "--json", str(out), "--fail-on-sensitive")
    assert done.returncode == 1
    count = load_result(out).sensitive_hits  # the result is still written: the verdict is about it
    failed = [line for line in done.stderr.splitlines() if line.startswith("Failed:")]
    assert failed == [f"Failed: {count} sensitive memories surfaced (--fail-on-sensitive)."]


def test_fail_on_sensitive_passes_a_clean_service(tmp_path: Path, store_folder: Path) -> None:
    with SearchServer(MemoryStore.from_dataset(str(store_folder))) as server:
        done = run_cli("eval", "--dataset", str(store_folder), "-r", "http", "-o", f"http.url={server.url}",
                       "--fail-on-sensitive", "--latency-sample", "0")
    assert done.returncode == 0, done.stderr
    assert "PRIVACY" not in done.stderr
    assert "Hits outside the corpus" not in done.stdout  # no all-zero table on a live run


def test_pool_offers_outside_and_sensitive_ids_without_text(tmp_path: Path, store_folder: Path) -> None:
    store = MemoryStore.from_store(str(store_folder))
    out = tmp_path / "http.json"
    with SearchServer(store) as server:
        assert run_cli("eval", "--dataset", str(store_folder), "-r", "http", "-o", f"http.url={server.url}",
                       "--json", str(out), "--latency-sample", "0").returncode == 0
    pool = tmp_path / "pool.jsonl"
    done = run_cli("pool", str(out), "--out", str(pool), "--dataset", str(store_folder), "--with-text")
    assert done.returncode == 0, done.stderr
    rows = {row["query_id"]: row for row in map(json.loads, pool.read_text().splitlines())}
    result = load_result(out)
    checked = 0
    for query_id, ids in result.outside_corpus["http"].sensitive.items():
        in_top = [doc for doc in ids if doc in result.rankings()[query_id][:10]]
        if in_top:
            checked += 1
            assert set(in_top) <= set(rows[query_id]["sensitive"]) <= set(rows[query_id]["doc_ids"])
            assert all(rows[query_id]["texts"][doc] is None for doc in in_top)
    assert checked
    assert CANARY not in pool.read_text() + done.stdout + done.stderr


def test_an_in_process_retriever_returning_an_unknown_id_still_ends_the_run(store_folder: Path) -> None:
    """The contract stays for retrievers that index only the corpus they are given: such an id is a bug."""
    from recall_kit.plugin import Hit, PluginRunError, Retriever

    class Inventing(Retriever):
        def build_index(self, corpus: object) -> None:
            pass

        def search(self, query: str, k: int) -> list[Hit]:
            return [Hit("invented", 1.0)]

    with pytest.raises(PluginRunError, match="not in the corpus it indexed"):
        run_benchmark(Inventing, load_dataset(str(store_folder)), k=5, latency_sample=0, show_progress=False)
