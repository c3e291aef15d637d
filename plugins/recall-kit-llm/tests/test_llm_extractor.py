"""The `llm` extractor: typed relations from a model, used by the graph leg like the others,
cached per memory content (a second build asks nothing)."""

from __future__ import annotations

import pytest

from recall_kit import SystemSpec, run_benchmark
from recall_kit.plugin import RecallKitError, load_dataset
from recall_kit.testing import example_datasets


def test_graph_leg_with_model_relations(llm_home, scripted_model):
    pytest.importorskip("recall_kit_graph")
    from recall_kit.testing import registries

    assert "llm" in registries()["extractors"].names()
    dataset = load_dataset(example_datasets()["memories"])
    options = {"graph": {"extractors": "rules,llm", "extractor_options": "model:recall-test,retry_wait:0"}}
    spec = SystemSpec(retriever="graph", options=options)
    first = run_benchmark(spec, dataset, metrics=["recall@10"], latency_sample=0)
    calls = scripted_model.calls
    assert calls == len(dataset.corpus)  # one call per memory, every answer valid JSON
    second = run_benchmark(spec, dataset, metrics=["recall@10"], latency_sample=0)
    assert scripted_model.calls == calls  # cached by memory content
    assert first.mean("recall@10") == second.mean("recall@10")
    rules_only = run_benchmark(SystemSpec(retriever="graph", options={"graph": {"extractors": "rules"}}),
                               dataset, metrics=["recall@10"], latency_sample=0)
    with_model = first.index.legs["graph"].stats["edges_by_type"]
    # The model's `with` relations are typed edges the rules do not make (counted as `other`).
    assert with_model.get("other", 0) > rules_only.index.legs["graph"].stats["edges_by_type"].get("other", 0)


def test_extractor_needs_a_model(llm_home):
    pytest.importorskip("recall_kit_graph")
    dataset = load_dataset(example_datasets()["memories"])
    with pytest.raises(RecallKitError, match=r"needs a model: -o graph.extractor_options=model:NAME"):
        run_benchmark(SystemSpec(retriever="graph", options={"graph": {"extractors": "llm"}}), dataset,
                      metrics=["recall@10"], latency_sample=0)
