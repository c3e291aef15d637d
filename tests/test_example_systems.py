"""examples/systems/*.toml: the recommended systems load and run (on synthetic conversations made
for the tests; they were chosen on LoCoMo's dev conversations, see docs/real-data.md)."""

from __future__ import annotations

import importlib
from contextlib import ExitStack
from pathlib import Path

import pytest

from recall_kit.dataset import load_dataset
from recall_kit.measure.run.runner import run_benchmark
from recall_kit.measure.systems.system import build_system, load_config
from recall_kit.testing import registered_plugin

SYSTEMS = Path(__file__).resolve().parents[1] / "examples" / "systems"
NAMES = ["lexical", "dense", "hybrid", "hybrid-graph", "hybrid-mpnet"]
#: The recipes that name the packaged all-mpnet-base-v2 (`make mpnet`, not part of `make setup`).
MPNET = {"hybrid-mpnet"}
PLUGINS = ["recall_kit_bm25", "recall_kit_dense", "recall_kit_fusion", "recall_kit_graph"]


@pytest.fixture
def plugins():
    modules = []
    for name in PLUGINS:
        try:
            modules.append(importlib.import_module(name))
        except ImportError:
            pytest.skip(f"needs {name}")
    with ExitStack() as stack:
        for module in modules:
            stack.enter_context(registered_plugin(module, name=f"{module.__name__}-for-test"))
        yield


def test_every_recommended_system_is_there() -> None:
    assert sorted(path.stem for path in SYSTEMS.glob("*.toml")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_system_loads_and_runs(name: str, plugins, conversations: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RECALL_KIT_CACHE", str(tmp_path / "cache"))
    spec = load_config(SYSTEMS / f"{name}.toml")
    if name in MPNET:
        # Everything but the model is the recipe's: the bundled MiniLM stands in for the 400 MB
        # packaged model (its assembly and loading: plugins/recall-kit-dense/tests), so that the
        # file's legs, weights and options are checked on every run, `make mpnet` or not.
        from recall_kit_dense.packaged import find_packaged

        assert spec.options["dense"]["model"] == "all-mpnet-base-v2"
        assert find_packaged("all-mpnet-base-v2") is not None
        del spec.options["dense"]["model"]
    system = build_system(spec)
    dataset = load_dataset(conversations)
    result = run_benchmark(system, dataset, k=5, metrics=["recall@5"], latency_sample=0)
    assert result.dataset.queries == 8
    # Every lexical leg of these systems indexes its memories with their session neighbours, and
    # every MiniLM dense leg; mpnet's embeds each turn on its own (the sweep chose no context).
    for leg in result.system.legs:
        if leg.name == "bm25" or (leg.name == "dense" and name not in MPNET):
            assert leg.context is not None and leg.context["window"] >= 1
        elif leg.name == "dense":
            assert leg.context is None or leg.context["window"] == 0
    assert result.mean("recall@5") > 0.5


def test_lexical_system_uses_context_to_find_short_replies(plugins, conversations: Path) -> None:
    """The pottery question's answer ("Yes, loved it!") shares no topic word with it; the
    lexical system ranks it second, after the question turn, because its neighbour names the
    pottery class; the same bm25 without context does not rank it in the top 2."""
    dataset = load_dataset(conversations)
    spec = load_config(SYSTEMS / "lexical.toml")
    result = run_benchmark(build_system(spec), dataset, k=5, metrics=["recall@2"], latency_sample=0)
    assert result.queries[0].ranking[:2] == ["conv-a:D1:1", "conv-a:D1:2"]
    assert result.per_query("recall@2")["conv-a:q1"] == 1.0
    spec.options["bm25"].pop("context")
    plain = run_benchmark(build_system(spec), dataset, k=5, metrics=["recall@2"], latency_sample=0)
    assert plain.per_query("recall@2")["conv-a:q1"] == 0.0
