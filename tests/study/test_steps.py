"""The study's steps as declared (recall_kit.study.steps): their order and needs, the document last
reading every other step, one command per step that one command reproduces, and a study file's
edit reaching exactly the steps that read it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from study.test_run import write_study  # tests/ is on sys.path (conftest.py)
from study_support import plugins

from recall_kit.study.config import load_study
from recall_kit.study.reads import CompareReads
from recall_kit.study.steps import build_graph, compare_command, rules, versions


def test_the_steps_come_in_order_each_after_what_it_needs(tmp_path: Path) -> None:
    config = load_study(write_study(tmp_path))
    names = [rule.name for rule in rules(config)]
    assert names == ["corpus", "evaluation-set", "lint", "run/fts5", "run/bm25", "run/hybrid", "pool", "judgments",
                     "agreement", "eval/fts5", "eval/bm25", "eval/hybrid", "compare", "simpler", "bounds",
                     "intervals", "ablation", "sweep"]
    graph = build_graph(config)
    assert [step.name for step in graph.steps] == [*names, "document"]
    assert graph.by_name["document"].needs == names
    assert graph.by_name["eval/bm25"].needs == ["evaluation-set", "judgments", "run/bm25"]
    assert graph.by_name["ablation"].after == ["eval/fts5", "eval/bm25", "eval/hybrid"]


EVERY_PLUGIN = ("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion", "recall-kit-dense", "recall-kit-graph",
                "recall-kit-llm", "recall-kit-postgres", "recall-kit-mem0", "recall-kit-remote", "recall-kit-example")


def test_every_step_fingerprints_the_versions_of_what_the_study_uses(tmp_path: Path) -> None:
    # the host and the plugins that register a name the study uses; not a plugin it does not name
    # (installing one to try it left every step stale before), nor one that only lists it
    config = load_study(write_study(tmp_path))
    with plugins(*EVERY_PLUGIN):
        graph = build_graph(config)
        assert sorted(versions(config)) == ["recall-kit", "recall-kit-bm25", "recall-kit-fts5", "recall-kit-fusion"]
        assert graph.by_name["corpus"].inputs()["versions"] == versions(config)


def test_a_plugin_the_study_names_brings_the_distributions_it_requires(tmp_path: Path) -> None:
    # pgvector (recall-kit-postgres) embeds with recall-kit-dense's models; a graph extractor
    # named in an option value (`llm`) brings the plugin that registers it
    config = load_study(write_study(tmp_path, bm25_options='options = {bm25 = {k1 = 1.5}}'))
    pgvector = dataclasses.replace(config.systems[0], retriever="pgvector", fusions=[], options={})
    graph_llm = dataclasses.replace(config.systems[1], retriever="graph", options={"graph": {"extractor": "llm"}})
    with plugins(*EVERY_PLUGIN):
        found = versions(dataclasses.replace(config, systems=[pgvector, graph_llm]))
    assert {"recall-kit-postgres", "recall-kit-dense", "recall-kit-graph", "recall-kit-llm"} <= set(found)
    assert "recall-kit-example" not in found and "recall-kit-mem0" not in found


def test_an_edit_to_one_system_changes_only_its_own_steps_inputs(tmp_path: Path) -> None:
    before = build_graph(load_study(write_study(tmp_path / "a")))
    after = build_graph(load_study(write_study(tmp_path / "b", bm25_options='options = {bm25 = {k1 = 1.5}}')))
    changed = {name for name in ("run/fts5", "run/bm25", "run/hybrid", "corpus", "pool")
               if before.by_name[name].inputs() != after.by_name[name].inputs()}
    assert changed == {"run/bm25"}


def test_the_compare_command_names_each_systems_result_the_baseline_first() -> None:
    reads = CompareReads(systems=["fts5", "bm25"], metrics=["recall@5", "mrr@5"], decision=["recall@5"],
                         strata=True, resamples=500, seed=0)
    assert compare_command(reads, Path(".")) == (
        "recall-kit compare steps/eval/fts5/result.json steps/eval/bm25/result.json --names fts5,bm25 "
        "--metrics recall@5,mrr@5 --primary recall@5 --primary-strata --resamples 500 --seed 0")
    alone = CompareReads(systems=["fts5"], metrics=["recall@5"], decision=["recall@5"], resamples=500, seed=0, strata=False)
    assert compare_command(alone, Path(".")) is None
