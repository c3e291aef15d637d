"""A step declared once (recall_kit.study.pipeline.declare): its fingerprinted inputs are its dataclass's fields
plus what every step shares, `make` gets the dataclass back (nested ones too), the Reproduce line comes
from it, and `Artefacts` opens only the folders the rule names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from recall_kit.errors import RecallKitError
from recall_kit.study.pipeline.declare import Artefacts, Rule
from recall_kit.study.pipeline.graph import StudyGraph


@dataclass(frozen=True)
class Inner:
    k: int


@dataclass(frozen=True)
class Reads:
    name: str
    inner: Inner


def test_a_rule_becomes_a_step_whose_inputs_and_make_use_its_dataclass(tmp_path: Path) -> None:
    seen: list[Reads] = []

    def make(reads: Reads, artefacts: Artefacts, folder: Path) -> None:
        seen.append(reads)
        (folder / "out.txt").write_text(f"{reads.name} {reads.inner.k}", encoding="utf-8")

    rule = Rule("one", [], Reads, lambda artefacts: Reads("x", Inner(5)), make,
                reproduce=lambda reads, folder: f"recall-kit eval --k {reads.inner.k}")
    graph = StudyGraph(tmp_path, [])
    step = rule.step(lambda: graph, {"plugins": {"a": "1.0"}})
    inputs = step.inputs()
    assert inputs == {"name": "x", "inner": {"k": 5}, "plugins": {"a": "1.0"}}
    graph = StudyGraph(tmp_path, [step])
    assert graph.run().computed == ["one"]
    assert seen == [Reads("x", Inner(5))]  # rebuilt from the fingerprinted values, the shared ones left out
    assert graph.commands() == {"one": "recall-kit eval --k 5"}


def test_artefacts_open_only_the_declared_folders(tmp_path: Path) -> None:
    graph = StudyGraph(tmp_path, [])
    artefacts = Artefacts(lambda: graph, "compare", ["eval/a"])
    assert artefacts.path("eval/a") == tmp_path / "steps" / "eval/a"
    with pytest.raises(RecallKitError, match="study step 'compare' reads 'pool', which its rule does not declare"):
        artefacts.path("pool")
