"""The typed study result: the evidence the document is rendered from (study.json), and nothing else.

Numbers and ids only: no memory text, no query text. Threat detectors (`threats.py`) and the
recommendation's rules read it; `document.py` renders it as markdown and HTML.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from recall_kit.decide.holes import PairedBounds
from recall_kit.decide.ppi import Interval, LabelPlan
from recall_kit.document_reader import from_json

if typing.TYPE_CHECKING:
    from recall_kit.decide.compare import ComparisonRow

SCHEMA = "recall-kit/study/2"


@dataclass(frozen=True)
class HeadToHead:
    """One tested difference (paired, Holm) as the study keeps it: a candidate against the baseline on one
    decision metric in one scope, an ablation variant against the full system, the sweep's best
    against its default, or the best candidate against a simpler one. A saved comparison's row
    (decide/compare.py `ComparisonRow`) as study.json holds it (`HeadToHead.of`)."""

    system: str
    metric: str
    scope: str
    n: int
    baseline: float
    value: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    #: Holm-adjusted within the row's family; None for a diagnostic row (not tested).
    p_holm: float | None
    significant: bool
    #: "primary" (decision), "exploratory" or "diagnostic".
    family: str = "primary"
    wins: int = 0
    ties: int = 0
    losses: int = 0
    #: How many rows Holm's correction ran over in this row's family (0: not kept, an older study.json).
    family_rows: int = 0

    @classmethod
    def of(cls, row: ComparisonRow, rows: Sequence[ComparisonRow]) -> HeadToHead:
        """The study's copy of a comparison's row; `rows`: every row of its comparison (the family's size)."""
        return cls(system=row.system, metric=row.metric, scope=row.scope, n=row.n, baseline=row.baseline,
                   value=row.value, delta=row.delta, ci_low=row.ci_low, ci_high=row.ci_high, p_value=row.p_value,
                   p_holm=row.p_holm, significant=row.significant, family=row.family, wins=row.wins,
                   ties=row.ties, losses=row.losses, family_rows=sum(1 for r in rows if r.family == row.family))

    def holm(self) -> str:
        """"Holm p 0.0160 among 8 primary rows": the adjusted p with its family, as a reader meets it."""
        from recall_kit.decide.compare_report import holm_among

        return holm_among(self.p_holm, self.family_rows, self.family)


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
    #: Decision metrics on which every system scores the ceiling here (saturated: nothing to gain,
    #: kept out of the leg-reach check).
    saturated: list[str] = field(default_factory=list)
    #: The smallest p-value a paired randomisation test can give at this size and resample count:
    #: max(2^(1 - n), 1 / (resamples + 1)).
    smallest_p: float | None = None
    #: Rows in the Holm family this stratum's rows belong to (the head-to-head's decision rows).
    family_rows: int = 0
    #: False when even the smallest p, times the family's size, is not below 0.05: no effect here can
    #: pass Holm's first step (only after every stronger row of the family has).
    reachable: bool = True
    #: Decision metric -> the smallest delta detectable at the family's corrected level (alpha / rows).
    minimum_detectable_in_family: dict[str, float | None] = field(default_factory=dict)


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
class CorpusSummary:
    """The store as the study read it: counts only."""

    source: str
    memories: int
    sensitive_dropped: int
    #: Share of the memories that carry an importance value.
    importance_share: float = 0.0
    #: Rows of an SQLite store left out, by reason ("no readable id", "no text"): counts only.
    rows_left_out: dict[str, int] = field(default_factory=dict)

    def left_out_words(self) -> str:
        """``"5 rows left out: no readable id 2, no text 3"``, or "" when none was."""
        if not self.rows_left_out:
            return ""
        reasons = ", ".join(f"{reason} {n}" for reason, n in self.rows_left_out.items())
        return f"{sum(self.rows_left_out.values())} rows left out: {reasons}"


@dataclass
class LabelsSummary:
    """How the labels were made: the user's qrels, or those plus a model judge's grades of the pool."""

    #: "qrels" or the judge's name.
    source: str
    pooled_labels: int
    pool_depth: int
    #: Unjudged ids pooled from every system's top `pool_depth`, and over how many queries.
    pool_ids: int
    pool_queries: int
    #: Pairs in some system's top `pool_depth` that the labels (every layer: the user's qrels, people's,
    #: a model judge's) still do not judge.
    unjudged_left: int = 0
    #: A judge that learns, measured on the labelled pairs it learnt from (cross-fitted: each graded
    #: by a model fitted on other queries): kappa, its interval and the pairs; None otherwise.
    judge_kappa: float | None = None
    judge_kappa_ci: tuple[float, float] | None = None
    judge_pairs: int = 0
    #: Labels naming a memory the corpus step dropped as sensitive, dropped in turn: the file that
    #: held them (the user's qrels, a person's grades) -> how many.
    sensitive_dropped: dict[str, int] = field(default_factory=dict)
    #: Queries the user's qrels left without labels by that, dropped with them.
    sensitive_queries_dropped: int = 0


@dataclass
class AgreementSummary:
    """Judge agreement: Cohen's kappa of a second judge (`[judging] agreement`) against the labels used."""

    measured: bool
    kappa: float | None = None
    #: Pairs both judges graded.
    n: int | None = None
    kappa_ci: list[float] | None = None
    #: Why it was not measured (empty when it was).
    why: str = ""
    #: Which labels the second judge was compared with: "the model judge's grades" or "the user's qrels".
    against: str = ""
    #: Kappa below this makes the verdicts provisional (`[judging] min_kappa`).
    threshold: float = 0.6

    def kappa_words(self) -> str:
        """The measured kappa as the document says it: ``0.571 [0.201, 0.812]``, or ``undefined``
        where it says nothing (one side graded every shared pair alike)."""
        if self.kappa is None:
            return "undefined"
        ci = self.kappa_ci
        return f"{self.kappa:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


@dataclass
class AblationVariant:
    """One variant of the ablation: its legs and its overall means on the decision metrics."""

    name: str
    kind: str
    legs: list[str]
    means: dict[str, float]


@dataclass
class AblationSummary:
    """The ablation of the best hybrid: variants, their deltas against the full system, and leg reach."""

    #: The system taken apart (None when skipped).
    system: str | None = None
    #: Why it was skipped (empty when it ran).
    skipped: str = ""
    variants: list[AblationVariant] = field(default_factory=list)
    #: Each variant against the full system, overall, decision metrics (Holm within the ablation).
    rows: list[HeadToHead] = field(default_factory=list)
    reach: list[LegReach] = field(default_factory=list)


@dataclass
class SweepSummary:
    """The sweep's choice: the grid, the split, the best setting and its held-out comparison."""

    skipped: str = ""
    system: str = ""
    target: str = ""
    guards: list[str] = field(default_factory=list)
    holdout: float | None = None
    tuning_queries: int = 0
    test_queries: int = 0
    settings: int = 0
    eligible: int = 0
    best_settings: dict[str, str] = field(default_factory=dict)
    #: The best setting against the default on the held-out queries, overall.
    held_out: list[HeadToHead] = field(default_factory=list)


@dataclass
class ProductionSummary:
    """What production runs, as `[production]` says (None: not said)."""

    system: str | None = None
    substrate: str | None = None
    embedding_model: str | None = None
    priors: list[str] | None = None


@dataclass
class HoleBounds:
    """How far the unjudged ids could move one comparison (a place for the labels step to fill: None
    until it does). The delta's range if every unjudged id in either top k were relevant / none were."""

    can_flip: bool
    delta_if_all_relevant: float
    delta_if_none_relevant: float
    #: The delta over judged ids only (unjudged ids dropped from both rankings).
    judged_only_delta: float | None = None


@dataclass
class HoleInterval:
    """One decision row's hole-aware interval (the intervals step; decide/ppi.py): prediction-powered
    from people's labels on a seeded random sample of the open queries (None until enough are
    labelled), and the labels ppi-python's power analysis says an interval of the planned width needs."""

    candidate: str
    metric: str
    scope: str
    #: Queries in the scope, and those with a hole that can move their delta.
    n: int
    open: int
    labelled: int
    #: The interval (method, delta, low, high, labelled, labels, ...); None until enough are labelled.
    interval: Interval | None
    #: ppi-python's power analysis: the labels an interval of `plan.width` needs.
    plan: LabelPlan
    #: What the planned width is: "zero" (twice the scored delta: it would tell that delta from 0) or
    #: "today" (the scored delta's bootstrap interval, when that already includes 0).
    plan_target: str


@dataclass
class HoleIntervals:
    """The intervals step's evidence: the challenger, the predictor, the sample (query ids in order)."""

    challenger: str | None
    predictor: str
    sample: list[str]
    rows: list[HoleInterval] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: Mapping[str, object], source: str = "study.json") -> HoleIntervals:
        """The intervals step's intervals.json (or study.json's `intervals`) read back: its `pairs` (the
        label page's) left out, no challenger where the step had no contrast to draw."""
        return from_json(cls, {"challenger": None, **{k: v for k, v in data.items() if k != "pairs"}}, source, SCHEMA)


