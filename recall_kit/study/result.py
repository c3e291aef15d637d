"""The typed study result: the evidence the document is rendered from (study.json), and nothing else.

Numbers and ids only: no memory text, no query text. Threat detectors (`threats.py`) and the
recommendation's rules read it; `document.py` renders it as markdown and HTML.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from recall_kit.decide.compare import ComparisonRow

#: One candidate against the baseline on one decision metric in one scope (paired, Holm): the
#: comparison's own row type.
HeadToHead = ComparisonRow

SCHEMA = "recall-kit/study/1"


@dataclass
class StratumSummary:
    """One stratum of the evaluation set: its size, how it was built and what its labels look like."""

    name: str
    queries: int
    #: How the queries were made, in words ("generated from the corpus alone by 'exact', seed 0").
    built: str
    #: True when a rule over the corpus alone defines the stratum (generated from the corpus, or an
    #: exact stratum whose every phrase occurs in exactly its judged memories, as lint checks).
    corpus_rule: bool
    #: Share of its queries with exactly one relevant id.
    one_relevant_share: float
    #: Share of its queries whose judgments use a grade above 1.
    graded_share: float
    #: Decision metric -> the smallest delta a paired test at this size would detect (alpha 0.05,
    #: power 0.8); None where the values do not vary (a ceiling: nothing to estimate it from).
    minimum_detectable: dict[str, float | None] = field(default_factory=dict)
    #: Lint finding kind -> count, for this stratum.
    lint: dict[str, int] = field(default_factory=dict)


@dataclass
class LegReach:
    """Whether one leg of a fused system ever got an id that only it found into the fused top k."""

    leg: str
    weight: float
    #: Queries whose fused top k holds an id that only this leg found.
    queries_reached: int
    queries: int


@dataclass
class SystemSummary:
    """One candidate as the study measured it."""

    name: str
    retriever: str
    legs: list[str]
    fusions: list[str]
    #: Leg -> the embedding model it was run with (legs that have one).
    models: dict[str, str]
    #: "overall" or a stratum -> metric -> mean.
    means: dict[str, dict[str, float]]
    #: Share of the ids in its top hook_k that the labels do not judge (counted as not relevant).
    unjudged_share: float
    #: Stratum -> share of that stratum's one-relevant-id queries whose relevant id it ranks first.
    first_hit_share: dict[str, float]
    reach: list[LegReach] = field(default_factory=list)
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    index_bytes: int | None = None
    build_seconds: float | None = None


@dataclass
class Verdict:
    """The recommendation for one scope, by the written rules."""

    scope: str
    system: str
    verdict: str  # "adopt", "do not adopt", "inconclusive"
    because: str
    trades: str = ""


@dataclass
class Threat:
    """A threat to validity the study's own data shows: its evidence and what would remove it."""

    key: str
    title: str
    evidence: list[str]
    remedy: str


@dataclass
class StudyResult:
    """Everything the decision document says, as data."""

    name: str
    hook_k: int
    decision_metrics: list[str]
    exploratory_metrics: list[str]
    baseline: str
    seed: int
    resamples: int
    corpus: dict[str, Any]
    strata: list[StratumSummary]
    #: How the labels were made: source ("qrels" or a judge), pool depth, pooled ids and how many
    #: of them were labelled.
    labels: dict[str, Any]
    #: Judge agreement: measured (bool), kappa, n, and why not when it was not measured.
    agreement: dict[str, Any]
    systems: list[SystemSummary]
    head_to_head: list[HeadToHead]
    ablation: dict[str, Any]
    sweep: dict[str, Any]
    production: dict[str, Any]
    verdicts: list[Verdict] = field(default_factory=list)
    threats: list[Threat] = field(default_factory=list)
    #: Detectors that ran and found nothing.
    clear: list[str] = field(default_factory=list)
    #: Step -> the single recall-kit command that reproduces its numbers.
    commands: dict[str, str] = field(default_factory=dict)
    #: What the unjudged pairs could do to each decision row (`PairedBounds.to_dict`, the bounds step).
    bounds: list[dict[str, Any]] = field(default_factory=list)
    #: Step -> seconds it took when last computed (timings: not part of the evidence).
    timings: dict[str, float] = field(default_factory=dict)

    def system(self, name: str) -> SystemSummary:
        return next(system for system in self.systems if system.name == name)

    def stratum(self, name: str) -> StratumSummary:
        return next(stratum for stratum in self.strata if stratum.name == name)

    @property
    def challenger(self) -> str | None:
        """The candidate the recommendation is about: the best on the first decision metric overall."""
        others = [s for s in self.systems if s.name != self.baseline]
        if not others:
            return None
        metric = self.decision_metrics[0]
        return max(others, key=lambda s: s.means.get("overall", {}).get(metric, float("-inf"))).name

    def to_dict(self) -> dict[str, Any]:
        data = {"schema": SCHEMA, **dataclasses.asdict(self)}
        data["head_to_head"] = [row.to_dict() for row in self.head_to_head]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StudyResult:
        data = {key: value for key, value in data.items() if key != "schema"}
        data["strata"] = [StratumSummary(**entry) for entry in data["strata"]]
        data["systems"] = [SystemSummary(**{**entry, "reach": [LegReach(**r) for r in entry.get("reach", [])]})
                           for entry in data["systems"]]
        data["head_to_head"] = [row_from_dict(entry) for entry in data["head_to_head"]]
        data["verdicts"] = [Verdict(**entry) for entry in data.get("verdicts", [])]
        data["threats"] = [Threat(**entry) for entry in data.get("threats", [])]
        return cls(**data)


def row_from_dict(entry: dict[str, Any]) -> ComparisonRow:
    """A comparison row from its `to_dict` form."""
    names = {field.name for field in dataclasses.fields(ComparisonRow)}
    values = {key: value for key, value in entry.items() if key in names}
    effect = entry.get("effect_size_dz")
    return ComparisonRow(**values, effect_size=float("inf") if effect is None else effect)
