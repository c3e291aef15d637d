"""The hosted path for real: an OpenAI-compatible server on 127.0.0.1 (recall_kit_llm.testing),
reached through llm's own OpenAI plugin with an `api_base` in extra-openai-models.yaml, as users
reach vLLM, llama.cpp's server, Ollama or a provider. The judge, the generators and llm-embed run
through it: calls in flight, 429s with Retry-After retried, the same files at any concurrency, an
interrupted judge resumed from the cache, the remote refusal, and the key in no output."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from recall_kit_llm.testing import OpenAICompatibleServer, configure_llm

from recall_kit.testing import example_datasets, invoke_cli

#: A key that must never show up in an output, a file written or the cache.
CANARY = "sk-canary-3f9d2c7e1b4a"


@pytest.fixture
def serve(llm_home, monkeypatch):
    """start(**settings) -> a running OpenAICompatibleServer that demands CANARY, with llm's home
    pointing at it (chat model `test-server`; embeddings through OPENAI_BASE_URL)."""
    started: list[OpenAICompatibleServer] = []

    def start(**settings) -> OpenAICompatibleServer:
        server = OpenAICompatibleServer(key=CANARY, **settings).__enter__()
        started.append(server)
        configure_llm(llm_home, server.url, key=CANARY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


def _pool(tmp_path: Path, per_query: int = 6, queries: int = 10) -> tuple[Path, Path]:
    data = example_datasets()["memories"]
    ids = [json.loads(line)["id"] for line in (data / "corpus.jsonl").read_text().splitlines() if line.strip()]
    qids = [json.loads(line)["query_id"] for line in (data / "queries.jsonl").read_text().splitlines() if line.strip()]
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"query_id": qid, "doc_ids": ids[i * 3:i * 3 + per_query]}) + "\n"
                            for i, qid in enumerate(qids[:queries])))
    return pool, data


def _judge(pool: Path, data: Path, out: Path, *extra: str):
    return invoke_cli(["judge", str(pool), "-d", str(data), "--out", str(out), "--model", "test-server",
                       "--allow-remote", "-o", "llm.retry_wait=0.05", *extra])


def _no_canary(*texts_or_folders: object) -> None:
    for item in texts_or_folders:
        if isinstance(item, Path):
            for path in [item] if item.is_file() else [p for p in item.rglob("*") if p.is_file()]:
                assert CANARY.encode() not in path.read_bytes(), path
        else:
            assert CANARY not in str(item)


def test_judge_through_the_server_same_file_at_any_concurrency_and_no_key_anywhere(serve, tmp_path, llm_home):
    server = serve(delay=0.01)  # one call at a time: two in flight would overlap even so
    pool, data = _pool(tmp_path)
    one = _judge(pool, data, tmp_path / "one" / "qrels.jsonl", "--concurrency", "1")
    assert one.exit_code == 0, one.output
    assert server.most_in_flight == 1
    requests = server.requests
    assert requests == 60  # 10 queries x 6 ids, one call each
    # Only the grade is asked for, capped at a few output tokens.
    assert set(server.max_tokens_seen) == {16}
    assert "judge: about 60 model calls (0 answers cached)" in one.output
    assert "judge: 60 model calls, 0 cached, 0 retried" in one.output
    shutil.rmtree(tmp_path / "cache")  # every call again, now 8 in flight
    server.delay = 0.05  # long enough for the calls to overlap
    many = _judge(pool, data, tmp_path / "many" / "qrels.jsonl", "--concurrency", "8")
    assert many.exit_code == 0, many.output
    assert server.requests == 2 * requests and server.most_in_flight > 1
    assert (tmp_path / "one" / "qrels.jsonl").read_bytes() == (tmp_path / "many" / "qrels.jsonl").read_bytes()
    assert (tmp_path / "one" / "qrels.jsonl.journal").read_bytes() == \
        (tmp_path / "many" / "qrels.jsonl.journal").read_bytes()
    _no_canary(one.output, many.output, tmp_path / "one", tmp_path / "many", tmp_path / "cache")
    assert not (llm_home / "logs.db").exists()


def test_rate_limited_answers_are_retried_and_the_file_is_the_same(serve, tmp_path):
    pool, data = _pool(tmp_path)
    serve()
    plain = _judge(pool, data, tmp_path / "plain.jsonl")
    assert plain.exit_code == 0, plain.output
    shutil.rmtree(tmp_path / "cache")
    # Every fifth request answered 429: each retried after the Retry-After it asked.
    server = serve(rate_limit=lambda number: number % 5 == 0, retry_after=0.05)
    limited = _judge(pool, data, tmp_path / "limited.jsonl")
    assert limited.exit_code == 0, limited.output
    assert server.rate_limited >= 12 and f"{server.rate_limited} retried" in limited.output
    assert (tmp_path / "plain.jsonl").read_bytes() == (tmp_path / "limited.jsonl").read_bytes()


def test_retry_after_is_honoured_and_counted(serve, tmp_path):
    import llm
    from recall_kit_llm.models import CallCache, JsonAsker

    # The first three answers are 429s: recall-kit waits what each asked (not retry_wait's 0) and
    # tries again; llm's OpenAI client is held to no retries of its own, so each one is counted.
    server = serve(rate_limit=lambda number: number <= 3, retry_after=0.4)
    asker = JsonAsker(llm.get_model("test-server"), "v", CallCache(tmp_path / "c"), retries=3, retry_wait=0)
    started = time.monotonic()
    value = asker.ask("You judge", "QUESTION:\nq\n\nMEMORY:\nm", {"type": "object"}, lambda answer: answer)
    assert value is not None and server.requests == 4 and server.rate_limited == 3
    assert asker.stats.retried == 3 and time.monotonic() - started >= 3 * 0.4
    # One HTTP client for all of the model's calls (llm's plugin would build one per call).
    assert len(asker.model._recall_kit_clients) == 1


def test_an_interrupted_judge_resumes_from_the_answers_that_came(serve, tmp_path):
    pool, data = _pool(tmp_path)
    # From its 25th request on the server refuses the key (401, not worth a retry): the run stops
    # with one line while other calls are in flight, as an interrupted run does.
    broken = serve(delay=0.02, refuse_from=25)
    interrupted = _judge(pool, data, tmp_path / "q.jsonl", "--concurrency", "4")
    assert interrupted.exit_code != 0 and "Traceback" not in interrupted.output
    assert len(interrupted.output.strip().splitlines()[-1:]) == 1 and "401" in interrupted.output
    assert broken.answered == 24
    _no_canary(interrupted.output)
    server = serve(delay=0.02)
    resumed = _judge(pool, data, tmp_path / "q.jsonl", "--concurrency", "4")
    assert resumed.exit_code == 0, resumed.output
    # Every answer that came back was kept (in the journal, or the cache when a call before it
    # failed): only the others are asked again.
    assert server.requests == 60 - 24
    rows = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert sum(len(row["relevance"]) for row in rows) == 60


def test_the_remote_model_is_refused_without_allow_remote_and_no_file_is_left(serve, tmp_path):
    server = serve()
    pool, data = _pool(tmp_path)
    out = tmp_path / "q.jsonl"
    result = invoke_cli(["judge", str(pool), "-d", str(data), "--out", str(out), "--model", "test-server"])
    assert result.exit_code != 0
    assert "remote: memory text would leave this machine. Pass --allow-remote" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not out.exists() and server.requests == 0
    store = tmp_path / "store"
    store.mkdir()
    shutil.copyfile(data / "corpus.jsonl", store / "corpus.jsonl")
    result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "2", "--model", "test-server"])
    assert result.exit_code != 0 and "Pass --allow-remote" in result.output and server.requests == 0
    _no_canary(result.output)


def test_generators_through_the_server_same_dataset_at_any_concurrency(serve, tmp_path):
    server = serve(delay=0.02)
    data = example_datasets()["memories"]
    outputs = {}
    for concurrency in ("1", "6"):
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)
        store = tmp_path / f"store-{concurrency}"
        store.mkdir()
        shutil.copyfile(data / "corpus.jsonl", store / "corpus.jsonl")
        result = invoke_cli(["dataset", "generate", str(store), "--paraphrase", "8", "--multihop", "3",
                             "--model", "test-server", "--allow-remote", "--concurrency", concurrency, "--seed", "3"])
        assert result.exit_code == 0, result.output
        _no_canary(result.output, store)
        outputs[concurrency] = ((store / "queries.jsonl").read_bytes(), (store / "qrels.jsonl").read_bytes())
    queries = [json.loads(line) for line in outputs["1"][0].decode().splitlines()]
    assert sum(q["stratum"] == "paraphrase" for q in queries) == 8
    assert sum(q["stratum"] == "multihop" for q in queries) == 3
    assert outputs["1"] == outputs["6"] and server.most_in_flight > 1
    # Questions are asked for with 120 output tokens; each paraphrase is then judged about its
    # memory (the judge's grade: 16 tokens).
    assert set(server.max_tokens_seen) == {120, 16}
    _no_canary(tmp_path / "cache")


def test_llm_embed_through_the_server_in_batches_in_flight(serve, tmp_path):
    from recall_kit_llm.embed import LlmEmbedRetriever

    from recall_kit.plugin import load_dataset

    server = serve(delay=0.02)
    dataset = load_dataset(example_datasets()["memories"])
    texts = [query.text for query in dataset.queries]
    found = {}
    for concurrency in (1, 8):
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)
        retriever = LlmEmbedRetriever(LlmEmbedRetriever.Options(model="3-small", allow_remote=True, batch_size=16,
                                                                concurrency=concurrency))
        retriever.build_index(dataset.corpus)
        found[concurrency] = [[(hit.id, hit.score) for hit in hits] for hits in retriever.search_many(texts, 5)]
    assert found[1] == found[8] and server.most_in_flight > 1
    assert server.requests == 2 * (-(-len(dataset.corpus) // 16) + -(-len(texts) // 16))
    refused = LlmEmbedRetriever(LlmEmbedRetriever.Options(model="3-small"))
    with pytest.raises(Exception, match="remote: memory text would leave this machine"):
        refused.build_index(dataset.corpus)
    _no_canary(tmp_path / "cache")
