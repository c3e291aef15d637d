"""The `http` retriever against a real search endpoint (the standard library's HTTP server)."""

from __future__ import annotations

import json
from pathlib import Path

from http_server import SearchServer
from memory_store import MemoryStore
from recall_kit_remote import HTTPRetriever
from remote_helpers import EXAMPLE, SERVERS, run_cli

from recall_kit import SystemSpec, load_dataset, load_result, run_benchmark
from recall_kit.testing import RetrieverConformance, write_scoped_dataset


def http_retriever() -> HTTPRetriever:
    return HTTPRetriever(HTTPRetriever.Options(url=SERVERS["http_sample"]))


class TestHTTPConformance(RetrieverConformance):
    retriever_factory = http_retriever
    searches_own_store = True  # the server holds the sample store


def test_same_rankings_and_metrics_as_the_fts5_leg() -> None:
    """Faithfulness: an endpoint wrapping the fts5 plugin's query scores exactly as the fts5 leg."""
    dataset = load_dataset(str(EXAMPLE))
    local = run_benchmark(SystemSpec(retriever="fts5"), dataset, k=10, latency_sample=5, show_progress=False)
    remote = run_benchmark(SystemSpec(retriever="http", options={"http": {"url": SERVERS["http_example"]}}),
                           dataset, k=10, latency_sample=5, show_progress=False)
    assert remote.rankings() == local.rankings()
    assert remote.means() == local.means()
    waited = remote.latency.leg("http")
    assert waited.wait is not None and waited.overhead is not None
    assert waited.wait.n == 5 and waited.overhead.n == 5
    assert 0 < waited.wait.stat("p50") <= waited.stat("p50")
    assert local.latency.leg("fts5").wait is None


def test_post_body_and_auth_header_never_written(tmp_path: Path, sample_folder: Path) -> None:
    token = "s3cr3t-token-value"
    with SearchServer(MemoryStore.from_dataset(str(sample_folder)), token=token) as server:
        out = tmp_path / "http_post.json"
        result = run_cli("eval", "--dataset", str(sample_folder), "-r", "http", "-o", f"http.url={server.url}",
                         "-o", "http.method=POST", "-o", 'http.body={"query": "{text}", "k": "{k}", "tag": "x-{k}"}',
                         "-o", "http.auth_env=MY_SEARCH_TOKEN", "--json", str(out),
                         env={"MY_SEARCH_TOKEN": token})
        assert result.returncode == 0, result.stderr
        seen, bodies = server.requests_seen, server.bodies_seen
    assert seen and all(request["authorization"] == f"Bearer {token}" for request in seen)
    # "{k}" alone becomes the number; inside a longer string it is substituted as text.
    assert bodies and all(body["k"] == 20 and body["tag"] == "x-20" and isinstance(body["query"], str)
                          for body in bodies)
    written = out.read_text()
    assert token not in written and token not in result.stdout and token not in result.stderr
    assert load_result(out).n_queries == 6


def test_unset_auth_variable_is_one_line(sample_folder: Path) -> None:
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "http", "-o", f"http.url={SERVERS['http_sample']}",
                     "-o", "http.auth_env=NOT_SET_ANYWHERE_42")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "NOT_SET_ANYWHERE_42" in result.stderr


def test_accepted_failed_queries_are_scored_empty_counted_and_named(tmp_path: Path, sample_folder: Path) -> None:
    folder = tmp_path / "flaky"
    folder.mkdir()
    for name in ("corpus.jsonl", "qrels.jsonl"):
        (folder / name).write_text((sample_folder / name).read_text())
    queries = [json.loads(line) for line in (sample_folder / "queries.jsonl").read_text().splitlines()]
    queries[0]["text"] += " status500"
    queries[1]["text"] += " notjson"
    queries[2]["text"] += " slow"
    (folder / "queries.jsonl").write_text("".join(json.dumps(query) + "\n" for query in queries))
    out = tmp_path / "flaky.json"
    result = run_cli("eval", "--dataset", str(folder), "-r", "http", "-o", f"http.url={SERVERS['http_sample']}",
                     "-o", "http.timeout=0.5", "-o", "http.tries=2", "--max-failed", "3", "--json", str(out))
    assert result.returncode == 0, result.stderr
    data = load_result(out)
    rankings = data.rankings()
    failed = [query["query_id"] for query in queries[:3]]
    assert all(rankings[query_id] == [] for query_id in failed)
    assert all(rankings[query["query_id"]] for query in queries[3:5])
    warning = next(w for w in data.warnings if w.startswith("Leg 'http' failed on 3 of 6 queries"))
    assert f"{failed[0]} (HTTP 500; 2 tries)" in warning
    assert f"{failed[1]} (the answer is not valid JSON (http.id_pattern reads text); not retried)" in warning
    assert f"{failed[2]} (no answer within 0.5 s; 2 tries)" in warning
    assert data.index.legs["http"].stats["failed_queries"] == 3
    assert sorted(data.failed_queries["http"]) == sorted(failed)
    assert "boom" not in result.stdout + result.stderr + out.read_text()  # what the server said stays unprinted