@dataclass
class KappaBetween:
    """Cohen's kappa (relevance binary) between two assessors on the pairs both graded."""

    a: str
    b: str
    #: None when one side grades every shared pair alike (then `why` says so).
    kappa: float | None
    n: int
    interval: list[float] | None
    agreed: int | None = None
    why: str | None = None


@dataclass
class KappaAgainst:
    """Cohen's kappa (relevance binary) of one assessor against other labels (a model judge's, the
    user's qrels) on the pairs both graded."""

    assessor: str
    kappa: float | None
    n: int
    interval: list[float] | None
    agreed: int | None = None
    why: str | None = None


@dataclass
class PeopleSummary:
    """People's labels: grades per assessor, how many joined the judged set, and Cohen's kappa between
    every two assessors, of each against a model judge and of each against the user's qrels."""

    assessors: dict[str, int]
    added: int | None = None
    between: list[KappaBetween] = field(default_factory=list)
    against_model: list[KappaAgainst] = field(default_factory=list)
    #: Each assessor against the user's qrels, on the judged pairs the label page mixed in.
    against_qrels: list[KappaAgainst] = field(default_factory=list)
    #: Assessor -> pairs two of their files grade differently (the most recent grade kept).
    conflicts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """As study.json holds it: a kappa row's `why` only where kappa is undefined."""
        def row(kappa: KappaBetween | KappaAgainst) -> dict[str, object]:
            return {k: v for k, v in dataclasses.asdict(kappa).items() if k != "why" or v is not None}

        return {"assessors": self.assessors, "added": self.added, "between": [row(p) for p in self.between],
                "against_model": [row(p) for p in self.against_model],
                "against_qrels": [row(p) for p in self.against_qrels], "conflicts": self.conflicts}


