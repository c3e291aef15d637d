"""A study step declared once, as a DVC stage or a Snakemake rule is: what it reads, what it makes.

A rule names the artefacts it needs (the steps whose folders it opens) and a `reads` function
that returns a small frozen dataclass of JSON values: the study file's keys the step reads, and
any choice it makes from its needs (the ablation's system). From that one declaration come the
step's fingerprint (the dataclass's fields, beside the plugin versions and the needs' outputs),
its make function's arguments (the dataclass rebuilt from the fingerprinted values, never the
whole `StudyConfig`) and its Reproduce line (a function of the same dataclass). A make function
opens only the folders its rule names: `Artefacts.path` refuses any other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from recall_kit.document_reader import from_json
from recall_kit.errors import RecallKitError
from recall_kit.study.pipeline.folder import MANIFEST_SCHEMA
from recall_kit.study.pipeline.graph import Step, StudyGraph

R = TypeVar("R")


class Artefacts:
    """The folders of the steps a rule declared (`needs` and `after`), and nothing else."""

    def __init__(self, graph: Callable[[], StudyGraph], step: str, allowed: Sequence[str]) -> None:
        self._graph = graph
        self._step = step
        self._allowed = frozenset(allowed)

    def path(self, name: str) -> Path:
        if name not in self._allowed:
            raise RecallKitError(f"study step {self._step!r} reads {name!r}, which its rule does not declare.")
        return self._graph().path(name)

    def seconds(self) -> dict[str, float]:
        """Step -> the seconds it took when last computed (timings: never evidence)."""
        return {name: round(record.seconds, 1) for name, record in self._graph().records.items()}

    def commands(self) -> dict[str, str]:
        """Each step of the graph that one recall-kit command reproduces -> that command (the document reads them)."""
        return self._graph().commands()

    @property
    def folder(self) -> Path:
        """The study folder (where Reproduce lines run from)."""
        return self._graph().folder


@dataclass(frozen=True)
class Rule(Generic[R]):
    """One step as declared: its name, the artefacts it needs, the dataclass it reads (`kind`, built
    by `reads`), how it makes its files and, where one command reproduces it, that command.

    `after`: steps that must be done first whose files the fingerprint does not cover (what `reads`
    takes from them, a choice, is in the dataclass instead)."""

    name: str
    needs: Sequence[str]
    kind: type[R]
    reads: Callable[[Artefacts], R]
    make: Callable[[R, Artefacts, Path], None]
    reproduce: Callable[[R, Path], str | None] | None = None
    after: Sequence[str] = ()

    def step(self, graph: Callable[[], StudyGraph], common: dict[str, Any]) -> Step:
        """The graph's node: inputs are the dataclass's fields (and `common`), `make` gets the
        dataclass rebuilt from exactly those inputs."""
        artefacts = Artefacts(graph, self.name, [*self.needs, *self.after])

        def inputs() -> dict[str, Any]:
            return {**dataclasses.asdict(self.reads(artefacts)), **common}  # type: ignore[call-overload]

        def make(folder: Path, values: dict[str, Any]) -> None:
            self.make(self.rebuild(values), artefacts, folder)

        def reproduce(values: dict[str, Any]) -> str | None:
            assert self.reproduce is not None
            return self.reproduce(self.rebuild(values), artefacts.folder)

        return Step(self.name, list(self.needs), inputs, make, after=list(self.after),
                    reproduce=reproduce if self.reproduce is not None else None)

    def rebuild(self, values: dict[str, Any]) -> R:
        """The dataclass from its fingerprinted values (nested dataclasses included)."""
        fields = {f.name for f in dataclasses.fields(self.kind)}  # type: ignore[arg-type]
        return from_json(self.kind, {key: value for key, value in values.items() if key in fields}, "the manifest", MANIFEST_SCHEMA)
