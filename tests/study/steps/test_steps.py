"""The study's steps as declared (recall_kit.study.steps): one module per step, each with its `RULE`,
collected in order; their order and needs, the document last reading every other step, one command
per step that one command reproduces, a study file's edit reaching exactly the steps that read it,
and a `study run` that walks the step modules one after another, each entered once. The steps with no
test file of their own are run here (the walk) and declared: recall_kit.study.steps.run,
recall_kit.study.steps.eval, recall_kit.study.steps.compare, recall_kit.study.steps.simpler,
recall_kit.study.steps.ablation, recall_kit.study.steps.sweep (tests/study/test_run.py runs the two on
a hybrid and a grid) and recall_kit.study.steps.document (tests/study/pipeline/test_code.py: its code's
fingerprint)."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from study.test_run import write_study  # tests/ is on sys.path (conftest.py)
from study_support import plugins, study_text

from recall_kit.study import run_study
from recall_kit.study.config import load_study
from recall_kit.study.pipeline.graph import StudyGraph
from recall_kit.study.steps import STEPS, build_graph, rules, versions
from recall_kit.study.steps.common import CompareReads, StepRule, compare_command

STEPS_FOLDER = Path(__file__).resolve().parents[3] / "recall_kit" / "study" / "steps"

#: The modules of study/steps/ that are no step: the package (it collects them) and what several share.
NOT_A_STEP = {"__init__", "common"}


def _step_modules() -> list[str]:
    """Every module of recall_kit/study/steps/ but the package and the shared one, by file name."""
    return sorted(path.stem for path in STEPS_FOLDER.glob("*.py") if path.stem not in NOT_A_STEP)


def test_every_step_module_declares_a_rule_and_rules_collects_exactly_those_in_order(tmp_path: Path) -> None:
    # a new step is one new module (named in STEPS): one that declares no RULE, or is left out of
    # STEPS, fails here
    modules = [importlib.import_module(f"recall_kit.study.steps.{name}") for name in _step_modules()]
    assert len(modules) >= 15
    assert all(isinstance(getattr(module, "RULE", None), StepRule) for module in modules), [
        module.__name__ for module in modules if not isinstance(getattr(module, "RULE", None), StepRule)]
    assert sorted(module.__name__ for module in STEPS) == sorted(module.__name__ for module in modules)
    assert len({module.RULE.name for module in STEPS}) == len(STEPS)
    config = load_study(write_study(tmp_path))
    systems = [system.name for system in config.systems]
    expected = [name for module in STEPS
                for name in ([f"{module.RULE.name}/{s}" for s in systems] if module.RULE.each_system
                             else [module.RULE.name])]
    assert [rule.name for rule in rules(config)] == expected
    assert expected[-1] == "document" and len(expected) == len(STEPS) + 2 * (len(systems) - 1)


def _walk(path: Path) -> list[tuple[str, str]]:
    """(step being read or made, step module entered) for each call into a step module's code while
    `run_study` walks the graph (StudyGraph.run), apart from the Reproduce lines the document reads
    of every step (StudyGraph.commands)."""
    files = {module.__file__: module.RULE.name for module in STEPS}
    run, commands = StudyGraph.run.__code__, StudyGraph.commands.__code__
    found: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event != "call" or frame.f_code.co_filename not in files:
            return
        outer: FrameType | None = frame.f_back
        while outer is not None and outer.f_code is not run:
            if outer.f_code is commands:
                return
            outer = outer.f_back
        if outer is not None:
            found.append((outer.f_locals["step"].name, files[frame.f_code.co_filename]))

    sys.setprofile(profile)
    try:
        run_study(path)
    finally:
        sys.setprofile(None)
    return found


def test_a_study_run_enters_each_step_module_once_and_only_while_that_step_runs(tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    path.write_text(study_text(), encoding="utf-8")
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        walk = _walk(path)
    stretches = [module for index, (_, module) in enumerate(walk) if index == 0 or walk[index - 1][1] != module]
    # the document reads the bounds' and intervals' outputs through study/hole_evidence.py, not
    # through their step modules: each step module is one stretch, in STEPS' order
    assert stretches == [module.RULE.name for module in STEPS]
    wrong = {(step, module) for step, module in walk if module != step.partition("/")[0]}
    assert wrong == set()


def test_the_steps_come_in_order_each_after_what_it_needs(tmp_path: Path) -> None:
    config = load_study(write_study(tmp_path))
    names = [rule.name for rule in rules(config)]
    assert names == ["corpus", "evaluation-set", "lint", "run/fts5", "run/bm25", "run/hybrid", "pool", "judgments",
                     "agreement", "eval/fts5", "eval/bm25", "eval/hybrid", "compare", "simpler", "bounds",
                     "intervals", "ablation", "sweep", "document"]
    graph = build_graph(config)
    assert [step.name for step in graph.steps] == names
    assert graph.by_name["document"].needs == names[:-1]  # the document is a rule as every step is: last
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