@dataclass
class Verdict:
    """The recommendation for one scope, by the written rules."""

    scope: str
    system: str
    verdict: str  # "adopt", "do not adopt", "inconclusive"
    because: str
    trades: str = ""
    #: True when the study's own evidence (judge agreement, the pairs no person labelled) does not
    #: support a firm verdict; `provisional_why` says what holds it back.
    provisional: bool = False
    #: Per-verdict evidence a later step adds (hole bounds); None until it does.
    bounds: HoleBounds | None = None
    provisional_why: str = ""


@dataclass
class SimplerComparison:
    """The best candidate against one simpler system, on the decision metrics, overall (paired, Holm
    over every such pair's rows: one family)."""

    best: str
    simpler: str
    #: Legs the best has and the simpler one lacks.
    extra_legs: list[str]
    #: The simpler system against the best (delta = simpler - best), one row per decision metric.
    rows: list[HeadToHead]
    #: True when the best earns its extra complexity over this one by the printed rule.
    richer_earns: bool = False
    #: True when a `[study] margin` is set and the simpler one is within it on every decision metric.
    non_inferior: bool | None = None
    #: Per-comparison evidence a later step adds (hole bounds); None until it does.
    bounds: HoleBounds | None = None


@dataclass
class Recommendation:
    """Which system to run, by the simplicity rule (`rules.SIMPLICITY_RULES`), and what the legs buy."""

    system: str
    because: str
    #: The systems in order of simplicity (the baseline first), as the rule walked them.
    order: list[str]
    comparisons: list[SimplerComparison] = field(default_factory=list)
    #: "dense", "graph" -> one sentence: what that leg buys over the best candidate without it.
    legs: dict[str, str] = field(default_factory=dict)
    margin: float | None = None
    provisional: bool = False
    #: Why the verdict is provisional (empty when it is not).
    provisional_why: str = ""


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
    corpus: CorpusSummary
    strata: list[StratumSummary]
    labels: LabelsSummary
    agreement: AgreementSummary
    systems: list[SystemSummary]
    head_to_head: list[HeadToHead]
    ablation: AblationSummary
    sweep: SweepSummary
    production: ProductionSummary
    verdicts: list[Verdict] = field(default_factory=list)
    recommendation: Recommendation | None = None
    threats: list[Threat] = field(default_factory=list)
    #: Detectors that ran and found nothing.
    clear: list[str] = field(default_factory=list)
    #: Step -> the single recall-kit command that reproduces its numbers.
    commands: dict[str, str] = field(default_factory=dict)
    #: What the unjudged pairs could do to each decision row (the bounds step; docs/labelling.md).
    bounds: list[PairedBounds] = field(default_factory=list)
    #: People's labels (`recall-kit label`'s files), None when nobody labelled.
    people: PeopleSummary | None = None
    #: Hole-aware intervals of the challenger's decision rows (the intervals step), None before it ran.
    intervals: HoleIntervals | None = None
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

    def to_dict(self) -> dict[str, object]:
        data = dataclasses.asdict(self)
        data["people"] = None if self.people is None else self.people.to_dict()
        return {"schema": SCHEMA, **data}

    @classmethod
    def from_dict(cls, data: Mapping[str, object], source: str = "study.json") -> StudyResult:
        """study.json read back; a key it does not declare is one error naming the key (`from_json`)."""
        return from_json(cls, {key: value for key, value in data.items() if key != "schema"}, source, SCHEMA)