def test_unreachable_server_is_one_line_exit_2_no_file(tmp_path: Path, sample_folder: Path) -> None:
    from remote_helpers import free_port

    url = f"http://127.0.0.1:{free_port()}/search"
    out = tmp_path / "never.json"
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "http", "-o", f"http.url={url}",
                     "--json", str(out))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and url in result.stderr
    assert not out.exists()


def test_fuses_with_a_local_leg(sample_folder: Path) -> None:
    dataset = load_dataset(str(sample_folder))
    spec = SystemSpec(retriever="fts5+http", fusions=["convex"], options={"http": {"url": SERVERS["http_sample"]}})
    result = run_benchmark(spec, dataset, k=5, latency_sample=2, show_progress=False)
    alone = run_benchmark(SystemSpec(retriever="fts5"), dataset, k=5, latency_sample=0, show_progress=False)
    assert result.rankings() == alone.rankings()  # the same ranker twice: convex fusion changes nothing
    assert set(result.latency.legs) == {"fts5", "http"}


def test_scopes_reach_the_server(tmp_path: Path) -> None:
    """With scopes, one retriever per scope; each sends its scope (`http.scope_param`), and the
    server searches only that scope's memories: the same rankings as the fts5 leg's per-scope indexes."""
    write_scoped_dataset(tmp_path)
    dataset = load_dataset(str(tmp_path))
    with SearchServer(MemoryStore.from_dataset(str(tmp_path))) as server:
        remote = run_benchmark(SystemSpec(retriever="http", options={"http": {"url": server.url, "scope_param": "scope"}}),
                               dataset, k=5, latency_sample=0, show_progress=False)
        assert {request["scope"] for request in server.requests_seen} == {"alice", "bob"}
    local = run_benchmark(SystemSpec(retriever="fts5"), dataset, k=5, latency_sample=0, show_progress=False)
    assert remote.rankings() == local.rankings()
    assert remote.rankings()["qb"] == ["b1"]


def test_a_url_with_a_space_is_a_bad_option(sample_folder: Path) -> None:
    """Before: "Cannot reach" the server, as if it were down."""
    done = run_cli("eval", "--dataset", str(sample_folder), "-r", "http", "-o", "http.url=http://127.0.0.1:9/my search")
    assert done.returncode == 2 and "url holds a space" in done.stderr and "Cannot reach" not in done.stderr


def test_a_gzip_bomb_is_cut_off_while_it_is_decompressed(sample_folder: Path) -> None:
    """64 KB that inflate to 200 MB: the query fails at http.max_bytes, and no more than that was
    ever decompressed (before: inflated whole, 0.9-1.1 GB peak)."""
    import tracemalloc

    from recall_kit.plugin import Corpus, FailedSearch

    retriever = HTTPRetriever(HTTPRetriever.Options(url=SERVERS["http_sample"], tries=1))
    retriever.build_index(Corpus([]))
    tracemalloc.start()
    try:
        answer = retriever.search("gzipbomb", 5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        retriever.close()
    assert isinstance(answer, FailedSearch) and "larger than http.max_bytes" in answer.reason
    assert peak < 4 * HTTPRetriever.Options.max_bytes, peak


def test_add_answers_in_text_are_read_by_a_pattern(tmp_path: Path) -> None:
    """An add endpoint answering text ("stored as srv-N") and a search answering text lines."""
    dataset = load_dataset(str(EXAMPLE))
    with SearchServer(MemoryStore()) as server:
        base = server.url.removesuffix("/search")
        options = {"url": f"{base}/search.txt", "id_pattern": r"\[id: ([^\]]+)\]", "score_pattern": r"score: (\S+)\)",
                   "add_url": f"{base}/memories", "add_body": '{"messages": [{"role": "user", "content": "{content}"}]}',
                   "add_result_id": "results.0.id", "add_id_pattern": "(srv-[0-9]+)"}
        remote = run_benchmark(SystemSpec(retriever="http", options={"http": options}), dataset, k=10,
                               latency_sample=0, show_progress=False)
    local = run_benchmark(SystemSpec(retriever="fts5", options={"fts5": {"columns": ("content",)}}), dataset, k=10,
                          latency_sample=0, show_progress=False)
    assert remote.rankings() == local.rankings()
