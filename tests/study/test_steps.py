"""The study's steps as declared (recall_kit.study.steps): their order and needs, the document last
reading every other step, one command per step that one command reproduces, and a study file's
edit reaching exactly the steps that read it."""

from __future__ import annotations

from pathlib import Path

from study.test_run import write_study  # tests/ is on sys.path (conftest.py)

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


def test_every_step_fingerprints_the_installed_versions(tmp_path: Path) -> None:
    graph = build_graph(load_study(write_study(tmp_path)))
    assert "recall-kit" in versions()
    assert graph.by_name["corpus"].inputs()["versions"] == versions()


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
